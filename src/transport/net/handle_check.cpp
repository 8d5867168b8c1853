#include "transport/net/handle_check.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace p2pscope::net {
namespace {

constexpr std::uint64_t kRefnetMagic = 0x5032505352454631ull;  // "P2PSREF1" (netplugin_ref/refnet_state.hpp)

std::string ip_text(const in_addr& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

bool allowed(const in_addr& a, const HandlePolicy& p) {
  in_addr peer{};
  if (inet_pton(AF_INET, p.peer_ip.c_str(), &peer) == 1 && a.s_addr == peer.s_addr) return true;
  const std::uint32_t host = ntohl(a.s_addr);
  if (host == 0 || host == 0xffffffffu) return false;
  for (const auto& n : p.local_nets)
    if ((a.s_addr & n.mask) == (n.addr & n.mask) && (a.s_addr | n.mask) != 0xffffffffu) return true;
  return false;
}

// The address at `off`, if the bytes there are an IPv4 or IPv6 socket address.
std::string check_addr(const NetHandle& h, std::size_t off, const HandlePolicy& p, bool must) {
  std::uint16_t family;
  std::memcpy(&family, h.data() + off, sizeof family);
  in_addr peer{};
  inet_pton(AF_INET, p.peer_ip.c_str(), &peer);
  if (family == AF_INET) {
    sockaddr_in a;
    std::memcpy(&a, h.data() + off, sizeof a);
    if (!allowed(a.sin_addr, p))
      return "it names " + ip_text(a.sin_addr) + ":" + std::to_string(ntohs(a.sin_port)) +
             ", neither the address the control connection came from (" + p.peer_ip +
             ") nor a host on the subnet of a plugin device here";
    if (a.sin_port == 0) return "it names port 0";
    return "";
  }
  if (family == AF_INET6) {
    sockaddr_in6 a;
    std::memcpy(&a, h.data() + off, sizeof a);
    const bool mapped = IN6_IS_ADDR_V4MAPPED(&a.sin6_addr) && std::memcmp(a.sin6_addr.s6_addr + 12, &peer, 4) == 0;
    if (!mapped) return "it names an IPv6 address, not the address the control connection came from (" + p.peer_ip + ")";
    return "";
  }
  return must ? "it names no IPv4 address (family " + std::to_string(family) + ")" : "";
}

}  // namespace

std::vector<HandlePolicy::Net> subnets_of(const std::vector<std::string>& ifnames) {
  std::vector<HandlePolicy::Net> out;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return out;
  for (const ifaddrs* i = all; i; i = i->ifa_next) {
    if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET) continue;
    if (std::find(ifnames.begin(), ifnames.end(), i->ifa_name) == ifnames.end()) continue;
    sockaddr_in a, m;
    std::memcpy(&a, i->ifa_addr, sizeof a);
    std::memcpy(&m, i->ifa_netmask, sizeof m);
    out.push_back({a.sin_addr.s_addr, m.sin_addr.s_addr});
  }
  freeifaddrs(all);
  return out;
}

std::string check_peer_handle(const NetHandle& h, const HandlePolicy& policy) {
  std::uint64_t magic;
  std::memcpy(&magic, h.data(), sizeof magic);
  std::string why;
  if (magic == kRefnetMagic) {
    why = check_addr(h, 8, policy, true);
    // A listen handle carries no connect progress: stage and ticket are zero.
    if (why.empty() && !std::all_of(h.begin() + 24, h.begin() + 40, [](unsigned char c) { return c == 0; }))
      why = "it carries connection progress, which only a handle this side made may carry";
  } else {
    why = check_addr(h, 0, policy, false);
  }
  return why.empty() ? "" : "the peer's plugin handle is refused: " + why;
}

}  // namespace p2pscope::net
