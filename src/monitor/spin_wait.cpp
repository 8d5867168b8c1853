// Telling a host thread that spin-waits on a GPU from real CPU work. CUDA's default
// synchronization (cudaStreamSynchronize, cudaEventSynchronize, NCCL's waits) spins,
// yielding now and then, so the waiting thread keeps one CPU near 100% busy: mostly
// user time, some system time from sched_yield, no softirq or irq. Calling that
// "CPU-bound" sends the user after the wrong resource while the GPU sets the pace.
//
// A busy CPU (mean busy >= kCpuBoundPct) is read as a spin-waiter's when all hold:
//  - the run is GPU-driven: some GPU's mean NVML utilization reached kGpuActivePct,
//    or the caller said so (Options::host_waits_on_gpu; copy-engine copies keep
//    utilization.gpu at 0 while the host waits);
//  - the monitored process's own threads (the monitor's excluded) account for at
//    least kOwnShare of the CPU's busy time: someone else's load is not our wait;
//  - user time is at least kMinUserShare of the busy time and softirq + irq stay
//    under kMaxIntrPct: network or driver work shows up there, a spin does not;
//  - there are no more such CPUs than GPUs could explain (one waiter per busy GPU,
//    per sampled GPU when only declared): a pool of user-busy threads is real work.
// Every other busy CPU stays CPU-bound.
#include <algorithm>
#include <limits>
#include <map>

#include "monitor/collect.hpp"

namespace p2pscope::monitor {
namespace {
constexpr double kGpuActivePct = 25;   // mean utilization.gpu over the run
constexpr double kOwnShare = 0.8;      // own threads' CPU time / the CPU's busy time
constexpr double kMinUserShare = 0.6;  // user / busy
constexpr double kMaxIntrPct = 10;     // softirq + irq, percent of the CPU's time
constexpr double kNameShare = 0.25;    // a thread named as a waiter did this much of the CPU's own load

std::size_t active_gpus(const Summary& s) {
  return static_cast<std::size_t>(
      std::count_if(s.gpus.begin(), s.gpus.end(), [](const GpuSummary& g) { return g.mean_utilization_pct >= kGpuActivePct; }));
}

// The most waiting threads the GPUs can explain.
std::size_t max_waiters(const Summary& s, std::size_t active) {
  if (active > 0) return active;
  if (!s.gpus.empty()) return s.gpus.size();
  return std::numeric_limits<std::size_t>::max();  // declared, NVML absent: no count to hold it to
}
}  // namespace

BusyCpus classify_busy_cpus(const Summary& s) {
  BusyCpus out;
  const std::size_t active = active_gpus(s);
  const bool gpu_driven = s.host_waits_on_gpu || active > 0;
  std::map<int, std::string> waiters;  // tid -> name
  for (const auto& c : s.cpus) {
    if (c.busy_pct < kCpuBoundPct) continue;
    bool waiter = gpu_driven && s.duration_s > 0 && c.user_pct >= kMinUserShare * c.busy_pct &&
                  c.softirq_pct + c.irq_pct < kMaxIntrPct;
    double own_s = 0;
    std::vector<std::pair<double, const ThreadSummary*>> here;
    if (waiter) {
      for (const auto& t : s.threads) {
        if (t.name == kMonitorThread) continue;
        const auto it = t.cpu_s_by_cpu.find(c.cpu);
        if (it == t.cpu_s_by_cpu.end() || it->second <= 0) continue;
        own_s += it->second;
        here.emplace_back(it->second, &t);
      }
      waiter = 100.0 * own_s / s.duration_s >= kOwnShare * c.busy_pct;
    }
    if (!waiter) {
      out.bound.push_back(c.cpu);
      continue;
    }
    out.spin_wait.push_back(c.cpu);
    for (const auto& [cpu_s, t] : here)
      if (cpu_s >= kNameShare * own_s) waiters[t->tid] = t->name;
  }
  if (out.spin_wait.size() > max_waiters(s, active)) {
    out.bound.insert(out.bound.end(), out.spin_wait.begin(), out.spin_wait.end());
    std::sort(out.bound.begin(), out.bound.end());
    out.spin_wait.clear();
    waiters.clear();
  }
  for (const auto& [tid, name] : waiters) {
    out.waiter_tids.push_back(tid);
    if (std::find(out.waiter_names.begin(), out.waiter_names.end(), name) == out.waiter_names.end())
      out.waiter_names.push_back(name);
  }
  return out;
}

}  // namespace p2pscope::monitor
