#pragma once
// `bench nccl --op ...`: one NCCL collective, timed as nccl-tests times it, output
// checked on the host. nccl-tests' method (src/common.cu, BenchTime): one op and a
// wait, a barrier, then `iters` ops issued back to back on every rank's stream, a wait
// for every stream, and the host time over the whole span divided by iters (the mean
// over the ranks with one process per GPU); out-of-place, then in-place. That span is
// the figure (time, algbw, busbw). As an extra, a second pass records events around
// each iteration on every rank's stream (work held behind a spin kernel until all is
// queued) for the distribution: one sample per iteration, the mean of the ranks'.
// Sizes and bandwidths as nccl-tests counts them (formulas.hpp). Two ways to run:
// one process driving every GPU (run_collective), or one process per GPU as mpirun,
// srun or torchrun start it (make_collective_ranks).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/formulas.hpp"
#include "bench/nccl_types.hpp"

namespace p2pscope {
class Bootstrap;
}

namespace p2pscope::bench {

struct CollectiveSpec {
  NcclOp op = NcclOp::allreduce;
  NcclType type = NcclType::float32;
  std::vector<int> gpus;    // one process: the GPUs, one rank each (ignored with ranks)
  std::uint64_t bytes = 0;  // nccl-tests' S, rounded down to a multiple of (element size x n)
  int warmup = 5, iters = 20;
  bool in_place = true;       // also time the in-place variant (ops that have one)
  bool per_iteration = true;  // the event pass for the distribution (off: span only)
  bool check = true;          // read every output back and check it (nccl-tests' -c)
  // nccl-tests' span taken this many times, the median kept: one OS hiccup in a span of
  // 20 host-bound iterations (small sizes) moved it by 2-8x on a shared 64-core host.
  int spans = 1;
};


struct CollectiveResult {
  std::uint64_t bytes = 0;  // S actually used
  double span_ns = 0;            // nccl-tests' time: out-of-place span / iters (mean of ranks; median of spans)
  std::vector<double> spans_ns;  // each span taken (mean of ranks), when spans > 1
  double span_in_place_ns = -1;  // the same in place; < 0 when not measured
  std::vector<double> elapsed_ns;               // one sample per iteration (the event pass)
  std::vector<std::vector<double>> by_rank_ns;  // one process per GPU: each rank's own samples
  std::int64_t first_bad = -1;  // element index of the first wrong output, -1 when right
  int bad_rank = -1;
  bool held_start = true;  // false: too many ops to hold behind the spin kernel
};

class CollectiveRanks;
bool nccl_collectives_built();
// Throws UsageError when NCCL is not built in, Error on NCCL/CUDA failures.
CollectiveResult run_collective(const CollectiveSpec& spec);

// One process driving `gpus`, one rank each, its communicators kept across calls (a
// sweep, several ops). Throws UsageError when NCCL is not built in.
std::unique_ptr<CollectiveRanks> make_local_collectives(const std::vector<int>& gpus);

// One rank of a one-process-per-GPU run. Every rank calls run() with the same spec
// and gets the same result: each iteration's sample is the mean of the ranks' times
// (nccl-tests' default), each rank's own times in by_rank_ns.
// A rank that dies ends the others' run() with an Error naming it.
class CollectiveRanks {
 public:
  virtual ~CollectiveRanks() = default;
  virtual int ranks() const = 0;
  virtual int rank() const = 0;
  virtual std::string rank_name(int r) const = 0;  // "rank 1 GPU 0 (NVIDIA H200, bus, host h)"
  virtual CollectiveResult run(const CollectiveSpec& spec) = 0;
  // One process driving several GPUs: those GPUs (the result's gpus, no rank names);
  // empty for one rank of a launch.
  virtual std::vector<int> local_gpus() const { return {}; }
};
// Collective over the bootstrap's ranks; this one drives GPU rank_device (modulo
// the visible GPUs). Throws UsageError when NCCL is not built in.
std::unique_ptr<CollectiveRanks> make_collective_ranks(std::shared_ptr<Bootstrap> boot, int rank_device);

}  // namespace p2pscope::bench
