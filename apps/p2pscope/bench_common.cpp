// Shared by `bench gpu` and `bench nccl` (bench_common.hpp).
#include "bench_common.hpp"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>

#include <fmt/format.h>

#include "p2pscope/phase_trace.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/topo.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::app {

BenchMonitor::BenchMonitor(const BenchCommon& c) {
  if (!c.monitor) return;
  const double interval = monitor::parse_monitor_interval(c.monitor_interval);
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string dir = "p2pscope-out";
  if (!c.out.empty() && c.out != "-") {
    if (c.out.back() == '/' || fs::is_directory(c.out, ec)) dir = c.out;
    else dir = fs::path(c.out).parent_path().empty() ? "." : fs::path(c.out).parent_path().string();
  }
  monitor::Options mo;
  mo.host_waits_on_gpu = c.host_waits_on_gpu;  // the bench thread waits in cudaStreamSynchronize / NCCL
  session_.emplace(dir, interval, mo);
}

void BenchMonitor::finish(nlohmann::json* j) {
  if (!session_ || done_) return;
  done_ = true;
  const auto res = session_->stop();
  if (j) (*j)["monitor"] = res.json;
  for (const auto& l : res.lines()) std::cerr << l << "\n";
}

out::Output bench_output(const std::string& format) {
  const auto f = out::find_format(format, kBenchFormats);
  if (!f) throw UsageError("--format '" + format + "': use " + out::format_choices(kBenchFormats));
  return out::Output(*f);
}

out::Output check_bench_common(const BenchCommon& c) {
  out::Output output = bench_output(c.format);
  if (c.iters < 1) throw UsageError("--iters must be at least 1");
  if (c.warmup < 0) throw UsageError("--warmup must be 0 or more");
  return output;
}

namespace {
nlohmann::json discover_topology_json() {
  try {
    topo::Topology t = topo::discover(FsRoot("/"));
    gpu::enrich_with_cuda(t);
    return topo::to_json(t);
  } catch (const std::exception& e) {  // the measurement stands without it
    return {{"error", e.what()}};
  }
}
std::future<nlohmann::json>& topology_discovery() {
  static std::future<nlohmann::json> f;
  return f;
}
}  // namespace

void start_topology_discovery() {
  if (!topology_discovery().valid()) topology_discovery() = std::async(std::launch::async, discover_topology_json);
}

void wait_topology_discovery() {
  if (topology_discovery().valid()) topology_discovery().wait();
  trace_phase("topology read");
}

// schema_version, metadata (with CUDA/NCCL versions), then `body` and the topology this ran on.
out::JsonDoc bench_json(nlohmann::json body, const Context& ctx) {
  trace_phase("metadata: start");
  nlohmann::json meta = run_metadata(ctx.argv);
  meta["versions"] = gpu::to_json(gpu::runtime_info());
  body["topology"] = topology_discovery().valid() ? topology_discovery().get() : discover_topology_json();
  trace_phase("metadata: done");
  return out::measured_json(meta, body);
}

// --out FILE, or DIR (an existing directory or a path ending in '/'): a named file in it.
void emit(const std::string& text, const out::Output& o, const BenchCommon& c, const std::string& stem) {
  if (c.out.empty() || c.out == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  namespace fs = std::filesystem;
  fs::path p(c.out);
  std::error_code ec;
  if (c.out.back() == '/' || fs::is_directory(p, ec)) {
    fs::create_directories(p, ec);
    if (ec) throw Error("cannot create directory '" + c.out + "': " + ec.message());
    p /= fmt::format("{}_{}.{}", stem, compact_timestamp(realtime_ns()), o.extension());
  }
  write_file_atomic(p, text, c.force ? Replace::allow : Replace::refuse);
  std::cerr << "wrote " << p.string() << "\n";
}

std::vector<std::uint64_t> sizes_or(const std::string& text, const std::string& fallback) {
  auto v = parse_size_list(text.empty() ? fallback : text);
  if (v.empty()) throw UsageError("--sizes gave no sizes");
  return v;
}


void add_bench_common(CLI::App& c, BenchCommon& o, const char* sizes_help, bool nccl_tests_names) {
  c.add_option("--sizes", o.sizes, sizes_help);
  c.add_option(nccl_tests_names ? "-w,--warmup,--warmup_iters" : "--warmup", o.warmup, "untimed iterations first")
      ->capture_default_str();
  c.add_option(nccl_tests_names ? "-n,--iters" : "--iters", o.iters, "timed iterations, each one sample")
      ->capture_default_str();
  c.add_option("--format", o.format, "text, csv or json (json embeds run metadata and topology)")->capture_default_str();
  c.add_option("--out", o.out, "write to FILE, or into DIR (existing, or ending in /) under a dated name");
  c.add_flag("--force", o.force, "Replace the --out FILE if it exists");
  c.add_flag("--monitor", o.monitor, "sample CPUs, IRQs, NICs, threads and GPUs (NVML) during the run: monitor.csv "
                                     "beside --out (else ./p2pscope-out), a summary in the JSON, verdicts on stderr");
  c.add_option("--monitor-interval", o.monitor_interval, "--monitor's sampling interval")->capture_default_str();
}

Launched bring_up_ranks(const Context& ctx, std::function<void(const LaunchInfo&)> admit, const std::string& one_cpu_cost) {
  BringUpOptions o;
  o.one_cpu_cost = one_cpu_cost;
  o.argv = ctx.argv;
  o.admit = std::move(admit);
  o.log = [](const std::string& l) { std::fprintf(stderr, "p2pscope: %s\n", l.c_str()); };
  o.warn = [](const std::string& l) { std::fprintf(stderr, "%s\n", l.c_str()); };
  return bring_up(o);
}

nlohmann::json launch_json(const LaunchInfo& launch, const std::vector<std::string>& rank_cpus) {
  return {{"launcher", launch.launcher}, {"ranks", launch.size}, {"one_process_per_gpu", launch.multi_process()},
          {"rendezvous", launch.multi_process() ? fmt::format("{}:{}", launch.rendezvous_host, launch.rendezvous_port) : ""},
          {"cpus_per_rank", rank_cpus}};
}

}  // namespace p2pscope::app
