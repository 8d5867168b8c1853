// `p2pscope bench nccl --op ...`: NCCL collectives with nccl-tests' algbw and busbw,
// output checked. One process driving the chosen GPUs, or, under mpirun, srun or
// torchrun, one process per GPU (every rank measures, rank 0 reports). A size that
// fails (a dead rank, an NCCL error) stops the sweep, but the sizes measured before
// it are still written, with the reason.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "bench/formulas.hpp"
#include "bench/nccl_collective.hpp"
#include "bench_common.hpp"
#include "progress.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::app {
namespace {

struct NcclOptions : BenchCommon {
  std::string op = "allreduce", dtype = "float", gpus;
};

// One process: the GPUs of --gpus (default all), checked against those there are.
std::vector<int> choose_gpus(const std::string& list) {
  const auto rt = gpu::runtime_info();
  if (rt.device_count < 1) throw Error("bench nccl: no GPU: " + rt.why_no_gpu);
  std::vector<int> gpus;
  if (list.empty()) {
    for (int d = 0; d < rt.device_count; ++d) gpus.push_back(d);
    return gpus;
  }
  gpus = parse_cpulist(list);
  for (int d : gpus)
    if (d >= rt.device_count)
      throw UsageError(fmt::format("--gpus names GPU {}, which does not exist: there are {} (0-{})", d, rt.device_count,
                                   rt.device_count - 1));
  return gpus;
}

void run_nccl(const NcclOptions& o, Context& ctx) {
  check_bench_common(o);
  bench::CollectiveSpec spec;
  spec.op = bench::parse_nccl_op(o.op);
  spec.type = bench::parse_nccl_type(o.dtype);
  spec.warmup = o.warmup;
  spec.iters = o.iters;
  const auto sizes = sizes_or(o.sizes, "8:1G");
  if (!bench::nccl_collectives_built()) bench::run_collective(spec);  // throws "not built in"

  // Under a launcher every rank drives one GPU and takes part in every call.
  const Launched launched = bring_up_ranks(ctx, [&o](const LaunchInfo& l) {
    if (!o.gpus.empty())
      throw UsageError(fmt::format("--gpus: this is rank {} of {} ({}), and under a launcher each rank drives the GPU of its "
                                   "local rank; choose the GPUs with CUDA_VISIBLE_DEVICES and their number with -np",
                                   l.rank, l.size, l.launcher));
  });
  const LaunchInfo& launch = launched.launch;
  std::unique_ptr<bench::CollectiveRanks> ranks;
  std::vector<std::string> rank_names;
  if (launched.boot) {
    ranks = bench::make_collective_ranks(launched.boot, launch.local_rank);
    for (int r = 0; r < ranks->ranks(); ++r) {
      spec.gpus.push_back(r);
      rank_names.push_back(ranks->rank_name(r));
    }
  } else {
    spec.gpus = choose_gpus(o.gpus);
  }
  const bool reporter = launch.rank == 0;
  const int n = static_cast<int>(spec.gpus.size());

  Table t({"size", "size_bytes", "count", "type", "time_us", "algbw_GBps", "busbw_GBps", "p5_us", "p50_us", "p95_us", "cv_pct", "check"});
  nlohmann::json rows = nlohmann::json::array();
  std::string failure, stopped;
  bool all_held = true;
  BenchCommon mon_opts = o;
  mon_opts.monitor = o.monitor && reporter;  // one monitor.csv per run, not one per rank
  mon_opts.host_waits_on_gpu = true;
  BenchMonitor mon(mon_opts);
  // Ctrl-C ends the sweep after the size in progress (one process only, as in bench gpu).
  std::optional<profile::InterruptFlag> interrupt;
  if (!ranks) interrupt.emplace("p2pscope bench nccl");
  bool interrupted = false;
  RowProgress progress("bench nccl", 2.0);
  for (std::uint64_t bytes : sizes) {
    if (interrupt && interrupt->flag()->load()) {
      interrupted = true;
      stopped = fmt::format("interrupted before {}: {} of {} sizes measured", format_size(bytes), rows.size(), sizes.size());
      break;
    }
    spec.bytes = bytes;
    bench::CollectiveResult res;
    try {
      res = ranks ? ranks->run(spec) : bench::run_collective(spec);
    } catch (const std::exception& e) {
      if (rows.empty()) throw;  // nothing measured yet: the plain error says it all
      stopped = fmt::format("stopped at {}: {}", format_size(bytes), e.what());
      break;
    }
    all_held = all_held && res.held_start;
    const Stats s = compute_stats(res.elapsed_ns);
    const double sec = s.median * 1e-9, S = static_cast<double>(res.bytes);
    const std::string check = res.first_bad < 0 ? "ok" : fmt::format("BAD rank {} @{}", res.bad_rank, res.first_bad);
    if (res.first_bad >= 0 && failure.empty())
      failure = fmt::format("{} at {}: rank {} ({}) holds a wrong value at element {}", bench::to_string(spec.op),
                            format_size(res.bytes), res.bad_rank,
                            ranks ? rank_names[static_cast<std::size_t>(res.bad_rank)]
                                  : fmt::format("GPU {}", spec.gpus[static_cast<std::size_t>(res.bad_rank)]),
                            res.first_bad);
    const std::string type = bench::to_string(spec.type);
    const std::uint64_t count = res.bytes / bench::type_size(spec.type);
    t.add_row({format_size_compact(res.bytes), std::to_string(res.bytes), std::to_string(count), type,
               fixed(s.median / 1e3, 2), fixed(bench::algbw_gbps(S, sec), 2), fixed(bench::busbw_gbps(spec.op, n, S, sec), 2),
               fixed(s.p5 / 1e3, 2), fixed(s.median / 1e3, 2), fixed(s.p95 / 1e3, 2), fixed(s.cv * 100, 1), check});
    rows.push_back({{"size_bytes", res.bytes}, {"count", count}, {"type", type},
                    {"time_ns", {{"median", s.median}, {"p5", s.p5}, {"p95", s.p95}, {"cv", s.cv}, {"n", s.n}}},
                    {"samples_ns", res.elapsed_ns}, {"algbw_GBps", bench::algbw_gbps(S, sec)},
                    {"busbw_GBps", bench::busbw_gbps(spec.op, n, S, sec)}, {"check", check}});
    if (!res.by_rank_ns.empty()) rows.back()["samples_ns_by_rank"] = res.by_rank_ns;
    if (reporter)
      progress(rows.size(), sizes.size(),
               fmt::format("{}: {} us, busbw {} GB/s", format_size(res.bytes), fixed(s.median / 1e3, 2),
                           fixed(bench::busbw_gbps(spec.op, n, S, sec), 2)));
  }
  if (!reporter) {  // rank 0 prints; the others only say what went wrong
    if (!stopped.empty()) throw Error(stopped);
    if (!failure.empty()) throw Error("data check failed: " + failure);
    return;
  }

  const std::string where =
      ranks ? fmt::format("{} ranks, one process per GPU ({}); a sample is the mean of the ranks' times (nccl-tests' default)", n, launch.launcher)
            : fmt::format("GPUs {}, {} ranks, one process", format_cpulist(spec.gpus), n);
  std::string what = fmt::format("{} of {} over {}, {} iterations after {} warmup, median first; {}", bench::to_string(spec.op),
                                 bench::to_string(spec.type), where,
                                 o.iters, o.warmup, bench::busbw_formula_text(spec.op));
  if (!all_held) what += "; no blocking start (too many queued ops: lower --iters)";
  std::string text;
  if (o.format == "json") {
    nlohmann::json j = {{"schema_version", kSchemaVersion}, {"op", bench::to_string(spec.op)},
                        {"dtype", bench::to_string(spec.type)}, {"gpus", spec.gpus},
                        {"ranks", n}, {"formula", bench::busbw_formula_text(spec.op)}, {"description", what},
                        {"data_ok", failure.empty()}, {"rows", rows}};
    j["launch"] = launch_json(launch, launched.rank_cpus);
    if (ranks) j["rank_gpus"] = rank_names;
    if (!stopped.empty()) j["stopped"] = stopped;
    if (interrupted) j["interrupted"] = true;
    add_metadata(j, ctx);
    mon.finish(&j);
    text = j.dump(2) + "\n";
  } else if (o.format == "csv") {
    text = t.to_csv();
  } else {
    text = "# p2pscope bench nccl: " + what + "\n";
    for (const auto& name : rank_names) text += "# " + name + "\n";
    text += t.to_text();
    if (!stopped.empty()) text += "# " + stopped + "\n";
  }
  mon.finish(nullptr);
  emit(text, o, "bench_nccl_" + bench::to_string(spec.op));
  if (interrupted) {
    std::cerr << "bench nccl: " << stopped << "; what was measured is reported\n";
    ctx.exit_code = 128 + interrupt->signal_number();
    return;
  }
  if (!stopped.empty()) throw Error(stopped);
  if (!failure.empty()) throw Error("data check failed: " + failure);
}

}  // namespace

