// The run summary: accumulation over intervals, its JSON, and the verdict lines.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "monitor/collect.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::monitor {
namespace {
// Throttle reasons that cost performance (idle, application clocks, sync boost and
// display clocks are normal states).
constexpr std::pair<std::uint64_t, const char*> kHarmfulThrottle[] = {
    {0x4, "power cap"}, {0x8, "hw slowdown"}, {0x20, "sw thermal"}, {0x40, "hw thermal"}, {0x80, "hw power brake"}};

constexpr double kThreadBoundPct = 90;  // of one CPU

bool is_loss_counter(const std::string& name) {
  return name.find("drop") != std::string::npos || name.find("discard") != std::string::npos ||
         name.find("miss") != std::string::npos || name.find("err") != std::string::npos;
}

void max_into(int& m, int v) {
  if (v >= 0 && (m < 0 || v > m)) m = v;
}
void min_into(int& m, int v) {
  if (v >= 0 && (m < 0 || v < m)) m = v;
}
}  // namespace

std::string format_count(double n) {
  const double a = std::fabs(n);
  if (a < 1000) return fmt::format("{:.0f}", n);
  if (a < 1e6) return fmt::format("{:.1f}k", n / 1e3);
  if (a < 1e9) return fmt::format("{:.1f}M", n / 1e6);
  return fmt::format("{:.1f}G", n / 1e9);
}

void SummaryBuilder::note(const std::string& n) {
  if (seen_notes_.insert(n).second) notes_.push_back(n);
}

void SummaryBuilder::add_gpus(const std::vector<nvml::GpuSample>& gpus) {
  for (const auto& g : gpus) {
    GpuSummary& s = gpus_[g.index];
    s.index = g.index;
    ++s.samples;
    max_into(s.max_temperature_c, g.temperature_c);
    if (g.power_w > s.max_power_w) s.max_power_w = g.power_w;
    if (g.power_limit_w > 0) s.power_limit_w = g.power_limit_w;
    min_into(s.min_sm_clock_mhz, g.sm_clock_mhz);
    max_into(s.max_sm_clock_mhz, g.sm_clock_mhz);
    min_into(s.min_mem_clock_mhz, g.mem_clock_mhz);
    max_into(s.max_mem_clock_mhz, g.mem_clock_mhz);
    for (const auto& [bit, name] : kHarmfulThrottle)
      if (g.throttle_reasons & bit) ++s.throttled_samples[name];
    if (g.utilization_gpu_pct >= 0) {
      GpuUtilAcc& u = gpu_util_[g.index];
      u.sum += g.utilization_gpu_pct;
      ++u.n;
      max_into(s.max_utilization_pct, g.utilization_gpu_pct);
    }
  }
}

void SummaryBuilder::add(const Interval& iv) {
  ++intervals_;
  seconds_ += iv.seconds;
  for (const auto& c : iv.cpus) {
    CpuAcc& a = cpus_[c.cpu];
    a.user += c.user_pct * iv.seconds;
    a.system += c.system_pct * iv.seconds;
    a.softirq += c.softirq_pct * iv.seconds;
    a.irq += c.irq_pct * iv.seconds;
    a.busy += c.busy_pct * iv.seconds;
    a.weight += iv.seconds;
    a.max_busy = std::max(a.max_busy, c.busy_pct);
  }
  for (const auto& n : iv.nics) {
    NicAcc& a = nics_[n.name];
    if (n.driver_stats) mark_driver_stats(n.name);
    for (const auto& [k, d] : n.delta) a.totals[k] += d;
    for (const auto& [k, d] : n.driver_delta) a.driver[k] += d;
    a.seconds += iv.seconds;
    if (const auto it = n.per_s.find("rx_bytes"); it != n.per_s.end()) a.max_rx = std::max(a.max_rx, it->second);
    if (const auto it = n.per_s.find("tx_bytes"); it != n.per_s.end()) a.max_tx = std::max(a.max_tx, it->second);
  }
  for (const auto& r : iv.irqs) {
    if (r.nic.empty()) continue;
    NicAcc& a = nics_[r.nic];
    a.irq_count += r.per_s * iv.seconds;
    for (const auto& [cpu, rate] : r.per_cpu_per_s) a.irq_by_cpu[cpu] += rate * iv.seconds;
  }
  for (const auto& t : iv.threads) {
    ThreadAcc& a = threads_[t.tid];
    a.name = t.name;
    a.cpu_s += t.cpu_pct / 100.0 * iv.seconds;
    a.seconds += iv.seconds;
    a.max_pct = std::max(a.max_pct, t.cpu_pct);
    a.last_cpu = t.last_cpu;
    // Where it ran between samples is unknown; the CPU at the interval's end stands for
    // the whole interval (a pinned or settled thread rarely moves).
    if (t.last_cpu >= 0) a.cpu_s_by_cpu[t.last_cpu] += t.cpu_pct / 100.0 * iv.seconds;
  }
  add_gpus(iv.gpus);
  for (const auto& n : iv.notes) note(n);
}

