// Readable rendering of a Topology: CPU/NUMA summary, a GPU/NIC matrix in the shape
// of `nvidia-smi topo -m`, NIC and RDMA tables, warnings. Returns text; never prints.
#include <map>
#include <set>
#include <sstream>

#include "p2pscope/table.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "topo/detail.hpp"

namespace p2pscope::topo {
namespace {
std::string num(long long v) { return v < 0 ? "?" : std::to_string(v); }

std::string cpu_summary(const Topology& t) {
  std::ostringstream o;
  std::vector<int> ids;
  std::set<int> packages;
  std::set<std::pair<int, int>> cores;
  std::size_t max_threads = 0;
  for (const auto& c : t.cpus) {
    ids.push_back(c.id);
    if (c.package >= 0) packages.insert(c.package);
    if (c.core >= 0) cores.insert({c.package, c.core});
    max_threads = std::max(max_threads, c.siblings.size());
  }
  o << "Host " << (t.hostname.empty() ? "?" : t.hostname) << ": " << t.cpus.size() << " CPUs online (" << format_cpulist(ids)
    << "), " << packages.size() << " package(s), " << cores.size() << " core(s), " << max_threads << " thread(s) per core\n";
  for (const auto& n : t.numa_nodes) {
    std::vector<int> primary, secondary;  // first thread of each core, then its siblings
    for (int c : n.cpus) {
      int first = c;
      for (const auto& cpu : t.cpus)
        if (cpu.id == c && !cpu.siblings.empty()) first = cpu.siblings.front();
      (first == c ? primary : secondary).push_back(c);
    }
    o << "  NUMA node " << n.id << ": CPUs " << format_cpulist(n.cpus) << "  (" << n.cpus.size() << " CPUs";
    if (!secondary.empty()) o << "; cores " << format_cpulist(primary) << ", hyperthreads " << format_cpulist(secondary);
    o << ")\n";
  }
  return o.str();
}

std::string matrix(const Topology& t) {
  std::vector<const Nic*> nics;
  for (const auto& n : t.nics)
    if (!n.is_virtual()) nics.push_back(&n);
  if (t.gpus.empty() && nics.empty()) return "No GPU and no PCI NIC: no connection matrix.\n";
  std::vector<std::string> labels, pcis;
  std::vector<int> numa;
  std::vector<std::vector<int>> cpus;
  for (const auto& g : t.gpus) {
    labels.push_back("GPU" + std::to_string(g.index));
    pcis.push_back(g.pci);
    numa.push_back(g.numa);
    const PciDevice* p = t.find_pci(g.pci);
    cpus.push_back(p ? p->local_cpus : std::vector<int>{});
  }
  for (std::size_t i = 0; i < nics.size(); ++i) {
    labels.push_back("NIC" + std::to_string(i));
    pcis.push_back(nics[i]->pci);
    numa.push_back(nics[i]->numa);
    const PciDevice* p = t.find_pci(nics[i]->pci);
    cpus.push_back(p ? p->local_cpus : std::vector<int>{});
  }
  std::vector<std::string> head{""};
  head.insert(head.end(), labels.begin(), labels.end());
  head.push_back("CPU Affinity");
  head.push_back("NUMA Affinity");
  Table tab(head);
  for (std::size_t r = 0; r < labels.size(); ++r) {
    std::vector<std::string> row{labels[r]};
    for (std::size_t c = 0; c < labels.size(); ++c)
      row.push_back(r < t.gpus.size() && c < t.gpus.size() ? gpu_link_class(t, static_cast<int>(r), static_cast<int>(c))
                                                           : path_class(t, pcis[r], pcis[c]));
    row.push_back(cpus[r].empty() ? "N/A" : format_cpulist(cpus[r]));
    row.push_back(numa[r] < 0 ? "N/A" : std::to_string(numa[r]));
    tab.add_row(row);
  }
  std::ostringstream o;
  o << tab.to_text();
  for (const auto& g : t.gpus) o << "  GPU" << g.index << ": " << g.pci << " " << g.name << "\n";
  for (std::size_t i = 0; i < nics.size(); ++i) o << "  NIC" << i << ": " << nics[i]->name << " (" << nics[i]->pci << ")\n";
  if (t.gpus.size() > 1)
    o << "  GPU-GPU links: " << (t.gpu_links_source.empty() ? "unknown (not in capture): ? = NVLink or PCIe, sysfs cannot tell"
                                                              : "from " + t.gpu_links_source)
      << "\n";
  o << "  X = self, NV# = # NVLinks, PIX = one PCIe switch, PXB = several switches, PHB = through the host bridge,\n"
       "  NODE = between host bridges of one NUMA node, SYS = across NUMA nodes\n";
  return o.str();
}

std::string nic_table(const Topology& t) {
  Table tab({"NIC", "PCI", "NUMA", "state", "speed", "MTU", "rx/tx queues", "IRQs", "allowed CPUs", "effective CPUs",
             "counted on CPUs", "off node"});
  auto list = [](const std::vector<int>& v, const char* none) { return v.empty() ? std::string(none) : format_cpulist(v); };
  for (const auto& n : t.nics) {
    const IrqPlacement p = irq_placement(t, n);
    std::string verdict = "-";
    if (p.count > 0 && n.numa >= 0) {
      const double share = p.off_node_share();
      const int pct = static_cast<int>(share * 100 + 0.5);
      verdict = share > kOffNodeThreshold ? "NO: " + std::to_string(pct) + "%" : std::to_string(pct) + "%";
    }
    const std::string queues =
        n.rx_queues < 0 ? "?" : std::to_string(n.rx_queues) + "/" + std::to_string(n.tx_queues);
    tab.add_row({n.name, n.pci.empty() ? "virtual" : n.pci, num(n.numa), n.state.empty() ? "?" : n.state,
                 n.speed_mbps < 0 ? "?" : std::to_string(n.speed_mbps) + " Mb/s", num(n.mtu), queues,
                 std::to_string(n.irqs.size()), list(p.allowed, n.irqs.empty() ? "-" : "?"),
                 list(p.effective, n.irqs.empty() ? "-" : "?"), list(p.counted, "-"), verdict});
  }
  return tab.to_text();
}

std::string rdma_table(const Topology& t) {
  if (t.rdma.empty()) return "  none (/sys/class/infiniband is empty or absent)\n";
  Table tab({"device", "port", "PCI", "NUMA", "state", "link layer", "rate", "netdevs", "GIDs", "RoCE v2 IPv4 GID"});
  for (const auto& d : t.rdma)
    for (const auto& p : d.ports) {
      std::string v2 = "-";
      for (const auto& g : p.gids)
        if (g.type == "RoCE v2" && g.ipv4_mapped && v2 == "-") v2 = std::to_string(g.index) + " (" + g.ipv4 + ")";
      const std::string nd = join(d.netdevs, ",");
      tab.add_row({d.name, std::to_string(p.port), d.pci, num(d.numa), p.state, p.link_layer, p.rate, nd,
                   std::to_string(p.gids.size()), v2});
    }
  return tab.to_text();
}
}  // namespace

std::string to_text(const Topology& t) {
  std::ostringstream o;
  o << cpu_summary(t) << "\nGPU/NIC connections:\n" << matrix(t) << "\nNICs (allowed = smp_affinity, effective = effective_affinity, counted = CPUs whose "
       "/proc/interrupts counters served them; off node = share of those counts on another node, NO above "
    << static_cast<int>(kOffNodeThreshold * 100) << "%; ? = not captured):\n"
    << nic_table(t) << "\nRDMA:\n" << rdma_table(t);
  if (!t.warnings.empty()) {
    o << "\nWarnings:\n";
    for (const auto& w : t.warnings) o << "  " << w << "\n";
  }
  return o.str();
}

}  // namespace p2pscope::topo
