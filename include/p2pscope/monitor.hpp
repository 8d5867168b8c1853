#pragma once
// Run-time system monitor: what the CPUs, IRQs, NICs, threads and GPUs did during a
// run. A Sampler reads /proc/stat, /proc/interrupts (grouped by NIC),
// /sys/class/net/*/statistics, the drivers' ethtool counters (SIOCETHTOOL, live root
// only), /proc/<pid>/task/*/stat and NVML in a background thread: one sample at
// start(), one per interval, one at stop(). It writes monitor.csv in long format
// (time_ns,source,key,value; time_ns is CLOCK_REALTIME) and returns a Summary.
//
// Wiring `--monitor` into a command takes four lines:
//
//   monitor::Sampler mon(FsRoot("/"), {.interval_s = 1.0, .out_csv = out_dir + "/monitor.csv"});
//   mon.start();                                   // throws Error only if the CSV can't be opened
//   ... run the benchmark ...
//   auto summary = mon.stop();                     // never throws
//   doc["monitor"] = monitor::summary_to_json(summary);       // into the run's JSON
//   for (auto& line : monitor::verdict_lines(summary)) std::printf("monitor: %s\n", line.c_str());
//
// A failure inside the monitor (an unreadable file, a NIC that disappears, a counter
// that goes backwards, a driver without ethtool stats, no NVML) never disturbs the
// monitored run: it becomes a note in Summary::notes. The destructor stops the thread.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/fsroot.hpp"
#include "p2pscope/nvml.hpp"