Summary SummaryBuilder::finish(double interval_s, std::int64_t start_realtime_ns) const {
  Summary s;
  s.interval_s = interval_s;
  s.samples = intervals_ + 1;
  s.duration_s = seconds_;
  s.start_realtime_ns = start_realtime_ns;
  double all_w = 0, all_soft = 0, all_busy = 0;
  for (const auto& [cpu, a] : cpus_) {
    if (a.weight <= 0) continue;
    CpuSummary c;
    c.cpu = cpu;
    c.busy_pct = a.busy / a.weight;
    c.user_pct = a.user / a.weight;
    c.system_pct = a.system / a.weight;
    c.softirq_pct = a.softirq / a.weight;
    c.irq_pct = a.irq / a.weight;
    c.max_busy_pct = a.max_busy;
    s.cpus.push_back(c);
    all_w += a.weight;
    all_soft += a.softirq;
    all_busy += a.busy;
  }
  if (all_w > 0) {
    s.softirq_pct_all = all_soft / all_w;
    s.busy_pct_all = all_busy / all_w;
  }
  for (const auto& [name, a] : nics_) {
    NicSummary n;
    n.name = name;
    n.totals = a.totals;
    n.driver_totals = a.driver;
    n.driver_stats = nics_with_driver_stats_.count(name) > 0;
    if (seconds_ > 0) {
      n.rx_bytes_per_s = a.totals.count("rx_bytes") ? static_cast<double>(a.totals.at("rx_bytes")) / seconds_ : 0;
      n.tx_bytes_per_s = a.totals.count("tx_bytes") ? static_cast<double>(a.totals.at("tx_bytes")) / seconds_ : 0;
      n.irq_per_s = a.irq_count / seconds_;
      for (const auto& [cpu, count] : a.irq_by_cpu) n.irq_per_s_by_cpu[cpu] = count / seconds_;
    }
    n.max_rx_bytes_per_s = a.max_rx;
    n.max_tx_bytes_per_s = a.max_tx;
    s.nics.push_back(std::move(n));
  }
  for (const auto& [tid, a] : threads_) {
    ThreadSummary t;
    t.tid = tid;
    t.name = a.name;
    t.cpu_s = a.cpu_s;
    t.cpu_pct = a.seconds > 0 ? 100.0 * a.cpu_s / a.seconds : 0;
    t.max_cpu_pct = a.max_pct;
    t.last_cpu = a.last_cpu;
    t.cpu_s_by_cpu = a.cpu_s_by_cpu;
    s.threads.push_back(std::move(t));
  }
  std::sort(s.threads.begin(), s.threads.end(), [](const auto& x, const auto& y) { return x.cpu_s > y.cpu_s; });
  for (const auto& [idx, g] : gpus_) {
    s.gpus.push_back(g);
    if (const auto it = gpu_util_.find(idx); it != gpu_util_.end() && it->second.n > 0)
      s.gpus.back().mean_utilization_pct = it->second.sum / it->second.n;
  }
  s.notes = notes_;
  return s;
}

