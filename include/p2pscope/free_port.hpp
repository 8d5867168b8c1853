#pragma once
// A TCP port of this host's address `ipv4` that nobody listens on now, for a child process
// that must listen on a port its peer is told in advance (an NCCL pair's rendezvous).
#include <string>

namespace p2pscope {

// Picked at random below the kernel's ephemeral range, not by binding port 0: a port the
// kernel handed out for a bind to 0 and took back is the next one it gives any socket
// that connects, so another connection could take it before the child binds it. Only
// another such random pick can collide. Error when `ipv4` is no address of this host or
// no port can be had.
int free_port_on(const std::string& ipv4);

}  // namespace p2pscope
