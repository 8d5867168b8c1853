// `p2pscope bench nccl --op ...`: NCCL collectives with nccl-tests' algbw and busbw,
// output checked. One process driving the chosen GPUs, or, under mpirun, srun or
// torchrun, one process per GPU (every rank measures, rank 0 reports). A size that
// fails (a dead rank, an NCCL error) stops the sweep, but the sizes measured before
// it are still written, with the reason.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "bench/formulas.hpp"
#include "bench/nccl_collective.hpp"
#include "bench/nccl_sweep.hpp"
#include "bench_common.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/signals.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "progress.hpp"

namespace p2pscope::app {
namespace {

struct NcclOptions : BenchCommon {
  std::string op = "allreduce", dtype = "float", gpus;
  std::string check = "on", in_place = "on";
  int spans = 1;
  int settle = 2000;
  // nccl-tests' words: -b/-e/-f make --sizes B:E:F, -g N is --gpus 0-(N-1), -o the
  // reduction (sum only); -c is --check.
  std::string minbytes, maxbytes, stepfactor, redop;
  int ngpus = 0;
};

// An on/off flag: on, off, 1 or 0 (nccl-tests writes -c 0).
bool on_off(const std::string& flag, const std::string& v) {
  if (v == "on" || v == "1") return true;
  if (v == "off" || v == "0") return false;
  throw UsageError(fmt::format("{} takes on or off (or 1 / 0), not '{}'", flag, v));
}

// nccl-tests' flags turned into ours, refusing what cannot be honoured (before any work).
void apply_nccl_tests_flags(NcclOptions& o) {
  const bool range = !o.minbytes.empty() || !o.maxbytes.empty() || !o.stepfactor.empty();
  if (range && !o.sizes.empty())
    throw UsageError("--sizes and nccl-tests' -b/-e/-f both give the sizes: use one (-b 8 -e 1G -f 2 is --sizes 8:1G:2)");
  if (range) {
    // nccl-tests' defaults: -b 32M -e 32M -f 2.
    const std::string b = o.minbytes.empty() ? "32M" : o.minbytes, e = o.maxbytes.empty() ? "32M" : o.maxbytes;
    const std::string f = o.stepfactor.empty() ? "2" : o.stepfactor;
    try {
      parse_size(b);
    } catch (const UsageError& x) {
      throw UsageError(std::string("-b/--minbytes: ") + x.what());
    }
    try {
      parse_size(e);
    } catch (const UsageError& x) {
      throw UsageError(std::string("-e/--maxbytes: ") + x.what());
    }
    if (parse_size(b) > parse_size(e))
      throw UsageError("-b/--minbytes " + b + " is larger than -e/--maxbytes " + e + " (nccl-tests' -e defaults to 32M)");
    o.sizes = b + ":" + e + ":" + f;
    try {
      parse_size_list(o.sizes);
    } catch (const UsageError& x) {
      throw UsageError(std::string("-f/--stepfactor: ") + x.what());
    }
  }
  if (o.ngpus != 0) {
    if (o.ngpus < 1) throw UsageError("-g/--ngpus must be 1 or more");
    if (!o.gpus.empty()) throw UsageError("-g/--ngpus and --gpus both choose the GPUs: use one (-g 4 is --gpus 0-3)");
    o.gpus = o.ngpus == 1 ? "0" : "0-" + std::to_string(o.ngpus - 1);
  }
  if (!o.redop.empty() && o.redop != "sum")
    throw UsageError("-o/--redop '" + o.redop + "': bench nccl reduces with sum only (nccl-tests' default); the "
                     "collective is --op (allreduce, allgather, reducescatter, alltoall, sendrecv)");
}

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

// What the numbers are: op, type, where it ran, iterations, the busbw formula.
std::string describe(const NcclOptions& o, const bench::NcclSweepResult& r, const LaunchInfo& launch) {
  const int n = r.ranks;
  const std::string where =
      r.rank_names.empty()
          ? fmt::format("GPUs {}, {} ranks, one process", format_cpulist(r.gpus), n)
          : fmt::format("{} ranks, one process per GPU ({}); a sample is the mean of the ranks' times (nccl-tests' default)",
                        n, launch.launcher);
  std::string what = fmt::format("{} of {} over {}; time = nccl-tests' method (one host-timed span of {} back-to-back "
                                 "iterations after {} warmup, divided by the iterations; in place beside); p5/p50/p95 "
                                 "from a second pass of per-iteration events; {}", bench::to_string(r.op),
                                 bench::to_string(r.type), where, o.iters, o.warmup, bench::busbw_formula_text(r.op));
  if (r.settle_iters > 0)
    what += fmt::format("; {} untimed calls of the first size first ({:.0f} ms): a process's first NCCL calls are slow "
                        "on the host side (--settle)", r.settle_iters, r.settle_s * 1e3);
  if (o.spans > 1) {
    bool spread = false;
    for (const auto& row : r.rows) spread = spread || row.spans_spread;
    what += fmt::format("; the median of {} spans{}", o.spans,
                        spread ? fmt::format(", taken in {} passes over the sizes up to {} (a host pause then meets one span "
                                             "of a size, not all of them)", o.spans, format_size(bench::NcclSweepSpec{}.spread_spans_max_bytes))
                               : "");
  }
  if (!r.all_held()) what += "; no blocking start (too many queued ops: lower --iters)";
  return what;
}

// One op's figures as JSON (the document adds metadata and the monitor once).
nlohmann::json op_json(const NcclOptions& o, const bench::NcclSweepResult& r, const Launched& launched) {
  nlohmann::json j = {{"op", bench::to_string(r.op)}, {"dtype", bench::to_string(r.type)}, {"gpus", r.gpus},
                      {"ranks", r.ranks}, {"formula", bench::busbw_formula_text(r.op)},
                      {"description", describe(o, r, launched.launch)}, {"data_ok", r.first_failure().empty()},
                      {"rows", bench::nccl_rows_json(r)}};
  if (!r.rank_names.empty()) j["rank_gpus"] = r.rank_names;
  if (r.settle_iters > 0) j["settle"] = {{"calls", r.settle_iters}, {"seconds", r.settle_s}};
  if (!r.stopped.empty()) j["stopped"] = r.stopped;
  if (r.interrupted) j["interrupted"] = true;
  return j;
}

// The results for every printer: for people a table per op (nccl-tests-like) with what
// it is; the rows (csv takes one op: run_nccl refuses several first); JSON with run
// metadata, built only when printed: one op's document as it always was, several under "ops".
out::Report nccl_report(const NcclOptions& o, const std::vector<bench::NcclSweepResult>& rs, const Launched& launched,
                        Context& ctx, BenchMonitor& mon) {
  out::Report rep;
  for (const auto& r : rs) {
    std::string head = "# p2pscope bench nccl: " + describe(o, r, launched.launch) + "\n";
    for (const auto& name : r.rank_names) head += "# " + name + "\n";
    rep.text.emplace_back(std::move(head));
    rep.tables.push_back(bench::nccl_rows_table(r));
    rep.text.emplace_back(rep.tables.back());
    if (!r.stopped.empty()) rep.text.emplace_back("# " + r.stopped + "\n");
  }
  rep.json = [&o, &rs, &launched, &ctx, &mon] {
    nlohmann::json j;
    if (rs.size() == 1) {
      j = op_json(o, rs.front(), launched);
    } else {
      j["ops"] = nlohmann::json::array();
      for (const auto& r : rs) j["ops"].push_back(op_json(o, r, launched));
    }
    j["launch"] = launch_json(launched.launch, launched.rank_cpus);
    mon.finish(&j);
    return bench_json(std::move(j), ctx);
  };
  return rep;
}

// --op: one op, a comma-separated list, or "all" (each once, in the order given).
std::vector<bench::NcclOp> parse_ops(const std::string& text) {
  std::vector<bench::NcclOp> ops;
  if (text == "all") {
    for (const auto& e : bench::kNcclOpNames) ops.push_back(e.value);
    return ops;
  }
  for (const std::string& item : split_list(text, "--op")) {
    const bench::NcclOp op = bench::parse_nccl_op(item);
    if (std::find(ops.begin(), ops.end(), op) != ops.end())
      throw UsageError("--op names " + item + " twice; give each op once");
    ops.push_back(op);
  }
  if (ops.empty()) throw UsageError("--op gave no op; e.g. --op allreduce or --op allreduce,allgather or --op all");
  return ops;
}

void run_nccl(NcclOptions& o, Context& ctx) {
  apply_nccl_tests_flags(o);
  const out::Output output = check_bench_common(o);
  bench::NcclSweepSpec spec;
  const std::vector<bench::NcclOp> ops = parse_ops(o.op);
  if (ops.size() > 1 && output.one_table())
    throw UsageError("--format " + std::string(output.name()) + " takes one --op; use json or text for several");
  spec.collective.op = ops.front();
  spec.collective.type = bench::parse_nccl_type(o.dtype);
  spec.collective.warmup = o.warmup;
  spec.collective.iters = o.iters;
  spec.collective.check = on_off("--check", o.check);
  spec.collective.in_place = on_off("--in-place", o.in_place);
  if (o.spans < 1 || o.spans > 100) throw UsageError("--spans takes 1 to 100");
  spec.collective.spans = o.spans;
  if (o.settle < 0 || o.settle > 1000000) throw UsageError("--settle takes 0 to 1000000 calls");
  spec.sizes = sizes_or(o.sizes, "8:1G");
  if (!bench::nccl_collectives_built()) bench::run_collective(spec.collective);  // "not built in", before any rank meets
  // Beside NCCL's communicators' set-up (1.3-2.1 s on 4 x H200, against 0.25 s for the
  // read), so it is done before the first op is timed.
  start_topology_discovery();

  // Under a launcher every rank drives one GPU and takes part in every call.
  const Launched launched = bring_up_ranks(ctx, [&o](const LaunchInfo& l) {
    if (!o.gpus.empty())
      throw UsageError(fmt::format("--gpus: this is rank {} of {} ({}), and under a launcher each rank drives the GPU of its "
                                   "local rank; choose the GPUs with CUDA_VISIBLE_DEVICES and their number with -np",
                                   l.rank, l.size, l.launcher));
  });
  std::unique_ptr<bench::CollectiveRanks> ranks;
  if (launched.boot) ranks = bench::make_collective_ranks(launched.boot, launched.launch.local_rank);
  else spec.collective.gpus = choose_gpus(o.gpus);
  // One process: one set of communicators for every op (NCCL's init is paid once).
  if (!ranks && ops.size() > 1) ranks = bench::make_local_collectives(spec.collective.gpus);
  BenchCommon mon_opts = o;
  mon_opts.monitor = o.monitor && launched.reporter();  // one monitor.csv per run, not one per rank
  mon_opts.host_waits_on_gpu = true;
  BenchMonitor mon(mon_opts);
  // Ctrl-C ends the sweep after the size in progress (one process only, as in bench gpu).
  std::optional<InterruptFlag> interrupt;
  if (!ranks) spec.stop = interrupt.emplace("p2pscope bench nccl").flag();
  RowProgress progress("bench nccl", 2.0);
  if (launched.reporter())
    spec.on_row = [&](std::size_t done, std::size_t planned, const bench::NcclSweepRow& row) {
      // One rank: busbw is 0 by nccl-tests' formula (nothing crosses a link), algbw is the figure.
      progress(done, planned, fmt::format("{}: {} us, algbw {} GB/s, busbw {} GB/s", format_size(row.bytes),
                                          fixed(row.span_ns / 1e3, 2), fixed(row.algbw_GBps, 2),
                                          fixed(row.busbw_GBps, 2)));
    };
  std::vector<bench::NcclSweepResult> results;
  for (const bench::NcclOp op : ops) {
    spec.collective.op = op;
    spec.settle_iters = results.empty() ? o.settle : 0;  // once per process, before the first op is timed
    results.push_back(bench::run_nccl_sweep(spec, ranks.get()));
    if (!results.back().stopped.empty()) break;  // a failure or Ctrl-C: report what was measured
  }
  const bench::NcclSweepResult& r = results.back();
  if (launched.reporter()) {  // rank 0 prints; the others only say what went wrong
    const std::string text = output.print(nccl_report(o, results, launched, ctx, mon));
    mon.finish(nullptr);
    emit(text, output, o, "bench_nccl_" + (ops.size() == 1 ? bench::to_string(r.op) : std::string("ops")));
  }
  if (r.interrupted && interrupt) {
    std::cerr << "bench nccl: " << r.stopped << "; what was measured is reported\n";
    ctx.exit_code = 128 + interrupt->signal_number();
    return;
  }
  if (!r.stopped.empty()) throw Error(r.stopped);
  for (const auto& x : results)
    if (!x.first_failure().empty()) throw Error("data check failed: " + x.first_failure());
}

}  // namespace

void add_bench_nccl_command(CLI::App& bench, Context& ctx) {
  auto n = std::make_shared<NcclOptions>();
  auto* cn = bench.add_subcommand("nccl", "NCCL collectives over the GPUs, nccl-tests' algbw and busbw, output checked");
  cn->add_option("--op", n->op, "allreduce, allgather, reducescatter, alltoall, broadcast or sendrecv; a comma list, or all")
      ->capture_default_str();
  cn->add_option("-d,--dtype,--datatype", n->dtype, "element type: float, half, bfloat16, double, int8 or int32 (nccl-tests' -d)")
      ->capture_default_str();
  cn->add_option("--gpus", n->gpus, "GPU list, e.g. 0-3 (default: all; not under a launcher)");
  cn->add_option("-c,--check", n->check, "read every output back and check it (nccl-tests' -c): on or off, 1 or 0")
      ->capture_default_str();
  cn->add_option("--in-place", n->in_place, "also time the in-place variant, as nccl-tests does: on or off")
      ->capture_default_str();
  cn->add_option("--spans", n->spans, "take nccl-tests' span this many times and keep the median (1 = nccl-tests "
                                      "exactly; 3 resists an OS hiccup at host-bound sizes: up to 8 MiB, one span per "
                                      "pass over the sizes)")
      ->capture_default_str();
  cn->add_option("--settle", n->settle, "untimed calls of the first size before anything is timed: a process's first "
                                        "NCCL calls are slow on the host side for tens of ms (0 = nccl-tests exactly)")
      ->capture_default_str();
  add_bench_common(*cn, *n, "sizes S in bytes as nccl-tests counts them: 8:1G (powers of two), 8:1G:4 (x4 steps), "
                            "a list 1M,64M; default 8:1G", true);
  cn->add_option("-b,--minbytes", n->minbytes, "nccl-tests' -b: smallest size (with -e and -f instead of --sizes)");
  cn->add_option("-e,--maxbytes", n->maxbytes, "nccl-tests' -e: largest size");
  cn->add_option("-f,--stepfactor", n->stepfactor, "nccl-tests' -f: size factor between steps (default 2)");
  cn->add_option("-g,--ngpus", n->ngpus, "nccl-tests' -g: use GPUs 0..N-1 from this process (as --gpus 0-(N-1))");
  cn->add_option("-o,--redop", n->redop, "nccl-tests' -o: reduction operation; sum only");
  cn->footer(
      "Examples:\n"
      "  p2pscope bench nccl --op allreduce --sizes 1M:1G --format json --out results/\n"
      "  p2pscope bench nccl --op allreduce --dtype bfloat16 --sizes 64M          # a training job's gradients\n"
      "  mpirun --bind-to none -np 8 p2pscope bench nccl --op allgather   # one process per GPU, like nccl-tests -g 1\n"
      "  p2pscope bench nccl -b 8 -e 1G -f 2 -g 4 -n 20 -w 5         # nccl-tests' all_reduce_perf flags work too\n"
      "Under mpirun, srun or torchrun each rank drives the GPU of its local rank; the ranks meet as for `bench gpu`.");
  cn->callback([n, &ctx] { run_nccl(*n, ctx); });
}

}  // namespace p2pscope::app
