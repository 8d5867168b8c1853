#pragma once
// What `bench gpu` and `bench nccl` share: the common options, --monitor, output to
// stdout / FILE / DIR, run metadata, and the launcher bring-up with stderr for its lines.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bootstrap/bring_up.hpp"
#include "commands.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/monitor.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::app {

struct BenchCommon {
  std::string sizes, format = "text", out, monitor_interval = "1s";
  int warmup = 5, iters = 20;
  bool monitor = false, force = false;
  bool host_waits_on_gpu = false;  // set once the backend is known: not for `host`
};
// `nccl_tests_names`: --iters and --warmup answer to nccl-tests' -n/--iters and
// -w/--warmup_iters as well.
void add_bench_common(CLI::App& c, BenchCommon& o, const char* sizes_help, bool nccl_tests_names = false);
// The formats every bench offers, in the order their --format help names them.
inline constexpr std::initializer_list<out::Format> kBenchFormats{out::Format::text, out::Format::csv,
                                                                  out::Format::json};
// --format's printer, chosen once; UsageError naming the flag and the choices.
out::Output bench_output(const std::string& format);
// Throws UsageError; returns --format's printer, chosen once (text, csv or json).
out::Output check_bench_common(const BenchCommon& c);
std::vector<std::uint64_t> sizes_or(const std::string& text, const std::string& fallback);

// --monitor: the system monitor samples while the benchmark runs; monitor.csv goes
// next to the output (--out DIR, or FILE's directory), else into ./p2pscope-out.
class BenchMonitor {
 public:
  explicit BenchMonitor(const BenchCommon& c);
  // Adds "monitor" to the JSON (when given) and prints the verdict lines to stderr; once.
  void finish(nlohmann::json* j);
 private:
  std::optional<monitor::MonitorSession> session_;
  bool done_ = false;
};

// The benches' JSON document: schema_version, run_metadata (with CUDA/NCCL versions),
// then `body` with the topology this ran on (out::measured_json).
out::JsonDoc bench_json(nlohmann::json body, const Context& ctx);
// The topology for bench_json, read in a thread of its own from here on: it took 0.25 s
// of each bench process on 4 x H200 (sysfs and the GPUs' CUDA facts), after the
// measurement, where the main job's steps paid it one after the other (issue 30). A
// bench starts it before its set-up (CUDA, buffers, NCCL's communicators) and waits
// for it before timing where that set-up may be shorter (wait_topology_discovery), so
// nothing runs beside a timed op. bench_json takes the result, or reads it then.
void start_topology_discovery();
void wait_topology_discovery();
// `text` (as `o` printed it) to stdout, --out FILE, or DIR (an existing directory or a
// path ending in '/'): <stem>_<time>.<the format's extension> in it.
void emit(const std::string& text, const out::Output& o, const BenchCommon& c, const std::string& stem);

// The launcher bring-up every command calls (bootstrap/bring_up.hpp): rank 0's
// refusals and warnings go to stderr. `admit` is the command's own refusal under a
// launcher (one_process_only for commands that drive everything from one process).
// `one_cpu_cost`: what a rank bound to one CPU costs the command (empty: NCCL's proxy threads).
Launched bring_up_ranks(const Context& ctx, std::function<void(const LaunchInfo&)> admit,
                        const std::string& one_cpu_cost = "");
// The JSON "launch" object both benches write.
nlohmann::json launch_json(const LaunchInfo& launch, const std::vector<std::string>& rank_cpus);

}  // namespace p2pscope::app