namespace {
// "softirq 71%, system 22%": the largest share of these CPUs' time, and the second
// when it is worth naming.
std::string shares_text(const Summary& s, const std::vector<int>& cpus) {
  double user = 0, sys = 0, soft = 0, irq = 0;
  for (const auto& c : s.cpus) {
    if (std::find(cpus.begin(), cpus.end(), c.cpu) == cpus.end()) continue;
    user += c.user_pct, sys += c.system_pct, soft += c.softirq_pct, irq += c.irq_pct;
  }
  const double n = static_cast<double>(std::max<std::size_t>(cpus.size(), 1));
  std::vector<std::pair<double, std::string>> parts = {{soft / n, "softirq"}, {sys / n, "system"}, {user / n, "user"}, {irq / n, "irq"}};
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string why = fmt::format("{} {:.0f}%", parts[0].second, parts[0].first);
  if (parts[1].first >= 20) why += fmt::format(", {} {:.0f}%", parts[1].second, parts[1].first);
  return why;
}
}  // namespace

std::vector<std::string> verdict_lines(const Summary& s) {
  std::vector<std::string> out;
  const BusyCpus busy = classify_busy_cpus(s);
  if (!busy.bound.empty())
    out.push_back(fmt::format("CPU-bound on CPU{} {} ({})", busy.bound.size() > 1 ? "s" : "", format_cpulist(busy.bound),
                              shares_text(s, busy.bound)));
  if (!busy.spin_wait.empty()) {
    const bool many = busy.waiter_tids.size() > 1;
    out.push_back(fmt::format("host thread{} {} spin-wait{} on the GPU on CPU{} {} ({}): not a CPU bottleneck",
                              many ? "s" : "", join(busy.waiter_names), many ? "" : "s",
                              busy.spin_wait.size() > 1 ? "s" : "", format_cpulist(busy.spin_wait),
                              shares_text(s, busy.spin_wait)));
  }
  for (const auto& t : s.threads) {
    if (t.cpu_pct < kThreadBoundPct || t.name == kMonitorThread) continue;
    // Its ~100% is the spin-wait named above, not work.
    if (std::find(busy.waiter_tids.begin(), busy.waiter_tids.end(), t.tid) != busy.waiter_tids.end()) continue;
    out.push_back(fmt::format("thread {} (tid {}) used {:.0f}% of a CPU (last ran on CPU {})", t.name, t.tid, t.cpu_pct, t.last_cpu));
  }
  for (const auto& n : s.nics) {
    auto total = [&](const char* k) { return n.totals.count(k) ? static_cast<double>(n.totals.at(k)) : 0.0; };
    const double rx_drop = total("rx_dropped") + total("rx_missed_errors"), tx_drop = total("tx_dropped");
    if (rx_drop + tx_drop > 0)
      out.push_back(fmt::format("NIC {} dropped {} packets (rx {}, tx {})", n.name, format_count(rx_drop + tx_drop),
                                format_count(rx_drop), format_count(tx_drop)));
    const double errs = total("rx_errors") + total("tx_errors");
    if (errs > 0) out.push_back(fmt::format("NIC {} saw {} errors (rx {}, tx {})", n.name, format_count(errs),
                                            format_count(total("rx_errors")), format_count(total("tx_errors"))));
    std::vector<std::pair<std::uint64_t, std::string>> loss;
    for (const auto& [k, d] : n.driver_totals)
      if (is_loss_counter(k) && d > 0) loss.emplace_back(d, k);
    std::sort(loss.rbegin(), loss.rend());
    if (!loss.empty()) {
      std::string list;
      for (std::size_t i = 0; i < loss.size() && i < 3; ++i)
        list += (i ? ", " : "") + loss[i].second + " +" + format_count(static_cast<double>(loss[i].first));
      out.push_back(fmt::format("NIC {} driver counters moved: {}", n.name, list));
    }
    if (n.irq_per_s >= 1000) {
      for (const auto& [cpu, rate] : n.irq_per_s_by_cpu)
        if (rate >= 0.9 * n.irq_per_s)
          out.push_back(fmt::format("NIC {} interrupts ({}/s) all served by CPU {}", n.name, format_count(n.irq_per_s), cpu));
    }
  }
  for (const auto& g : s.gpus) {
    if (g.throttled_samples.empty()) continue;
    const std::string why = join(g.throttled_samples, ", ", [](const auto& kv) { return kv.first; });
    int worst = 0;
    for (const auto& [name, count] : g.throttled_samples) worst = std::max(worst, count);
    out.push_back(fmt::format("GPU {} throttled: {} ({} of {} samples)", g.index, why, worst, g.samples));
  }
  return out;
}

