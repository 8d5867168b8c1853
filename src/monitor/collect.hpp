#pragma once
// The monitor's pieces below the Sampler: raw snapshots read through an FsRoot, the
// difference of two snapshots (an Interval), its CSV rows, and the run summary.
// Tests drive these directly with fixture trees of successive snapshots.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "monitor/ethtool.hpp"
#include "monitor/fast_read.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/monitor.hpp"
#include "p2pscope/topo.hpp"

namespace p2pscope::monitor {

// One "cpuN" line of /proc/stat, in USER_HZ ticks.
struct CpuTimes {
  int cpu = -1;
  std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  std::uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};
// Per-CPU lines only (not the aggregate "cpu" line); malformed lines are skipped.
std::vector<CpuTimes> parse_proc_stat(const std::string& text);

struct ThreadTimes {
  int tid = -1;
  std::string name;
  std::uint64_t utime = 0, stime = 0;  // ticks
  int last_cpu = -1;
};
// One /proc/<pid>/task/<tid>/stat line; nullopt when malformed. The name is in
// parentheses and may hold spaces and ')', so fields are counted after the last ')'.
std::optional<ThreadTimes> parse_task_stat(const std::string& text);

struct NicCounters {
  std::string name;
  std::map<std::string, std::uint64_t> stats;  // statistics/<counter>
  std::vector<std::uint64_t> driver;           // ethtool values, names in Collector
  bool driver_ok = false;
};

struct Snapshot {
  std::int64_t mono_ns = 0, real_ns = 0;
  std::vector<CpuTimes> cpus;
  topo::InterruptTable interrupts;  // Irq::cpu_columns empty: all lines share interrupts.cpu_columns
  bool have_interrupts = false;
  std::vector<NicCounters> nics;
  std::vector<ThreadTimes> threads;
  std::vector<nvml::GpuSample> gpus;
  std::vector<std::string> notes;  // read failures of this snapshot
};

// Reads snapshots. Built once (NIC discovery, IRQ->NIC map, ethtool names, NVML);
// collect() may then be called with the same or another root (tests pass the next
// snapshot's tree). Never throws from collect(): failures become notes.
class Collector {
 public:
  Collector(const FsRoot& fs, const Options& opts);
  ~Collector();
  Snapshot collect(const FsRoot& fs, std::int64_t mono_ns, std::int64_t real_ns);
  // NIC owning an IRQ ("" none, or a NIC left out by Options::nics); IRQs first seen
  // later are matched by name.
  std::string nic_of_irq(const topo::Irq& irq);
  const std::vector<std::string>& setup_notes() const { return setup_notes_; }
  const std::vector<std::string>& driver_names(const std::string& nic) const;
  // Sets the GPUs to sample (tests give none; the Sampler loads NVML).
  void set_nvml(std::unique_ptr<nvml::Nvml> n);
  // Driver counter names of a NIC, as the ethtool ioctl would give them: for tests,
  // whose captured trees have no driver to ask.
  void set_driver_names(const std::string& nic, std::vector<std::string> names) { driver_names_[nic] = std::move(names); }

 private:
  bool wanted(const std::string& nic) const;
  Options opts_;
  std::map<int, std::string> irq_nic_;
  std::map<std::string, std::string> nic_pci_;  // name -> PCI address ("" virtual)
  std::map<std::string, std::vector<std::string>> driver_names_;
  std::set<std::string> no_driver_stats_;
  std::unique_ptr<EthtoolReader> ethtool_;
  std::unique_ptr<nvml::Nvml> nvml_;
  std::vector<std::string> setup_notes_;
  std::string task_dir_;
  std::string buf_;  // reused by collect(): no allocation per file once grown
  std::unique_ptr<FileCache> files_;  // the root's files, kept open between samples when live
};

// Rates and shares between two snapshots; notes for counters that went backwards
// (treated as a reset: the increase is the new value, as Prometheus does), NICs
// that disappeared or appeared, IRQ lines that appeared or vanished.
Interval diff(const Snapshot& a, const Snapshot& b, Collector& c, long ticks_per_s);

// Long-format rows "time_ns,source,key,value\n" of an interval (non-zero IRQs and
// driver counters only, to keep the file small on big machines).
void append_csv_rows(const Interval& iv, std::string& out);
inline constexpr const char* kCsvHeader = "time_ns,source,key,value";

inline constexpr double kCpuBoundPct = 90;  // mean busy share over the run that makes a CPU "busy"
inline constexpr const char* kMonitorThread = "p2ps-monitor";

// The busy CPUs of a run, split: those whose load is the monitored process's threads
// spin-waiting on a GPU, and the rest (CPU-bound). See spin_wait.cpp for the rule.
struct BusyCpus {
  std::vector<int> spin_wait, bound;  // CPU ids, ascending
  std::vector<int> waiter_tids;       // threads that explain the spin_wait CPUs
  std::vector<std::string> waiter_names;  // their names, distinct, in tid order
};
BusyCpus classify_busy_cpus(const Summary& s);

// Accumulates intervals into the run summary.
class SummaryBuilder {
 public:
  void add(const Interval& iv);
  void add_gpus(const std::vector<nvml::GpuSample>& gpus);  // the first sample's
  void note(const std::string& n);
  Summary finish(double interval_s, std::int64_t start_realtime_ns) const;

 private:
  struct CpuAcc {
    double user = 0, system = 0, softirq = 0, irq = 0, busy = 0, weight = 0, max_busy = 0;
  };
  struct NicAcc {
    std::map<std::string, std::uint64_t> totals, driver;
    double seconds = 0, max_rx = 0, max_tx = 0, irq_count = 0;
    std::map<int, double> irq_by_cpu;  // counts
  };
  struct ThreadAcc {
    std::string name;
    double cpu_s = 0, seconds = 0, max_pct = 0;
    int last_cpu = -1;
    std::map<int, double> cpu_s_by_cpu;
  };
  struct GpuUtilAcc {
    double sum = 0;
    int n = 0;
  };
  std::map<int, CpuAcc> cpus_;
  std::map<std::string, NicAcc> nics_;
  std::map<int, ThreadAcc> threads_;
  std::map<int, GpuSummary> gpus_;
  std::map<int, GpuUtilAcc> gpu_util_;
  std::vector<std::string> notes_;
  std::set<std::string> seen_notes_;
  double seconds_ = 0;
  int intervals_ = 0;
  std::set<std::string> nics_with_driver_stats_;

 public:
  void mark_driver_stats(const std::string& nic) { nics_with_driver_stats_.insert(nic); }
};

}  // namespace p2pscope::monitor
