// Difference of two IRQ snapshots: rates per IRQ, CPU and NIC, imbalance and the
// NUMA mismatches (a NIC's interrupts served by another node's CPUs).
#include <algorithm>
#include <set>

#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tune {
namespace {
int numa_of(const IrqSnapshot& s, int cpu) {
  auto it = s.cpu_numa.find(cpu);
  return it == s.cpu_numa.end() ? -1 : it->second;
}
}  // namespace

namespace {

// What diff() gathers while it walks snapshot B's IRQs, before the per-CPU and per-NIC
// summaries are made.
struct DiffState {
  const IrqSnapshot& a;
  const IrqSnapshot& b;
  bool since_boot = false;
  double rate_div = 0;                          // seconds between the snapshots; 0: no rates
  std::map<int, const IrqRecord*> before;       // a's IRQs not yet matched in b
  std::map<int, std::size_t> col_a;             // cpu id -> column in a
  std::map<int, std::uint64_t> cpu_count;
  std::map<std::string, NicLoad> nics;
  std::map<std::string, std::set<int>> nic_serving_numa;
  std::map<std::string, std::vector<int>> nic_irqs;
  std::map<std::string, bool> nic_affinity_remote;  // all IRQ affinities off-node

  // The count of `old` (the same IRQ in a) on the CPU of b's column i; 0 without one.
  std::uint64_t previous(const IrqRecord* old, std::size_t i) const {
    if (!old) return 0;
    auto c = col_a.find(b.cpu_columns[i]);
    return c != col_a.end() && c->second < old->per_cpu.size() ? old->per_cpu[c->second] : 0;
  }
};

// The interval between the snapshots, with warnings when they do not fit together.
void check_snapshots(const IrqSnapshot& a, const IrqSnapshot& b, bool since_boot, IrqDiff& d) {
  d.interval_s = since_boot ? 0.0 : static_cast<double>(b.time_ns - a.time_ns) / 1e9;
  if (!since_boot && d.interval_s <= 0)
    d.warnings.push_back("snapshot B is not later than A; rates are not computed");
  if (!since_boot && !a.hostname.empty() && !b.hostname.empty() && a.hostname != b.hostname)
    d.warnings.push_back("snapshots come from different hosts: '" + a.hostname + "' and '" + b.hostname + "'");
}

// The same IRQ in snapshot A (taken out of st.before), or nullptr for one that appeared.
const IrqRecord* match_previous(const IrqRecord& r, DiffState& st, IrqDiff& d) {
  auto it = st.before.find(r.irq);
  if (it == st.before.end()) {
    if (!st.since_boot)
      d.warnings.push_back("IRQ " + std::to_string(r.irq) + " (" + r.name + ") appeared between the snapshots");
    return nullptr;
  }
  const IrqRecord* old = it->second;
  st.before.erase(it);
  if (old->name != r.name)
    d.warnings.push_back("IRQ " + std::to_string(r.irq) + " changed name from '" + old->name + "' to '" + r.name + "'");
  return old;
}

// Interrupts of one IRQ between the snapshots, per CPU into st.cpu_count; the NUMA nodes
// whose CPUs served them into serving_numa.
IrqDelta irq_delta(const IrqRecord& r, const IrqRecord* old, DiffState& st, std::set<int>& serving_numa, IrqDiff& d) {
  IrqDelta delta{r.irq, r.name, r.device, r.numa, 0, 0, 0};
  for (std::size_t i = 0; i < r.per_cpu.size() && i < st.b.cpu_columns.size(); ++i) {
    const int cpu = st.b.cpu_columns[i];
    const std::uint64_t prev = st.previous(old, i);
    std::uint64_t n = r.per_cpu[i];
    if (n < prev) {
      d.warnings.push_back("IRQ " + std::to_string(r.irq) + " count on CPU " + std::to_string(cpu) +
                           " went backwards (counter reset?); using the later value");
    } else {
      n -= prev;
    }
    if (n == 0) continue;
    delta.count += n;
    st.cpu_count[cpu] += n;
    const int node = numa_of(st.b, cpu);
    if (r.numa >= 0 && node >= 0 && node != r.numa) delta.remote_count += n;
    if (node >= 0) serving_numa.insert(node);
  }
  delta.per_s = st.rate_div > 0 ? static_cast<double>(delta.count) / st.rate_div : 0;
  return delta;
}

// A NIC's IRQ: its counts, serving CPUs and whether its affinity is all off-node.
void add_nic_load(const IrqRecord& r, const IrqRecord* old, const IrqDelta& delta, const std::set<int>& serving_numa,
                  DiffState& st) {
  auto& n = st.nics[r.device];
  n.nic = r.device;
  n.numa = r.numa;
  n.count += delta.count;
  n.remote_count += delta.remote_count;
  st.nic_serving_numa[r.device].insert(serving_numa.begin(), serving_numa.end());
  st.nic_irqs[r.device].push_back(r.irq);
  for (std::size_t i = 0; i < r.per_cpu.size() && i < st.b.cpu_columns.size(); ++i) {
    const std::uint64_t prev = st.previous(old, i);
    if (r.per_cpu[i] > prev || (r.per_cpu[i] < prev && r.per_cpu[i] > 0)) n.serving_cpus.push_back(st.b.cpu_columns[i]);
  }
  bool remote = !r.affinity.empty() && r.numa >= 0;
  for (int cpu : r.affinity)
    if (numa_of(st.b, cpu) == r.numa || numa_of(st.b, cpu) < 0) remote = false;
  auto [it, fresh] = st.nic_affinity_remote.emplace(r.device, remote);
  if (!fresh) it->second = it->second && remote;
}

// Per-CPU counts, busiest first, and the max-over-mean imbalance.
void summarize_cpus(const DiffState& st, IrqDiff& d) {
  std::uint64_t max = 0, sum = 0;
  for (const auto& [cpu, n] : st.cpu_count) {
    d.cpus.push_back({cpu, numa_of(st.b, cpu), n, st.rate_div > 0 ? static_cast<double>(n) / st.rate_div : 0});
    max = std::max(max, n);
    sum += n;
  }
  std::sort(d.cpus.begin(), d.cpus.end(), [](const auto& x, const auto& y) {
    return x.count != y.count ? x.count > y.count : x.cpu < y.cpu;
  });
  if (sum > 0 && !st.cpu_count.empty())
    d.imbalance = static_cast<double>(max) / (static_cast<double>(sum) / static_cast<double>(st.cpu_count.size()));
}

// Per-NIC loads, and the NICs whose interrupts (or affinity) sit on another NUMA node.
void summarize_nics(DiffState& st, IrqDiff& d) {
  for (auto& [name, n] : st.nics) {
    std::sort(n.serving_cpus.begin(), n.serving_cpus.end());
    n.serving_cpus.erase(std::unique(n.serving_cpus.begin(), n.serving_cpus.end()), n.serving_cpus.end());
    n.per_s = st.rate_div > 0 ? static_cast<double>(n.count) / st.rate_div : 0;
    d.nics.push_back(n);
    if (n.numa < 0) continue;
    const double share = n.count > 0 ? static_cast<double>(n.remote_count) / static_cast<double>(n.count) : 0;
    NumaMismatch m;
    m.nic = name;
    m.nic_numa = n.numa;
    m.irqs = st.nic_irqs[name];
    m.serving_numa.assign(st.nic_serving_numa[name].begin(), st.nic_serving_numa[name].end());
    m.remote_share = share;
    if (n.count > 0 && share >= 0.5) {
      m.reason = std::to_string(static_cast<int>(share * 100 + 0.5)) + "% of " + name +
                 "'s interrupts ran on CPUs outside its NUMA node " + std::to_string(n.numa);
      d.mismatches.push_back(m);
    } else if (n.count == 0 && st.nic_affinity_remote[name]) {
      m.reason = "the affinity of every IRQ of " + name + " excludes its NUMA node " + std::to_string(n.numa);
      d.mismatches.push_back(m);
    }
  }
}

}  // namespace

