#pragma once
// The values `bench nccl` puts in each rank's input and expects in each output, as
// inline functions that both the host check (collective_check.cpp) and the GPU check
// (transport/nccl/gpu_check.cu) call: one formula for both processors, so the two
// checks cannot disagree. Compiled as host code here and as __host__ __device__ by nvcc.
#include <cstdint>

#if defined(__CUDACC__)
#define P2P_HOST_DEVICE __host__ __device__
#else
#define P2P_HOST_DEVICE
#endif

namespace p2pscope::bench::values {

// NcclOp's order (bench/formulas.hpp); collective_check.cpp asserts that they agree.
enum Op : int { allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv };

P2P_HOST_DEVICE inline bool reduces(int op) { return op == allreduce || op == reducescatter; }

// Rank `rank`'s input element i: for reductions 1..3 (sums stay small), else 1..97
// and different for every rank that holds it, so a chunk put in the wrong place shows.
P2P_HOST_DEVICE inline std::int64_t input_value(int op, int rank, std::uint64_t i) {
  if (reduces(op)) return 1 + static_cast<std::int64_t>((static_cast<std::uint64_t>(rank) + i) % 3);
  return 1 + static_cast<std::int64_t>((static_cast<std::uint64_t>(rank) * 7 + i) % 97);
}

// A reduction's input depends on (rank + i) % 3 only, so its sum over the ranks takes
// three values, one per phase.
struct Sums {
  std::int64_t by_phase[3] = {0, 0, 0};
};
P2P_HOST_DEVICE inline Sums reduction_sums(int op, int ranks) {
  Sums s;
  for (int p = 0; p < 3; ++p)
    for (int q = 0; q < ranks; ++q) s.by_phase[p] += input_value(op, q, static_cast<std::uint64_t>(p));
  return s;
}

// The value element j of rank r's output must hold (n ranks, `chunk` elements per rank).
P2P_HOST_DEVICE inline std::int64_t output_value(int op, int n, int r, std::uint64_t chunk, const Sums& sums,
                                                 std::uint64_t j) {
  const auto ur = static_cast<std::uint64_t>(r);
  switch (op) {
    case allreduce: return sums.by_phase[j % 3];
    case reducescatter: return sums.by_phase[(ur * chunk + j) % 3];
    case allgather: return input_value(op, static_cast<int>(j / chunk), j % chunk);
    case alltoall: return input_value(op, static_cast<int>(j / chunk), ur * chunk + j % chunk);
    case broadcast: return input_value(op, 0, j);
    default: return input_value(op, (r + n - 1) % n, j);  // sendrecv: from the rank before
  }
}

}  // namespace p2pscope::bench::values
