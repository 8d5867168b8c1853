// The difference of two snapshots, and its rows of monitor.csv.
#include <algorithm>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "monitor/collect.hpp"

namespace p2pscope::monitor {
namespace {
// Increase of a monotonic counter. A smaller value means the counter was reset (NIC
// reset, driver reload) or wrapped: the increase is taken as the new value, as
// Prometheus does, and the caller notes it.
std::uint64_t increase(std::uint64_t before, std::uint64_t now, bool* went_back) {
  if (now >= before) return now - before;
  *went_back = true;
  return now;
}

double pct(std::uint64_t part, std::uint64_t total) { return total ? 100.0 * static_cast<double>(part) / static_cast<double>(total) : 0; }

// CSV fields come from kernel names (thread comm, IRQ actions): keep them one field.
std::string field(const std::string& s) {
  std::string out = s;
  for (auto& ch : out)
    if (ch == ',' || ch == '"' || ch == '\n' || ch == '\r') ch = '_';
  return out;
}

void cpu_shares(const Snapshot& a, const Snapshot& b, Interval& iv) {
  std::map<int, const CpuTimes*> before;
  for (const auto& c : a.cpus) before[c.cpu] = &c;
  for (const auto& now : b.cpus) {
    const auto it = before.find(now.cpu);
    if (it == before.end()) {
      iv.notes.push_back("CPU " + std::to_string(now.cpu) + " appeared (hotplug)");
      continue;
    }
    const CpuTimes& was = *it->second;
    if (now.total() < was.total()) {
      iv.notes.push_back("CPU " + std::to_string(now.cpu) + " times went backwards; interval skipped for it");
      continue;
    }
    const std::uint64_t total = now.total() - was.total();
    if (total == 0) continue;
    bool back = false;
    CpuShare s;
    s.cpu = now.cpu;
    s.user_pct = pct(increase(was.user, now.user, &back) + increase(was.nice, now.nice, &back), total);
    s.system_pct = pct(increase(was.system, now.system, &back), total);
    s.softirq_pct = pct(increase(was.softirq, now.softirq, &back), total);
    s.irq_pct = pct(increase(was.irq, now.irq, &back), total);
    s.idle_pct = pct(increase(was.idle, now.idle, &back), total);
    const double iowait_pct = pct(increase(was.iowait, now.iowait, &back), total);
    s.busy_pct = std::clamp(100.0 - s.idle_pct - iowait_pct, 0.0, 100.0);
    // The kernel's idle/iowait can step back by a tick on NO_HZ machines: not worth a note.
    iv.cpus.push_back(s);
  }
}

void irq_rates(const Snapshot& a, const Snapshot& b, Collector& c, double sec, Interval& iv,
               std::map<std::string, double>& nic_irq) {
  if (!a.have_interrupts || !b.have_interrupts) return;
  std::map<int, const topo::Irq*> before;
  for (const auto& irq : a.interrupts.irqs) before[irq.irq] = &irq;
  std::map<int, double> per_cpu;
  // Every line shares its table's CPU columns; they change only with CPU hotplug.
  const std::vector<int>& cols = b.interrupts.cpu_columns;
  const std::vector<int>& old_cols = a.interrupts.cpu_columns;
  const bool same_columns = old_cols == cols;
  for (const auto& irq : b.interrupts.irqs) {
    const auto it = before.find(irq.irq);
    const topo::Irq* was = it == before.end() ? nullptr : it->second;
    if (!was) iv.notes.push_back("IRQ " + std::to_string(irq.irq) + " (" + irq.name + ") appeared");
    std::map<int, std::uint64_t> old_by_cpu;  // only when the CPU columns changed
    if (was && !same_columns)
      for (std::size_t k = 0; k < was->per_cpu.size() && k < old_cols.size(); ++k) old_by_cpu[old_cols[k]] = was->per_cpu[k];
    IrqRate r;
    bool back = false;
    std::uint64_t sum = 0;
    for (std::size_t k = 0; k < irq.per_cpu.size() && k < cols.size(); ++k) {
      std::uint64_t prev = 0;
      if (was && same_columns && k < was->per_cpu.size()) prev = was->per_cpu[k];
      else if (was && !same_columns) prev = old_by_cpu.count(cols[k]) ? old_by_cpu[cols[k]] : 0;
      const std::uint64_t d = increase(prev, irq.per_cpu[k], &back);
      if (d == 0) continue;
      sum += d;
      const double rate = static_cast<double>(d) / sec;
      r.per_cpu_per_s.emplace_back(cols[k], rate);
      per_cpu[cols[k]] += rate;
    }
    if (back) iv.notes.push_back("IRQ " + std::to_string(irq.irq) + " counts went backwards (reset)");
    if (sum == 0) continue;
    r.irq = irq.irq;
    r.name = irq.name;
    r.nic = c.nic_of_irq(irq);
    r.per_s = static_cast<double>(sum) / sec;
    if (!r.nic.empty()) nic_irq[r.nic] += r.per_s;
    iv.irqs.push_back(std::move(r));
  }
  std::map<int, bool> now;
  for (const auto& irq : b.interrupts.irqs) now[irq.irq] = true;
  for (const auto& irq : a.interrupts.irqs)
    if (!now.count(irq.irq)) iv.notes.push_back("IRQ " + std::to_string(irq.irq) + " (" + irq.name + ") disappeared");
  for (auto& cpu : iv.cpus)
    if (const auto it = per_cpu.find(cpu.cpu); it != per_cpu.end()) cpu.interrupts_per_s = it->second;
}

void nic_rates(const Snapshot& a, const Snapshot& b, Collector& c, double sec, Interval& iv,
               const std::map<std::string, double>& nic_irq) {
  std::map<std::string, const NicCounters*> before, after;
  for (const auto& n : a.nics) before[n.name] = &n;
  for (const auto& n : b.nics) after[n.name] = &n;
  for (const auto& n : a.nics)
    if (!after.count(n.name)) iv.notes.push_back("NIC " + n.name + " disappeared");
  for (const auto& now : b.nics) {
    const auto it = before.find(now.name);
    if (it == before.end()) {
      iv.notes.push_back("NIC " + now.name + " appeared");
      continue;
    }
    const NicCounters& was = *it->second;
    NicRate r;
    r.name = now.name;
    bool back = false;
    for (const auto& [key, v] : now.stats) {
      const auto old = was.stats.find(key);
      if (old == was.stats.end()) continue;
      const std::uint64_t d = increase(old->second, v, &back);
      r.delta[key] = d;
      r.per_s[key] = static_cast<double>(d) / sec;
    }
    if (back) iv.notes.push_back("NIC " + now.name + " statistics went backwards (reset or wrap)");
    if (was.driver_ok && now.driver_ok && was.driver.size() == now.driver.size()) {
      r.driver_stats = true;
      const auto& names = c.driver_names(now.name);
      bool dback = false;
      for (std::size_t k = 0; k < now.driver.size() && k < names.size(); ++k)
        if (const std::uint64_t d = increase(was.driver[k], now.driver[k], &dback)) r.driver_delta[names[k]] += d;
      if (dback) iv.notes.push_back("NIC " + now.name + " driver counters went backwards (reset)");
    }
    if (const auto irq = nic_irq.find(now.name); irq != nic_irq.end()) r.irq_per_s = irq->second;
    iv.nics.push_back(std::move(r));
  }
}

void thread_use(const Snapshot& a, const Snapshot& b, double sec, long ticks_per_s, Interval& iv) {
  std::map<int, const ThreadTimes*> before;
  for (const auto& t : a.threads) before[t.tid] = &t;
  for (const auto& now : b.threads) {
    std::uint64_t prev = 0;
    if (const auto it = before.find(now.tid); it != before.end()) prev = it->second->utime + it->second->stime;
    bool back = false;  // a tid reused by a new thread
    const std::uint64_t ticks = increase(prev, now.utime + now.stime, &back);
    ThreadUse u;
    u.tid = now.tid;
    u.name = now.name;
    u.last_cpu = now.last_cpu;
    u.cpu_pct = 100.0 * static_cast<double>(ticks) / static_cast<double>(ticks_per_s) / sec;
    iv.threads.push_back(std::move(u));
  }
}
}  // namespace

Interval diff(const Snapshot& a, const Snapshot& b, Collector& c, long ticks_per_s) {
  Interval iv;
  iv.time_ns = b.real_ns;
  iv.seconds = std::max(1e-9, static_cast<double>(b.mono_ns - a.mono_ns) / 1e9);
  iv.notes = b.notes;
  if (ticks_per_s <= 0) ticks_per_s = 100;
  cpu_shares(a, b, iv);
  std::map<std::string, double> nic_irq;
  irq_rates(a, b, c, iv.seconds, iv, nic_irq);
  nic_rates(a, b, c, iv.seconds, iv, nic_irq);
  thread_use(a, b, iv.seconds, ticks_per_s, iv);
  iv.gpus = b.gpus;
  return iv;
}

void append_csv_rows(const Interval& iv, std::string& out) {
  auto o = std::back_inserter(out);
  const std::int64_t t = iv.time_ns;
  for (const auto& c : iv.cpus) {
    fmt::format_to(o, "{},cpu{},user_pct,{:.2f}\n{},cpu{},system_pct,{:.2f}\n{},cpu{},softirq_pct,{:.2f}\n", t, c.cpu,
                   c.user_pct, t, c.cpu, c.system_pct, t, c.cpu, c.softirq_pct);
    fmt::format_to(o, "{},cpu{},irq_pct,{:.2f}\n{},cpu{},idle_pct,{:.2f}\n", t, c.cpu, c.irq_pct, t, c.cpu, c.idle_pct);
    if (c.interrupts_per_s > 0) fmt::format_to(o, "{},cpu{},interrupts_per_s,{:.1f}\n", t, c.cpu, c.interrupts_per_s);
  }
  for (const auto& r : iv.irqs) {
    fmt::format_to(o, "{},irq{},per_s,{:.1f}\n", t, r.irq, r.per_s);
    for (const auto& [cpu, rate] : r.per_cpu_per_s) fmt::format_to(o, "{},irq{},cpu{}_per_s,{:.1f}\n", t, r.irq, cpu, rate);
  }
  for (const auto& n : iv.nics) {
    const std::string src = "nic:" + field(n.name);
    for (const auto& [key, rate] : n.per_s) {
      const bool traffic = key.find("bytes") != std::string::npos || key.find("packets") != std::string::npos;
      if (traffic) fmt::format_to(o, "{},{},{}_per_s,{:.1f}\n", t, src, key, rate);
      else if (const auto d = n.delta.at(key)) fmt::format_to(o, "{},{},{},{}\n", t, src, key, d);
    }
    if (n.irq_per_s > 0) fmt::format_to(o, "{},{},irq_per_s,{:.1f}\n", t, src, n.irq_per_s);
    for (const auto& [key, d] : n.driver_delta) fmt::format_to(o, "{},{},drv:{},{}\n", t, src, field(key), d);
  }
  for (const auto& th : iv.threads) {
    fmt::format_to(o, "{},thread:{}:{},cpu_pct,{:.2f}\n{},thread:{}:{},last_cpu,{}\n", t, th.tid, field(th.name), th.cpu_pct,
                   t, th.tid, field(th.name), th.last_cpu);
  }
  for (const auto& g : iv.gpus) {
    const std::string src = "gpu" + std::to_string(g.index);
    if (g.temperature_c >= 0) fmt::format_to(o, "{},{},temperature_c,{}\n", t, src, g.temperature_c);
    if (g.power_w >= 0) fmt::format_to(o, "{},{},power_w,{:.1f}\n", t, src, g.power_w);
    if (g.sm_clock_mhz >= 0) fmt::format_to(o, "{},{},sm_clock_mhz,{}\n", t, src, g.sm_clock_mhz);
    if (g.mem_clock_mhz >= 0) fmt::format_to(o, "{},{},mem_clock_mhz,{}\n", t, src, g.mem_clock_mhz);
    if (g.utilization_gpu_pct >= 0) fmt::format_to(o, "{},{},utilization_pct,{}\n", t, src, g.utilization_gpu_pct);
    fmt::format_to(o, "{},{},throttle_reasons,{}\n", t, src, g.throttle_reasons);
    if (g.pcie_tx_kbps >= 0) fmt::format_to(o, "{},{},pcie_tx_kbps,{}\n", t, src, g.pcie_tx_kbps);
    if (g.pcie_rx_kbps >= 0) fmt::format_to(o, "{},{},pcie_rx_kbps,{}\n", t, src, g.pcie_rx_kbps);
  }
  for (const auto& n : iv.notes) fmt::format_to(o, "{},note,{},1\n", t, field(n));
}

}  // namespace p2pscope::monitor
