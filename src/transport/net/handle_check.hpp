#pragma once
// A peer's plugin listen handle is data from that peer, never authority: before bench
// net hands one to a plugin's connect, it checks what it can read in it. Plugins lay
// their handles out as they like; the layouts checked are the reference plugin's
// (magic "P2PSREF1", then a sockaddr_in) and the one NCCL's socket and IB transports and
// the plugins built on them (Fast Socket) share: the handle begins with the address.
#include <cstdint>
#include <string>
#include <vector>

#include "p2pscope/netplugin.hpp"

namespace p2pscope::net {

// Where a peer's handle may lead: the address its control connection came from, or a
// host on the IPv4 subnet of one of this side's plugin devices (the peer's other NICs,
// as a multi-NIC peer's handles name them). Never elsewhere: a handle is no way to make
// this side connect to, or send to, a third machine on another network.
struct HandlePolicy {
  std::string peer_ip;  // dotted IPv4
  struct Net {
    std::uint32_t addr, mask;  // network byte order
  };
  std::vector<Net> local_nets;
};

// The IPv4 subnets of the named interfaces (getifaddrs), for HandlePolicy::local_nets.
std::vector<HandlePolicy::Net> subnets_of(const std::vector<std::string>& ifnames);

// "" when the handle may be connected to; else why not.
std::string check_peer_handle(const NetHandle& h, const HandlePolicy& policy);

}  // namespace p2pscope::net
