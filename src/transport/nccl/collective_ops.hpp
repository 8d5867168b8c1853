#pragma once
// The NCCL calls of one `bench nccl` collective, rank by rank; shapes, inputs and the
// output check are host code in bench/collective_check.hpp. Shared by the one-process
// run (all GPUs in one process) and the one-process-per-GPU run (collectives_ranks.cpp).
#include <nccl.h>

#include <utility>

#include "bench/collective_check.hpp"

namespace p2pscope::bench::nccl {

// Rank `rank`'s part of one call (inside a group when one process drives several ranks).
void issue_collective(const CollectiveShape& s, int rank, const void* in, void* out, ncclComm_t comm, cudaStream_t stream,
                      int device);
// nccl-tests' in-place buffers of rank r (send, recv): allgather sends from its own chunk
// of the output, reducescatter receives into its own chunk of the input, others use out.
std::pair<const void*, void*> in_place_buffers(const CollectiveShape& s, int r, void* in, void* out);

}  // namespace p2pscope::bench::nccl
