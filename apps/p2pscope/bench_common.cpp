// Shared by `bench gpu` and `bench nccl` (bench_common.hpp).
#include "bench_common.hpp"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "p2pscope/affinity.hpp"
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

void check_bench_common(const BenchCommon& c) {
  if (c.format != "text" && c.format != "csv" && c.format != "json")
    throw UsageError("--format '" + c.format + "': use text, csv or json");
  if (c.iters < 1) throw UsageError("--iters must be at least 1");
  if (c.warmup < 0) throw UsageError("--warmup must be 0 or more");
}

// run_metadata (with CUDA/NCCL versions) and the topology this ran on.
void add_metadata(nlohmann::json& j, const Context& ctx) {
  nlohmann::json meta = run_metadata(ctx.argv);
  meta["versions"] = gpu::to_json(gpu::runtime_info());
  nlohmann::json topology;
  try {
    topo::Topology t = topo::discover(FsRoot("/"));
    gpu::enrich_with_cuda(t);
    topology = topo::to_json(t);
  } catch (const std::exception& e) {  // the measurement stands without it
    topology = {{"error", e.what()}};
  }
  j["run_metadata"] = std::move(meta);
  j["topology"] = std::move(topology);
}

// --out FILE, or DIR (an existing directory or a path ending in '/'): a named file in it.
void emit(const std::string& text, const BenchCommon& c, const std::string& stem) {
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
    const std::string ext = c.format == "text" ? "txt" : c.format;
    p /= fmt::format("{}_{}.{}", stem, compact_timestamp(realtime_ns()), ext);
  }
  write_file_atomic(p, text, c.force ? Replace::allow : Replace::refuse);
  std::cerr << "wrote " << p.string() << "\n";
}

std::vector<std::uint64_t> sizes_or(const std::string& text, const std::string& fallback) {
  auto v = parse_size_list(text.empty() ? fallback : text);
  if (v.empty()) throw UsageError("--sizes gave no sizes");
  return v;
}


void add_bench_common(CLI::App& c, BenchCommon& o, const char* sizes_help) {
  c.add_option("--sizes", o.sizes, sizes_help);
  c.add_option("--warmup", o.warmup, "untimed iterations first")->capture_default_str();
  c.add_option("--iters", o.iters, "timed iterations, each one sample")->capture_default_str();
  c.add_option("--format", o.format, "text, csv or json (json embeds run metadata and topology)")->capture_default_str();
  c.add_option("--out", o.out, "write to FILE, or into DIR (existing, or ending in /) under a dated name");
  c.add_flag("--force", o.force, "Replace the --out FILE if it exists");
  c.add_flag("--monitor", o.monitor, "sample CPUs, IRQs, NICs, threads and GPUs (NVML) during the run: monitor.csv "
                                     "beside --out (else ./p2pscope-out), a summary in the JSON, verdicts on stderr");
  c.add_option("--monitor-interval", o.monitor_interval, "--monitor's sampling interval")->capture_default_str();
}

void check_same_arguments(Bootstrap& boot, const std::vector<std::string>& argv) {
  // argv[0] is left out: ranks may name the binary by different paths.
  const nlohmann::json mine(argv.size() > 1 ? std::vector<std::string>(argv.begin() + 1, argv.end())
                                            : std::vector<std::string>{});
  const auto all = boot.allgather(mine.dump());
  const auto shown = [](const std::string& packed) {
    std::string line;
    for (const auto& a : nlohmann::json::parse(packed, nullptr, false)) line += (line.empty() ? "" : " ") + a.get<std::string>();
    return line;
  };
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw UsageError(fmt::format("the ranks were started with different arguments: rank 0 runs `{}` but rank {} runs "
                                   "`{}`; every rank must run the same command (each NCCL call is matched across ranks)",
                                   shown(all[0]), r, shown(all[r])));
}

std::vector<std::string> gather_rank_cpus(Bootstrap& boot) {
  auto rank_cpus = boot.allgather(format_cpulist(allowed_cpus()));
  if (boot.rank() == 0)
    for (std::size_t r = 0; r < rank_cpus.size(); ++r)
      if (parse_cpulist(rank_cpus[r]).size() < 2)
        std::cerr << fmt::format(
            "warning: rank {} may run only on CPU {} (mpirun binds each rank to one core by default): NCCL's proxy "
            "and network threads then share it with the thread waiting on the GPU; over NCCL's socket transport that "
            "measured 12x slower. Use mpirun --bind-to none (or numa).\n",
            r, rank_cpus[r]);
  return rank_cpus;
}

nlohmann::json launch_json(const LaunchInfo& launch, const std::vector<std::string>& rank_cpus) {
  return {{"launcher", launch.launcher}, {"ranks", launch.size}, {"one_process_per_gpu", launch.multi_process()},
          {"rendezvous", launch.multi_process() ? fmt::format("{}:{}", launch.rendezvous_host, launch.rendezvous_port) : ""},
          {"cpus_per_rank", rank_cpus}};
}

}  // namespace p2pscope::app
