#pragma once
// `bench nccl --op ...`: one NCCL collective over GPUs of one process, timed like the
// point-to-point batches (blocking start, events, one sample per iteration), output
// checked on the host. Sizes and bandwidths as nccl-tests counts them (formulas.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "bench/formulas.hpp"

namespace p2pscope::bench {

struct CollectiveSpec {
  NcclOp op = NcclOp::allreduce;
  std::vector<int> gpus;
  std::uint64_t bytes = 0;  // nccl-tests' S (float32 elements, rounded down to a multiple of 4 x n)
  int warmup = 5, iters = 20;
};

struct CollectiveResult {
  std::uint64_t bytes = 0;  // S actually used
  std::vector<double> elapsed_ns;
  std::int64_t first_bad = -1;  // element index of the first wrong output, -1 when right
  int bad_rank = -1;
};

bool nccl_collectives_built();
// Throws UsageError when NCCL is not built in, Error on NCCL/CUDA failures.
CollectiveResult run_collective(const CollectiveSpec& spec);

}  // namespace p2pscope::bench
