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
// Fast Socket's handle: union socketAddress (28 bytes: a sockaddr_in6 is the largest),
// then int num_socks, int num_threads.
constexpr std::size_t kFastSocketSocksAt = 28, kFastSocketThreadsAt = 32;

std::string ip_text(const in_addr& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

bool is_ip(const in_addr& a, const std::string& text) {
  in_addr b{};
  return inet_pton(AF_INET, text.c_str(), &b) == 1 && a.s_addr == b.s_addr;
}

bool allowed(const in_addr& a, const HandlePolicy& p) {
  const std::uint32_t host = ntohl(a.s_addr);
  if (host == 0 || host == 0xffffffffu) return false;
  if (is_ip(a, p.peer_ip)) return true;
  return std::any_of(p.vouched.begin(), p.vouched.end(), [&](const std::string& v) { return is_ip(a, v); });
}

std::string whose(const HandlePolicy& p) {
  std::string s = "neither the address the control connection came from (" + p.peer_ip + ") nor ";
  if (!p.authenticated)
    return s + "an address the peer vouched for (a peer's other addresses are taken only from a peer that proved "
               "P2PSCOPE_TOKEN: set the same one on both sides)";
  return s + "one of the " + std::to_string(p.vouched.size()) + " the peer vouched for in its authenticated frame";
}

// The address at `off`, if the bytes there are an IPv4 or IPv6 socket address.
std::string check_addr(const NetHandle& h, std::size_t off, const HandlePolicy& p, bool must) {
  std::uint16_t family;
  std::memcpy(&family, h.data() + off, sizeof family);
  if (family == AF_INET) {
    sockaddr_in a;
    std::memcpy(&a, h.data() + off, sizeof a);
    if (!allowed(a.sin_addr, p))
      return "it names " + ip_text(a.sin_addr) + ":" + std::to_string(ntohs(a.sin_port)) + ", " + whose(p);
    if (a.sin_port == 0) return "it names port 0";
    return "";
  }
  if (family == AF_INET6) {
    sockaddr_in6 a;
    std::memcpy(&a, h.data() + off, sizeof a);
    in_addr v4{};
    std::memcpy(&v4, a.sin6_addr.s6_addr + 12, 4);
    if (!IN6_IS_ADDR_V4MAPPED(&a.sin6_addr) || !allowed(v4, p))
      return "it names an IPv6 address, " + whose(p);
    return "";
  }
  return must ? "it names no IPv4 address (family " + std::to_string(family) + ")" : "";
}

std::string check_count(const NetHandle& h, std::size_t off, const char* what, int max) {
  std::int32_t v;
  std::memcpy(&v, h.data() + off, sizeof v);
  if (v >= 1 && v <= max) return "";
  return "its " + std::string(what) + " is " + std::to_string(v) + ", outside 1-" + std::to_string(max) +
         " (Fast Socket indexes arrays of " + std::to_string(max) + " with it)";
}

}  // namespace

std::vector<std::string> ipv4_of(const std::vector<std::string>& ifnames) {
  std::vector<std::string> out;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return out;
  for (const ifaddrs* i = all; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (std::find(ifnames.begin(), ifnames.end(), i->ifa_name) == ifnames.end()) continue;
    sockaddr_in a;
    std::memcpy(&a, i->ifa_addr, sizeof a);
    const std::string ip = ip_text(a.sin_addr);
    if (std::find(out.begin(), out.end(), ip) == out.end()) out.push_back(ip);
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
  } else if (policy.plugin == "FastSocket") {
    why = check_addr(h, 0, policy, true);
    if (why.empty()) why = check_count(h, kFastSocketSocksAt, "socket count (num_socks)", kFastSocketMaxSockets);
    if (why.empty()) why = check_count(h, kFastSocketThreadsAt, "thread count (num_threads)", kFastSocketMaxThreads);
  } else {
    why = check_addr(h, 0, policy, false);
  }
  return why.empty() ? "" : "the peer's plugin handle is refused: " + why;
}

}  // namespace p2pscope::net
