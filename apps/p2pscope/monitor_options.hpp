#pragma once
// `--monitor` and `--monitor-interval` for any command (bench tcp, sweep tcp, profile,
// bench gpu): the options, their check before the run, and how the result is shown.
// The sampler itself is monitor::MonitorSession (include/p2pscope/monitor.hpp).
#include <cstdio>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "p2pscope/clock.hpp"
#include "p2pscope/monitor.hpp"

namespace p2pscope::app {

struct MonitorCliOptions {
  bool enabled = false;
  std::string interval = "1s";
  std::string dir;  // only for commands without an output directory of their own

  // with_dir: also offer --monitor-dir (bench tcp writes nothing else to disk).
  void add(CLI::App& c, bool with_dir) {
    c.add_flag("--monitor", enabled,
               "sample CPUs, IRQs, NICs, threads and GPUs during the run: monitor.csv, a summary and verdicts");
    c.add_option("--monitor-interval", interval, "sampling interval of --monitor (10ms or more)")->capture_default_str();
    if (with_dir)
      c.add_option("--monitor-dir", dir, "directory for monitor.csv (default p2pscope-out/<command>-<time>/)");
  }

  // Seconds, checked before anything runs (UsageError when bad).
  double interval_s() const { return monitor::parse_monitor_interval(interval); }

  // --monitor-dir, or p2pscope-out/<tag>-<time>.
  std::string dir_or_default(const std::string& tag) const {
    return dir.empty() ? (std::filesystem::path("p2pscope-out") / (tag + "-" + compact_timestamp(realtime_ns()))).string()
                       : dir;
  }
};

// Verdicts and the one-line tally ("monitor: ..."), one per line, to `out`.
inline void print_monitor_lines(const monitor::SessionResult& r, std::FILE* out) {
  for (const auto& line : r.lines()) std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

}  // namespace p2pscope::app
