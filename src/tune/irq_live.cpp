// Snapshots of a machine (live or captured tree): the only part of the IRQ code
// that runs discovery, kept apart so pure tests link without it.
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tune {

IrqSnapshot take_snapshot(const FsRoot& fs) {
  topo::DiscoverOptions opts;
  opts.use_nvml = false;
  const topo::Topology t = topo::discover(fs, opts);
  IrqSnapshot s = snapshot_from_topology(t, realtime_ns());
  for (auto& r : s.irqs) {
    if (!r.affinity.empty()) continue;
    const auto list = fs.read_line("/proc/irq/" + std::to_string(r.irq) + "/smp_affinity_list");
    if (!list) continue;
    try {
      r.affinity = parse_cpulist(*list);
    } catch (const UsageError&) {
      s.warnings.push_back("IRQ " + std::to_string(r.irq) + ": unreadable smp_affinity_list '" + *list + "'");
    }
  }
  return s;
}

}  // namespace p2pscope::tune
