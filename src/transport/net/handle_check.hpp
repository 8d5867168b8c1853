#pragma once
// A peer's plugin listen handle is data from that peer, never authority: before bench
// net hands one to a plugin's connect, it checks what it can read in it. Plugins lay
// their handles out as they like; the layouts checked are the reference plugin's
// (magic "P2PSREF1", then a sockaddr_in), Fast Socket's (the address, then its socket
// and thread counts, which its connect uses as array bounds unchecked), and the one
// NCCL's socket and IB transports and the other plugins built on them share: the
// handle begins with the address.
#include <cstdint>
#include <string>
#include <vector>

#include "p2pscope/netplugin.hpp"

namespace p2pscope::net {

// Where a peer's handle may lead: the address its control connection came from, or an
// address that peer vouched for in a frame the shared secret authenticated (its other
// NICs). Never elsewhere: a handle is no way to make this side connect to, or send to,
// another machine, not even one on this side's own subnets (a host the stranger itself
// could not reach: issue 43 item 3).
struct HandlePolicy {
  std::string peer_ip;                // dotted IPv4 of the control connection's peer
  std::vector<std::string> vouched;   // dotted IPv4; empty unless the session was authenticated
  std::string plugin;                 // the plugin's name: picks the layout ("FastSocket")
  bool authenticated = false;         // for the refusal's hint only
};

// Fast Socket's bounds (MAX_SOCKETS, MAX_THREADS in google/nccl-fastsocket's
// net_fastsocket.cc): its comm holds arrays of these many, indexed by the handle's counts.
inline constexpr int kFastSocketMaxSockets = 32;
inline constexpr int kFastSocketMaxThreads = 16;

// The IPv4 addresses of the named interfaces (getifaddrs): what this side's plugin
// devices listen on, which it vouches for to its peer.
std::vector<std::string> ipv4_of(const std::vector<std::string>& ifnames);

// "" when the handle may be connected to; else why not.
std::string check_peer_handle(const NetHandle& h, const HandlePolicy& policy);

}  // namespace p2pscope::net
