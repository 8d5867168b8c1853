#include "transport/tcp/nic.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include "p2pscope/error.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::tcp {

std::vector<NicAddr> list_ipv4_nics() {
  std::vector<NicAddr> out;
  ifaddrs* head = nullptr;
  if (getifaddrs(&head) != 0) throw_errno("getifaddrs");
  for (ifaddrs* i = head; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    out.push_back({i->ifa_name, buf});
  }
  freeifaddrs(head);
  return out;
}

NicAddr resolve_nic(const std::string& name_or_addr) {
  const auto nics = list_ipv4_nics();
  in_addr a{};
  if (inet_pton(AF_INET, name_or_addr.c_str(), &a) == 1) {
    for (const auto& n : nics)
      if (n.ipv4 == name_or_addr) return n;
    return {name_or_addr, name_or_addr};  // not local: bind() will say so
  }
  for (const auto& n : nics)
    if (n.name == name_or_addr) return n;
  const std::string have = join(nics, ", ", [](const auto& n) { return n.name + " (" + n.ipv4 + ")"; });
  throw UsageError("unknown NIC '" + name_or_addr + "' (or it has no IPv4 address); NICs here: " +
                   (have.empty() ? "none with IPv4" : have));
}

std::string nic_name_of(const std::string& ipv4) {
  for (const auto& n : list_ipv4_nics())
    if (n.ipv4 == ipv4) return n.name;
  return ipv4;
}

int nic_numa(const std::string& root, const std::string& nic) {
  try {
    const FsRoot fs(root);
    const auto v = fs.read_int("/sys/class/net/" + nic + "/device/numa_node");
    return v ? static_cast<int>(*v) : -1;
  } catch (const Error&) {
    return -1;
  }
}

std::vector<int> cpus_for(const std::vector<NicBinding>& b, const NicAddr& nic) {
  for (const auto& e : b)
    if (e.nic == nic.name || e.nic == nic.ipv4) return e.cpus;
  return {};
}

}  // namespace p2pscope::tcp
