// NICs from /sys/class/net with their IRQs. An IRQ belongs to a NIC when it is in the
// PCI device's msi_irqs, when /proc/interrupts names the PCI address (chip column
// "PCI-MSIX-0000:00:03.0" or action "mlx5_comp0@pci:0000:17:00.0"), or when the
// action is named after the interface ("eth0-TxRx-3"). Drivers differ in which of
// these they leave, so all are unioned.
#include <algorithm>
#include <map>
#include <set>

#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "topo/detail.hpp"

namespace p2pscope::topo::detail {
namespace {
std::vector<int> irq_affinity(const FsRoot& fs, int irq) {
  const std::string dir = "/proc/irq/" + std::to_string(irq) + "/";
  if (auto list = read_cpulist(fs, dir + "smp_affinity_list")) return *list;
  if (auto mask = fs.read_line(dir + "smp_affinity")) {
    try {
      // A crafted tree's huge mask is refused, not expanded: capped at the tree's CPUs,
      // rounded up to whole 32-bit words (a captured tree may lack its offline CPUs).
      return parse_cpumask(*mask, (fs.cpu_limit() + 31) / 32 * 32);
    } catch (const Error&) {
    }
  }
  return {};
}

std::vector<int> irq_effective(const FsRoot& fs, int irq) {
  return read_cpulist(fs, "/proc/irq/" + std::to_string(irq) + "/effective_affinity_list").value_or(std::vector<int>{});
}

// /proc/net/route: "Iface Destination Gateway Flags ..." with hex fields; the default
// route has destination 00000000 and mask 00000000. The first one wins, as the kernel's.
void read_default_route(const FsRoot& fs, Topology& t) {
  const auto text = fs.read("/proc/net/route");
  if (!text) return;
  t.route_known = true;
  for (const std::string_view line : split_lines(*text)) {
    const auto f = split_words(line);
    if (f.size() >= 8 && f[1] == "00000000" && f[7] == "00000000") {
      t.default_route_nic = std::string(f[0]);
      return;
    }
  }
}

bool names_nic(const Irq& irq, const std::string& nic, const std::string& pci) {
  if (!pci.empty() && (irq.chip.find(pci) != std::string::npos || irq.name.find(pci) != std::string::npos)) return true;
  // "eth0-TxRx-3", "eth0-rx-0", or exactly "eth0"; "eth1-" must not match "eth10-".
  return irq.name == nic || irq.name.rfind(nic + "-", 0) == 0;
}
}  // namespace

void discover_nics(const FsRoot& fs, Topology& t) {
  // Every IRQ's affinity, so consumers of t.interrupts (irq snapshot) see it too.
  std::map<int, const Irq*> by_number;
  for (auto& irq : t.interrupts.irqs) {
    irq.affinity = irq_affinity(fs, irq.irq);
    irq.effective = irq_effective(fs, irq.irq);
    by_number[irq.irq] = &irq;
  }
  const int only_node = t.numa_nodes.size() == 1 ? t.numa_nodes[0].id : -1;

  for (const auto& name : fs.list("/sys/class/net")) {
    const std::string dir = "/sys/class/net/" + name + "/";
    if (!fs.is_dir(dir)) continue;  // bonding_masters and other plain files
    Nic n;
    n.name = name;
    if (const auto real = fs.resolve("/sys/class/net/" + name)) n.pci = nearest_pci(*real);
    if (const PciDevice* p = n.pci.empty() ? nullptr : t.find_pci(n.pci)) n.numa = p->numa;
    else if (!n.pci.empty()) n.numa = static_cast<int>(read_int_or(fs, "/sys/bus/pci/devices/" + n.pci + "/numa_node"));
    if (n.numa < 0 && !n.pci.empty()) n.numa = only_node;
    n.mac = read_text(fs, dir + "address");
    n.mtu = static_cast<int>(read_int_or(fs, dir + "mtu"));
    n.speed_mbps = read_int_or(fs, dir + "speed");
    if (n.speed_mbps < 0) n.speed_mbps = -1;  // the kernel writes -1 (or fails) for unknown
    n.state = read_text(fs, dir + "operstate");
    if (fs.is_dir(dir + "queues")) n.rx_queues = n.tx_queues = 0;  // else unknown (-1)
    for (const auto& q : fs.list(dir + "queues")) {
      if (q.rfind("rx-", 0) == 0) ++n.rx_queues;
      if (q.rfind("tx-", 0) == 0) ++n.tx_queues;
    }

    std::set<int> irqs;
    if (!n.pci.empty())
      for (const auto& e : fs.list("/sys/bus/pci/devices/" + n.pci + "/msi_irqs"))
        if (const auto irq = parse_id(e)) irqs.insert(*irq);
    for (const auto& irq : t.interrupts.irqs)
      if (names_nic(irq, n.name, n.pci)) irqs.insert(irq.irq);
    for (int number : irqs) {
      Irq irq;
      if (auto it = by_number.find(number); it != by_number.end()) {
        irq = *it->second;
      } else {  // in msi_irqs but not (yet) in /proc/interrupts
        irq.irq = number;
        irq.affinity = irq_affinity(fs, number);
        irq.effective = irq_effective(fs, number);
      }
      n.irqs.push_back(std::move(irq));
    }
    t.nics.push_back(std::move(n));
  }
  read_default_route(fs, t);
}

}  // namespace p2pscope::topo::detail
