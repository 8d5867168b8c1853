#pragma once
// `bench nccl --op ...`: one NCCL collective, timed like the point-to-point batches
// (blocking start, events, one sample per iteration), output checked on the host.
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
};

struct CollectiveResult {
  std::uint64_t bytes = 0;  // S actually used
  std::vector<double> elapsed_ns;               // one sample per iteration
  std::vector<std::vector<double>> by_rank_ns;  // one process per GPU: each rank's own samples
  std::int64_t first_bad = -1;  // element index of the first wrong output, -1 when right
  int bad_rank = -1;
  bool held_start = true;  // false: too many ops to hold behind the spin kernel
};

bool nccl_collectives_built();
// Throws UsageError when NCCL is not built in, Error on NCCL/CUDA failures.
CollectiveResult run_collective(const CollectiveSpec& spec);

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
};
// Collective over the bootstrap's ranks; this one drives GPU rank_device (modulo
// the visible GPUs). Throws UsageError when NCCL is not built in.
std::unique_ptr<CollectiveRanks> make_collective_ranks(std::shared_ptr<Bootstrap> boot, int rank_device);

}  // namespace p2pscope::bench
