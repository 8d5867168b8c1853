// RDMA devices from /sys/class/infiniband: ports, state, link layer, rate, and the
// non-zero GID entries with their type (gid_attrs/types) and netdev (gid_attrs/ndevs).
#include <algorithm>
#include <cstdio>
#include <set>

#include "topo/detail.hpp"

namespace p2pscope::topo::detail {
namespace {
bool is_zero_gid(const std::string& g) {
  return std::all_of(g.begin(), g.end(), [](char c) { return c == '0' || c == ':'; });
}

// The kernel writes "IB/RoCE v1" for RoCE v1 on Ethernet and "RoCE v2"; an IB port
// has the type "IB/RoCE v1" too, so the link layer decides which it is.
std::string gid_type(const std::string& raw, const std::string& link_layer) {
  if (raw.find("v2") != std::string::npos) return "RoCE v2";
  if (raw.empty()) return link_layer == "InfiniBand" ? "IB" : "";
  return link_layer == "Ethernet" ? "RoCE v1" : "IB";
}
}  // namespace

bool parse_ipv4_mapped(const std::string& gid, std::string* dotted) {
  // ::ffff:a.b.c.d written as 8 groups: 0000:0000:0000:0000:0000:ffff:AABB:CCDD
  unsigned g[8];
  char tail = 0;
  if (std::sscanf(gid.c_str(), "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x%c", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6], &g[7], &tail) != 8)
    return false;
  if (g[0] || g[1] || g[2] || g[3] || g[4] || g[5] != 0xffff) return false;
  if (dotted)
    *dotted = std::to_string(g[6] >> 8) + "." + std::to_string(g[6] & 0xff) + "." + std::to_string(g[7] >> 8) + "." +
              std::to_string(g[7] & 0xff);
  return true;
}

void discover_rdma(const FsRoot& fs, Topology& t) {
  const int only_node = t.numa_nodes.size() == 1 ? t.numa_nodes[0].id : -1;
  for (const auto& name : fs.list("/sys/class/infiniband")) {
    const std::string dir = "/sys/class/infiniband/" + name + "/";
    RdmaDevice d;
    d.name = name;
    if (const auto real = fs.resolve("/sys/class/infiniband/" + name)) d.pci = nearest_pci(*real);
    if (const PciDevice* p = d.pci.empty() ? nullptr : t.find_pci(d.pci)) d.numa = p->numa;
    if (d.numa < 0 && !d.pci.empty()) d.numa = only_node;
    std::set<std::string> netdevs;
    for (const auto& n : fs.list(dir + "device/net")) netdevs.insert(n);
    for (const auto& p : fs.list(dir + "ports")) {
      const auto port_number = parse_id(p);
      if (!port_number) continue;
      const std::string pd = dir + "ports/" + p + "/";
      RdmaPort port;
      port.port = *port_number;
      port.state = read_text(fs, pd + "state");
      port.link_layer = read_text(fs, pd + "link_layer");
      port.rate = read_text(fs, pd + "rate");
      auto entries = fs.list(pd + "gids");
      std::vector<int> idx;
      for (const auto& e : entries)
        if (const auto i = parse_id(e)) idx.push_back(*i);
      std::sort(idx.begin(), idx.end());
      for (int i : idx) {
        const std::string n = std::to_string(i);
        Gid g;
        g.index = i;
        g.gid = read_text(fs, pd + "gids/" + n);
        if (g.gid.empty() || is_zero_gid(g.gid)) continue;
        g.type = gid_type(read_text(fs, pd + "gid_attrs/types/" + n), port.link_layer);
        g.netdev = read_text(fs, pd + "gid_attrs/ndevs/" + n);
        if (!g.netdev.empty()) netdevs.insert(g.netdev);
        g.ipv4_mapped = parse_ipv4_mapped(g.gid, &g.ipv4);
        port.gids.push_back(std::move(g));
      }
      d.ports.push_back(std::move(port));
    }
    std::sort(d.ports.begin(), d.ports.end(), [](const auto& a, const auto& b) { return a.port < b.port; });
    d.netdevs.assign(netdevs.begin(), netdevs.end());
    t.rdma.push_back(std::move(d));
  }
}

}  // namespace p2pscope::topo::detail
