// The `p2pscope topo --format json` document (metadata is added by the command).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "topo/detail.hpp"

namespace p2pscope::topo {
namespace {
nlohmann::json irq_json(const Irq& i) {
  return {{"irq", i.irq},
          {"chip", i.chip},
          {"name", i.name},
          {"affinity", i.affinity},
          {"effective_affinity", i.effective.empty() ? nlohmann::json() : nlohmann::json(i.effective)},
          {"count", i.total()}};
}
nlohmann::json placement(const Topology& t, const Nic& n) {
  const IrqPlacement p = irq_placement(t, n);
  auto cpus = [](const std::vector<int>& v) { return v.empty() ? nlohmann::json() : nlohmann::json(v); };
  return {{"allowed_cpus", cpus(p.allowed)},
          {"effective_cpus", cpus(p.effective)},
          {"counted_cpus", p.counted},
          {"count", p.count},
          {"off_node_count", p.off_node_count},
          {"off_node_share", p.count ? nlohmann::json(p.off_node_share()) : nlohmann::json()}};
}
}  // namespace

nlohmann::json to_json(const Topology& t) {
  using nlohmann::json;
  json j;
  j["hostname"] = t.hostname;
  auto& cpus = j["cpus"] = json::array();
  for (const auto& c : t.cpus)
    cpus.push_back({{"id", c.id}, {"core", c.core}, {"package", c.package}, {"numa", c.numa}, {"siblings", c.siblings}});
  auto& nodes = j["numa_nodes"] = json::array();
  for (const auto& n : t.numa_nodes) nodes.push_back({{"id", n.id}, {"cpus", n.cpus}});
  auto& pci = j["pci"] = json::array();
  for (const auto& p : t.pci) {
    char cls[16], ids[16];
    std::snprintf(cls, sizeof cls, "0x%06x", p.class_code);
    std::snprintf(ids, sizeof ids, "%04x:%04x", p.vendor, p.device);
    pci.push_back({{"address", p.address}, {"class", cls}, {"id", ids}, {"numa", p.numa}, {"local_cpus", p.local_cpus},
                   {"link_speed", p.link_speed}, {"link_width", p.link_width}, {"bridges", p.bridges},
                   {"root_complex", p.root_complex}});
  }
  auto& gpus = j["gpus"] = json::array();
  for (const auto& g : t.gpus) {
    const PciDevice* p = t.find_pci(g.pci);
    gpus.push_back({{"index", g.index}, {"pci", g.pci}, {"numa", g.numa}, {"name", g.name},
                    {"local_cpus", p ? p->local_cpus : std::vector<int>{}}, {"cuda_index", g.cuda_index},
                    {"memory_bytes", g.memory_bytes}, {"sm_count", g.sm_count}, {"uuid", g.uuid},
                    {"temperature_c", g.temperature_c}, {"sm_clock_mhz", g.sm_clock_mhz}, {"mem_clock_mhz", g.mem_clock_mhz}});
  }
  auto& nics = j["nics"] = json::array();
  for (const auto& n : t.nics) {
    json irqs = json::array();
    for (const auto& i : n.irqs) irqs.push_back(irq_json(i));
    nics.push_back({{"name", n.name}, {"pci", n.pci}, {"virtual", n.is_virtual()}, {"numa", n.numa}, {"mac", n.mac},
                    {"mtu", n.mtu}, {"speed_mbps", n.speed_mbps}, {"state", n.state},
                    {"queues", n.rx_queues < 0 ? json() : json{{"rx", n.rx_queues}, {"tx", n.tx_queues}}},
                    {"irqs", std::move(irqs)}, {"irq_placement", placement(t, n)}});
  }
  auto& rdma = j["rdma"] = json::array();
  for (const auto& d : t.rdma) {
    json ports = json::array();
    for (const auto& p : d.ports) {
      json gids = json::array();
      for (const auto& g : p.gids)
        gids.push_back({{"index", g.index}, {"gid", g.gid}, {"type", g.type}, {"netdev", g.netdev},
                        {"ipv4_mapped", g.ipv4_mapped}, {"ipv4", g.ipv4}});
      ports.push_back({{"port", p.port}, {"state", p.state}, {"link_layer", p.link_layer}, {"rate", p.rate},
                       {"gids", std::move(gids)}});
    }
    rdma.push_back({{"name", d.name}, {"pci", d.pci}, {"numa", d.numa}, {"netdevs", d.netdevs}, {"ports", std::move(ports)}});
  }
  j["nvlinks"] = t.nvlinks;
  j["gpu_links_source"] = t.gpu_links_source.empty() ? "unknown (not in capture)" : t.gpu_links_source;
  j["default_route_nic"] = t.route_known ? json(t.default_route_nic) : json();
  j["gpu_gpu"] = gpu_gpu_matrix(t);
  j["gpu_nic"] = gpu_nic_matrix(t);
  j["interrupts"] = {{"cpu_columns", t.interrupts.cpu_columns},
                     {"irq_lines", t.interrupts.irqs.size()},
                     {"malformed_lines", t.interrupts.malformed_lines}};
  j["warnings"] = t.warnings;
  return j;
}

}  // namespace p2pscope::topo