nlohmann::json summary_to_json(const Summary& s, int busiest) {
  using nlohmann::json;
  json j;
  j["interval_s"] = s.interval_s;
  j["samples"] = s.samples;
  j["duration_s"] = s.duration_s;
  j["start"] = iso8601_utc(s.start_realtime_ns);
  j["busy_pct_all_cpus"] = s.busy_pct_all;
  j["softirq_pct_all_cpus"] = s.softirq_pct_all;
  auto cpus = s.cpus;
  std::sort(cpus.begin(), cpus.end(), [](const auto& a, const auto& b) { return a.busy_pct > b.busy_pct; });
  json top = json::array();
  for (std::size_t i = 0; i < cpus.size() && static_cast<int>(i) < busiest; ++i) {
    const auto& c = cpus[i];
    top.push_back({{"cpu", c.cpu}, {"busy_pct", c.busy_pct}, {"user_pct", c.user_pct}, {"system_pct", c.system_pct},
                   {"softirq_pct", c.softirq_pct}, {"irq_pct", c.irq_pct}, {"max_busy_pct", c.max_busy_pct}});
  }
  j["busiest_cpus"] = top;
  json nics = json::array();
  for (const auto& n : s.nics) {
    json by_cpu = json::object();
    for (const auto& [cpu, rate] : n.irq_per_s_by_cpu) by_cpu[std::to_string(cpu)] = rate;
    json moved = json::object();
    std::vector<std::pair<std::uint64_t, std::string>> d;
    for (const auto& [k, v] : n.driver_totals) d.emplace_back(v, k);
    std::sort(d.rbegin(), d.rend());
    for (std::size_t i = 0; i < d.size(); ++i)  // every loss counter, and the 20 largest others
      if (i < 20 || is_loss_counter(d[i].second)) moved[d[i].second] = d[i].first;
    nics.push_back({{"name", n.name}, {"rx_bytes_per_s", n.rx_bytes_per_s}, {"tx_bytes_per_s", n.tx_bytes_per_s},
                    {"max_rx_bytes_per_s", n.max_rx_bytes_per_s}, {"max_tx_bytes_per_s", n.max_tx_bytes_per_s},
                    {"totals", n.totals}, {"irq_per_s", n.irq_per_s}, {"irq_per_s_by_cpu", by_cpu},
                    {"driver_stats", n.driver_stats}, {"driver_counters_moved", moved}});
  }
  j["nics"] = nics;
  json threads = json::array();
  for (std::size_t i = 0; i < s.threads.size() && i < 32; ++i) {
    const auto& t = s.threads[i];
    threads.push_back({{"tid", t.tid}, {"name", t.name}, {"cpu_s", t.cpu_s}, {"cpu_pct", t.cpu_pct},
                       {"max_cpu_pct", t.max_cpu_pct}, {"last_cpu", t.last_cpu}});
  }
  j["threads"] = threads;
  json gpus = json::array();
  for (const auto& g : s.gpus)
    gpus.push_back({{"index", g.index}, {"samples", g.samples}, {"max_temperature_c", g.max_temperature_c},
                    {"max_power_w", g.max_power_w}, {"power_limit_w", g.power_limit_w},
                    {"sm_clock_mhz", {g.min_sm_clock_mhz, g.max_sm_clock_mhz}},
                    {"mem_clock_mhz", {g.min_mem_clock_mhz, g.max_mem_clock_mhz}}, {"throttled_samples", g.throttled_samples},
                    {"mean_utilization_pct", g.mean_utilization_pct}, {"max_utilization_pct", g.max_utilization_pct}});
  j["gpus"] = gpus;
  j["notes"] = s.notes;
  j["host_waits_on_gpu"] = s.host_waits_on_gpu;
  j["verdicts"] = verdict_lines(s);
  j["monitor_cpu_s"] = s.monitor_cpu_s;
  j["monitor_cpu_ns_per_sample"] = s.monitor_cpu_ns_per_sample;
  return j;
}

}  // namespace p2pscope::monitor
