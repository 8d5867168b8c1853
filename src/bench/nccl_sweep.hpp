#pragma once
// `bench nccl` as data, the shape of bench/sweep.hpp: a spec in (one collective, a
// list of sizes, a stop flag, a progress callback), rows out with Stats and nccl-tests'
// algbw and busbw, the data check per size. Used by `bench nccl` and `predict
// --measure`; one process over a list of GPUs, or one rank of a launch. Nothing here
// prints.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/nccl_collective.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"

namespace p2pscope::bench {

struct NcclSweepRow;

struct NcclSweepSpec {
  CollectiveSpec collective;         // op, type, warmup, iters; gpus for one process; bytes unused
  std::vector<std::uint64_t> sizes;  // nccl-tests' S, in the order measured
  // Polled before each size: once set, the sweep ends there with the rows measured
  // (one process only: ranks stopping at different sizes would leave NCCL calls unmatched).
  const std::atomic<bool>* stop = nullptr;
  // Called after each size is measured (progress on long sweeps); may be empty.
  std::function<void(std::size_t done, std::size_t planned, const NcclSweepRow& row)> on_row;
  // Before the first size is timed: this many calls of it back to back, untimed. A
  // process's first NCCL calls are slow on the host side for tens of milliseconds (4 x
  // H100: the first op's small sizes took 27-208 us per 4-GPU iteration where the same
  // process later took 23-25 us, and 17-18 against 12-14 us on 2 GPUs), which the
  // per-size warm-up of nccl-tests does not cover. A count, not a time: every rank of a
  // launch must make the same calls. 0: none (the caller settled already).
  int settle_iters = 0;
  // With collective.spans K > 1, sizes up to this many bytes take their K spans in K
  // passes over the sweep instead of back to back: the host-bound sizes' spans meet
  // OS and launch disturbances that last tens of milliseconds (4 x H200: reducescatter
  // at 16 B and 32 B read 43 us where 64 B read 27.5, all three spans agreeing, the
  // GPU's own time 9.3 us in each), and spans taken a pass apart meet them at most
  // once. Each later pass is nccl-tests' method again: warm-up, one op and a wait,
  // the span. Larger sizes run long enough spans to average such a pause. 0: never.
  std::uint64_t spread_spans_max_bytes = 8ull << 20;
  // 0: every size runs collective.iters iterations a span (nccl-tests). Above 0: a size
  // whose span of collective.iters would last longer than this runs the fewest
  // iterations that still fill it (never fewer than kMinSpanIters, never more than
  // collective.iters), its time estimated from the size before it scaled by bytes.
  // The calibration and predict --measure use 20 ms: at 1 GiB on 2 x H200 an allreduce
  // iteration takes 3.25 ms and its spans agree within 0.1-1 %, so 20 iterations a span
  // (with 3 spans and the event pass, 85 calls, 0.28 s) bought no precision; the
  // calibration took 1.7 s of the main job's 29 there (issue 30).
  double span_target_ns = 0;
};

inline constexpr int kMinSpanIters = 5;
// The target of predict's NCCL calibration and of predict --measure (the same method on
// both sides of the comparison).
inline constexpr double kCalibrationSpanTargetNs = 20e6;

struct NcclSweepRow {
  std::uint64_t bytes = 0, count = 0;  // S as run (rounded to whole elements per rank), elements
  int iters = 0;                       // iterations a span at this size (NcclSweepSpec::span_target_ns)
  // The figure: nccl-tests' time per iteration (span of iters back-to-back ops / iters,
  // mean of the ranks), out-of-place; in place when measured (< 0: not).
  double span_ns = 0, span_in_place_ns = -1;
  std::vector<double> spans_ns;  // every span taken (--spans K > 1), in order
  bool spans_spread = false;     // those spans came from K passes over the sweep (spread_spans_max_bytes)
  Stats time_ns;  // the distribution: per iteration (event pass); with ranks, the mean of the ranks' times
  std::vector<double> samples_ns;
  std::vector<std::vector<double>> by_rank_ns;  // each rank's own samples
  double algbw_GBps = 0, busbw_GBps = 0;        // 1e9 B/s, of span_ns (formulas.hpp)
  double algbw_in_place_GBps = -1, busbw_in_place_GBps = -1;
  std::int64_t first_bad = -1;                  // element index of the first wrong output, -1 when right
  int bad_rank = -1;
  bool held_start = true;     // false: too many ops queued to hold behind the spin kernel
  std::string check() const;  // "ok" or "BAD rank R @E"
};

struct NcclSweepResult {
  NcclOp op = NcclOp::allreduce;
  NcclType type = NcclType::float32;
  int warmup = 0, iters = 0, ranks = 0;
  std::vector<int> gpus;                // one process: the GPUs; with ranks: 0..ranks-1
  std::vector<std::string> rank_names;  // with ranks: "rank 1 GPU 0 (...)"; empty for one process
  std::vector<NcclSweepRow> rows;
  // Why the sweep ended early ("" when it ran to the end): a failure after the first
  // size keeps the sizes measured, and the caller reports them and then fails.
  std::string stopped;
  bool interrupted = false;  // ended by NcclSweepSpec::stop (stopped says where)
  int settle_iters = 0;      // calls made before timing (NcclSweepSpec::settle_iters)
  double settle_s = 0;       // and the seconds they took
  bool all_held() const;
  std::string first_failure() const;  // "" when every check passed; else which rank held what
};

// Every size of spec through `ranks` (one rank of a launch: every rank calls this with
// the same spec) or, when null, through run_collective over spec.collective.gpus.
// Throws UsageError when NCCL is not built in or the spec is empty, and the first
// size's error as it is; a later failure ends the sweep with `stopped`.
NcclSweepResult run_nccl_sweep(const NcclSweepSpec& spec, CollectiveRanks* ranks = nullptr);

// nccl-tests-like rows: size, size_bytes, count, type, time_us, algbw_GBps, busbw_GBps
// (out-of-place), ip_time_us, ip_algbw_GBps, ip_busbw_GBps ("-" when not measured), then
// the event pass's p5/p50/p95_us and cv_pct, check. Typed (ns, bytes/s, a fraction);
// the columns name the units they are shown in.
out::ResultTable nccl_rows_table(const NcclSweepResult& r);
// The JSON rows: size_bytes, count, type, time_us (nccl-tests' out-of-place time),
// algbw_GBps, busbw_GBps, in_place {time_us, algbw_GBps, busbw_GBps} (null when not
// measured), per_iteration_ns {median, p5, p95, cv, n} and samples_ns (the event pass),
// check (+ samples_ns_by_rank).
nlohmann::json nccl_rows_json(const NcclSweepResult& r);

}  // namespace p2pscope::bench