void add_bench_nccl_command(CLI::App& bench, Context& ctx) {
  auto n = std::make_shared<NcclOptions>();
  auto* cn = bench.add_subcommand("nccl", "NCCL collectives over the GPUs, nccl-tests' algbw and busbw, output checked");
  cn->add_option("--op", n->op, "allreduce, allgather, reducescatter, alltoall or sendrecv")->capture_default_str();
  cn->add_option("--dtype", n->dtype, "element type: float, half, bfloat16, double, int8 or int32 (nccl-tests' -d)")
      ->capture_default_str();
  cn->add_option("--gpus", n->gpus, "GPU list, e.g. 0-3 (default: all; not under a launcher)");
  add_bench_common(*cn, *n, "sizes S in bytes as nccl-tests counts them, e.g. 8:1G; default 8:1G");
  cn->footer(
      "Examples:\n"
      "  p2pscope bench nccl --op allreduce --sizes 1M:1G --format json --out results/\n"
      "  p2pscope bench nccl --op allreduce --dtype bfloat16 --sizes 64M          # a training job's gradients\n"
      "  mpirun --bind-to none -np 8 p2pscope bench nccl --op allgather   # one process per GPU, like nccl-tests -g 1\n"
      "Under mpirun, srun or torchrun each rank drives the GPU of its local rank; the ranks meet as for `bench gpu`.");
  cn->callback([n, &ctx] { run_nccl(*n, ctx); });
}

}  // namespace p2pscope::app
