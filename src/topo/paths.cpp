// Connection classes between two PCI devices, in nvidia-smi / NCCL words.
// The bridge chain from the root is [root port, switch up, switch down, up, down...]:
// the root port belongs to the host bridge, and each (upstream, downstream) pair is
// one PCIe switch, named by its upstream port, as NCCL counts it.
#include <algorithm>
#include <set>

#include "topo/detail.hpp"

namespace p2pscope::topo {
namespace {
struct Place {
  std::string root_complex;
  std::string root_port;              // "" when the device sits on the root bus
  std::vector<std::string> switches;  // upstream ports, root side first
  int numa = -1;
};

Place place_of(const PciDevice& d) {
  Place p;
  p.root_complex = d.root_complex;
  p.numa = d.numa;
  std::vector<std::string> chain(d.bridges.rbegin(), d.bridges.rend());
  if (!chain.empty()) p.root_port = chain[0];
  for (std::size_t i = 1; i < chain.size(); i += 2) p.switches.push_back(chain[i]);
  return p;
}

int gpu_index(const Topology& t, const std::string& pci) {
  for (const auto& g : t.gpus)
    if (g.pci == pci) return g.index;
  return -1;
}
}  // namespace

std::string path_class(const Topology& t, const std::string& pci_a, const std::string& pci_b) {
  if (pci_a.empty() || pci_b.empty()) return "-";
  if (pci_a == pci_b) return "X";
  const int ga = gpu_index(t, pci_a), gb = gpu_index(t, pci_b);
  if (ga >= 0 && gb >= 0 && static_cast<std::size_t>(std::max(ga, gb)) < t.nvlinks.size()) {
    const int links = t.nvlinks[ga][gb];
    if (links > 0) return "NV" + std::to_string(links);
  }
  const PciDevice* da = t.find_pci(pci_a);
  const PciDevice* db = t.find_pci(pci_b);
  if (!da || !db) return "SYS";  // unknown placement: assume the worst
  const Place a = place_of(*da), b = place_of(*db);
  if (a.root_complex.empty() || a.root_complex != b.root_complex) {
    // Different host bridges: one NUMA node (or a machine with one node) -> NODE.
    if (a.numa >= 0 && a.numa == b.numa) return "NODE";
    if (a.numa < 0 && b.numa < 0 && t.numa_nodes.size() <= 1) return "NODE";
    return "SYS";
  }
  if (a.root_port.empty() || a.root_port != b.root_port) return "PHB";
  return a.switches == b.switches ? "PIX" : "PXB";
}

std::string gpu_link_class(const Topology& t, int a, int b) {
  if (a < 0 || b < 0 || static_cast<std::size_t>(std::max(a, b)) >= t.gpus.size()) return "?";
  if (a == b) return "X";
  if (static_cast<std::size_t>(std::max(a, b)) < t.nvlinks.size() && t.nvlinks[a][b] > 0)
    return "NV" + std::to_string(t.nvlinks[a][b]);
  if (t.gpu_links_source.empty()) return "?";  // NVLink not known: the PCIe path may not be the link
  return path_class(t, t.gpus[a].pci, t.gpus[b].pci);
}

std::vector<std::vector<std::string>> gpu_gpu_matrix(const Topology& t) {
  std::vector<std::vector<std::string>> m;
  for (const auto& a : t.gpus) {
    m.emplace_back();
    for (const auto& b : t.gpus) m.back().push_back(gpu_link_class(t, a.index, b.index));
  }
  return m;
}

IrqPlacement irq_placement(const Topology& t, const Nic& n) {
  IrqPlacement p;
  std::set<int> allowed, effective, counted;
  for (const auto& irq : n.irqs) {
    allowed.insert(irq.affinity.begin(), irq.affinity.end());
    effective.insert(irq.effective.begin(), irq.effective.end());
    for (std::size_t i = 0; i < irq.per_cpu.size() && i < irq.cpu_columns.size(); ++i) {
      if (irq.per_cpu[i] == 0) continue;
      counted.insert(irq.cpu_columns[i]);
      p.count += irq.per_cpu[i];
      const int node = t.numa_of_cpu(irq.cpu_columns[i]);
      if (n.numa >= 0 && node >= 0 && node != n.numa) p.off_node_count += irq.per_cpu[i];
    }
  }
  p.allowed.assign(allowed.begin(), allowed.end());
  p.effective.assign(effective.begin(), effective.end());
  p.counted.assign(counted.begin(), counted.end());
  return p;
}

std::vector<std::vector<std::string>> gpu_nic_matrix(const Topology& t) {
  std::vector<std::vector<std::string>> m;
  for (const auto& g : t.gpus) {
    m.emplace_back();
    for (const auto& n : t.nics) m.back().push_back(path_class(t, g.pci, n.pci));
  }
  return m;
}

}  // namespace p2pscope::topo
