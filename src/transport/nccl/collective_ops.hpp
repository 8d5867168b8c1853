#pragma once
// The NCCL calls of one `bench nccl` collective, rank by rank; shapes, inputs and the
// output check are host code in bench/collective_check.hpp. Shared by the one-process
// run (all GPUs in one process) and the one-process-per-GPU run (collectives_ranks.cpp).
#include <nccl.h>

#include "bench/collective_check.hpp"

namespace p2pscope::bench::nccl {

// Rank `rank`'s part of one call (inside a group when one process drives several ranks).
void issue_collective(const CollectiveShape& s, int rank, const void* in, void* out, ncclComm_t comm, cudaStream_t stream,
                      int device);

}  // namespace p2pscope::bench::nccl