namespace p2pscope::monitor {

// Shares and rates over one interval between two successive samples.
struct CpuShare {
  int cpu = -1;
  // Percent of the interval's jiffies; busy = 100 - idle - iowait.
  double user_pct = 0, system_pct = 0, softirq_pct = 0, irq_pct = 0, idle_pct = 0, busy_pct = 0;
  double interrupts_per_s = 0;  // numbered IRQ lines of /proc/interrupts served on this CPU
};

struct IrqRate {
  int irq = -1;
  std::string name;  // action names ("mlx5_comp3@pci:0000:17:00.0")
  std::string nic;   // owning NIC, "" when none
  double per_s = 0;
  std::vector<std::pair<int, double>> per_cpu_per_s;  // (cpu, rate), non-zero only
};

struct NicRate {
  std::string name;
  // From /sys/class/net/<nic>/statistics: per-second rates and raw deltas by counter
  // name (rx_bytes, tx_packets, rx_dropped, rx_errors, ...).
  std::map<std::string, double> per_s;
  std::map<std::string, std::uint64_t> delta;
  // Driver counters (ethtool -S names) that moved in this interval: name -> delta.
  std::map<std::string, std::uint64_t> driver_delta;
  bool driver_stats = false;  // the driver's counters were read at both ends
  double irq_per_s = 0;
};

struct ThreadUse {
  int tid = -1;
  std::string name;
  double cpu_pct = 0;  // of one CPU
  int last_cpu = -1;
};

struct Interval {
  std::int64_t time_ns = 0;    // CLOCK_REALTIME at the end of the interval
  double seconds = 0;          // length
  std::vector<CpuShare> cpus;  // by CPU id
  std::vector<IrqRate> irqs;   // lines that fired in the interval
  std::vector<NicRate> nics;
  std::vector<ThreadUse> threads;
  std::vector<nvml::GpuSample> gpus;  // the sample at the end of the interval
  std::vector<std::string> notes;     // counter resets, NICs gone, IRQs appeared...
};

struct Options {
  double interval_s = 1.0;
  std::string out_csv;            // "" = no CSV
  std::vector<std::string> nics;  // only these NICs; empty = all
  int pid = 0;                    // threads of this process; 0 = the calling process
  bool gpus = true;               // NVML (live root only)
  bool ethtool = true;            // driver counters (live root only)
  // The caller's host threads wait on GPUs (bench gpu, GPU campaigns): a thread that
  // spins in cudaStreamSynchronize is then read as a waiter, not as CPU work, even
  // when NVML shows no kernel running (copy-engine copies leave utilization at 0).
  bool host_waits_on_gpu = false;
  // Called on the sampler thread after each interval (the live table of `monitor`).
  // Exceptions it throws are caught and noted.
  std::function<void(const Interval&)> on_interval;
};

struct CpuSummary {
  int cpu = -1;
  double busy_pct = 0, user_pct = 0, system_pct = 0, softirq_pct = 0, irq_pct = 0;  // mean over the run
  double max_busy_pct = 0;  // busiest single interval
};

struct NicSummary {
  std::string name;
  std::map<std::string, std::uint64_t> totals;         // statistics counters, increase over the run
  std::map<std::string, std::uint64_t> driver_totals;  // driver counters that moved
  double rx_bytes_per_s = 0, tx_bytes_per_s = 0;       // mean over the run
  double max_rx_bytes_per_s = 0, max_tx_bytes_per_s = 0;
  double irq_per_s = 0;                                 // mean
  std::map<int, double> irq_per_s_by_cpu;               // mean, CPUs that served its IRQs
  bool driver_stats = false;                            // ethtool counters were readable
};

struct ThreadSummary {
  int tid = -1;
  std::string name;
  double cpu_s = 0;        // CPU time over the run
  double cpu_pct = 0;      // mean of one CPU
  double max_cpu_pct = 0;  // busiest interval
  int last_cpu = -1;
  // CPU time credited to the CPU it last ran on at the end of each interval: where
  // the thread's load landed, to tell whose work a busy CPU did.
  std::map<int, double> cpu_s_by_cpu;
};

struct GpuSummary {
  int index = -1;
  int samples = 0;
  int max_temperature_c = -1;
  double max_power_w = -1, power_limit_w = -1;
  int min_sm_clock_mhz = -1, max_sm_clock_mhz = -1, min_mem_clock_mhz = -1, max_mem_clock_mhz = -1;
  // Samples with each harmful throttle reason (power_cap, sw_thermal, hw_slowdown...).
  std::map<std::string, int> throttled_samples;
  // NVML utilization.gpu (share of time a kernel ran) over the samples that had it;
  // -1 when none did.
  double mean_utilization_pct = -1;
  int max_utilization_pct = -1;
};

struct Summary {
  double interval_s = 0;
  int samples = 0;
  double duration_s = 0;
  std::int64_t start_realtime_ns = 0;
  std::vector<CpuSummary> cpus;  // every CPU, by id
  double softirq_pct_all = 0;    // softirq share of all CPU time of all CPUs
  double busy_pct_all = 0;
  std::vector<NicSummary> nics;
  std::vector<ThreadSummary> threads;
  std::vector<GpuSummary> gpus;
  std::vector<std::string> notes;  // deduplicated
  double monitor_cpu_s = 0;        // CPU time of the sampler thread itself
  double monitor_cpu_ns_per_sample = 0;
  bool host_waits_on_gpu = false;  // Options::host_waits_on_gpu of the run
};

class Sampler {
 public:
  Sampler(FsRoot fs, Options opts);
  ~Sampler();  // stops the thread if still running; never throws
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Discovers NICs and their IRQs, opens the CSV, takes the first sample and starts
  // the thread. Throws Error only when the CSV cannot be written.
  void start();
  // Takes the last sample, joins the thread, closes the CSV. Idempotent; never throws.
  Summary stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The "monitor" object of a run's JSON: busiest CPUs, softirq share, IRQ rates per
// NIC, drops/errors seen, throttling seen, thread use, notes, verdicts.
nlohmann::json summary_to_json(const Summary& s, int busiest = 8);

// Plain sentences when the numbers say so, e.g. "CPU-bound on CPUs 8-9 (softirq 71%)",
// "NIC eth2 dropped 1.2k packets", "GPU 3 throttled: power cap (12 of 30 samples)".
// A busy CPU whose load is the monitored process's own threads, mostly user time, in
// a run where GPUs were busy (or Summary::host_waits_on_gpu) is a host thread
// spin-waiting on the GPU, not CPU-bound: "host thread p2pscope spin-waits on the GPU
// on CPU 4 (user 77%, system 21%): not a CPU bottleneck". Empty when nothing stands out.
std::vector<std::string> verdict_lines(const Summary& s);

// 1234 -> "1.2k", 5600000 -> "5.6M"; below 1000 the integer.
std::string format_count(double n);

// ---- `--monitor` for any command ----------------------------------------------------
// What a MonitorSession hands back at stop().
struct SessionResult {
  bool ok = false;           // the sampler ran; false: `json` holds {"error": why}
  nlohmann::json json;       // summary_to_json() plus "csv" (the file's path)
  std::vector<std::string> verdicts;  // verdict_lines(), empty when nothing stands out
  std::vector<std::string> notes;     // counter resets, NICs gone, no driver counters...
  std::string csv_path;               // "" when no CSV was written
  // Lines for a command's printed output: "monitor: <verdict>" each, then one line
  // "monitor: N samples over T s, wrote <csv>" (or why the monitor did not run).
  std::vector<std::string> lines() const;
};

// RAII sampler for one run: construction starts it (one sample at once, one per
// interval), stop() or the destructor ends it (one sample at the end). Writes
// <out_dir>/monitor.csv (out_dir is created). Never throws and never disturbs the
// run it watches: a monitor that cannot start (unwritable directory, bad interval)
// records why in the result. Samples the calling process's threads; not copyable;
// construct and stop() on the same thread.
//
//   monitor::MonitorSession mon(out_dir, 1.0);   // before the measured work
//   ... run ...
//   const auto res = mon.stop();
//   doc["monitor"] = res.json;
//   for (const auto& l : res.lines()) std::fprintf(stderr, "%s\n", l.c_str());
class MonitorSession {
 public:
  explicit MonitorSession(const std::string& out_dir, double interval_s = 1.0, Options opts = {}) noexcept;
  ~MonitorSession();
  MonitorSession(const MonitorSession&) = delete;
  MonitorSession& operator=(const MonitorSession&) = delete;
  // Idempotent; later calls return the same result.
  SessionResult stop() noexcept;
  const std::string& csv_path() const { return csv_path_; }

 private:
  std::unique_ptr<Sampler> sampler_;
  std::string csv_path_, error_;
  bool stopped_ = false;
  SessionResult result_;
};

// "--monitor-interval" text ("1s", "500ms", "0.2") in seconds; UsageError naming the
// option when it does not parse, is below 10 ms (the monitor would cost too much) or
// above 1 h.
double parse_monitor_interval(const std::string& text, const char* option = "--monitor-interval");

}  // namespace p2pscope::monitor