IrqDiff diff(const IrqSnapshot& a, const IrqSnapshot& b) {
  IrqDiff d;
  DiffState st{a, b};
  st.since_boot = a.irqs.empty() && a.time_ns == 0;
  check_snapshots(a, b, st.since_boot, d);
  st.rate_div = d.interval_s > 0 ? d.interval_s : 0.0;
  for (const auto& r : a.irqs) st.before[r.irq] = &r;
  for (std::size_t i = 0; i < a.cpu_columns.size(); ++i) st.col_a[a.cpu_columns[i]] = i;
  for (int cpu : b.cpu_columns) st.cpu_count[cpu] = 0;

  for (const auto& r : b.irqs) {
    const IrqRecord* old = match_previous(r, st, d);
    std::set<int> serving_numa;
    const IrqDelta delta = irq_delta(r, old, st, serving_numa, d);
    if (r.is_nic) add_nic_load(r, old, delta, serving_numa, st);
    if (delta.count > 0) d.irqs.push_back(delta);
  }
  for (const auto& [irq, rec] : st.before)
    d.warnings.push_back("IRQ " + std::to_string(irq) + " (" + rec->name + ") disappeared between the snapshots");

  std::sort(d.irqs.begin(), d.irqs.end(), [](const auto& x, const auto& y) {
    return x.count != y.count ? x.count > y.count : x.irq < y.irq;
  });
  summarize_cpus(st, d);
  summarize_nics(st, d);
  return d;
}

nlohmann::json to_json(const IrqDiff& d) {
  nlohmann::json j;
  j["interval_s"] = d.interval_s;
  j["imbalance_max_over_mean"] = d.imbalance;
  auto& irqs = j["irqs"] = nlohmann::json::array();
  for (const auto& x : d.irqs)
    irqs.push_back({{"irq", x.irq}, {"name", x.name}, {"device", x.device}, {"numa", x.numa},
                    {"count", x.count}, {"remote_count", x.remote_count}, {"per_s", x.per_s}});
  auto& cpus = j["cpus"] = nlohmann::json::array();
  for (const auto& c : d.cpus)
    cpus.push_back({{"cpu", c.cpu}, {"numa", c.numa}, {"count", c.count}, {"per_s", c.per_s}});
  auto& nics = j["nics"] = nlohmann::json::array();
  for (const auto& n : d.nics)
    nics.push_back({{"nic", n.nic}, {"numa", n.numa}, {"count", n.count}, {"remote_count", n.remote_count},
                    {"per_s", n.per_s}, {"serving_cpus", format_cpulist(n.serving_cpus)}});
  auto& mm = j["numa_mismatches"] = nlohmann::json::array();
  for (const auto& m : d.mismatches)
    mm.push_back({{"nic", m.nic}, {"nic_numa", m.nic_numa}, {"irqs", m.irqs}, {"serving_numa", m.serving_numa},
                  {"remote_share", m.remote_share}, {"reason", m.reason}});
  j["warnings"] = d.warnings;
  return j;
}

}  // namespace p2pscope::tune
