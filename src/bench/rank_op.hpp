#pragma once
// The control path of one blocking op (or batch of ops) among ranks, one process per GPU
// (the nccl ranks backend): what crosses the bootstrap per op, kept apart from the GPU
// work so that a CPU test can count it (tests/unit/tcp/test_rank_op.cpp).
//
// The ranks that take part run their side; each side starts with a small exchange
// between the two GPUs, so the sides meet on the device and no bootstrap barrier is
// needed. Then one gather of a fixed-size record carries each side's times to rank 0,
// the only rank that reads them (the others serve rank 0's campaign). Driven by rank 0
// (driven_backend.hpp), an op or a batch of ops costs each peer kFramesPerRankOp frames,
// one round trip: rank 0's command, the peer's record. (It was 5 frames per op, and a
// batch of k ops was announced op by op: 5k, each of them waiting out Nagle.)
#include <cmath>
#include <cstdint>
#include <functional>

#include "p2pscope/backend.hpp"
#include "p2pscope/bootstrap.hpp"

namespace p2pscope::bench {

struct SideTiming {
  std::int64_t host_start_ns = 0, host_end_ns = 0;  // this rank's CLOCK_MONOTONIC
  double device_ns = NAN;                           // the timed part on this rank's GPU
  std::int64_t device_start_ns = -1, device_end_ns = -1;  // this GPU's timer; -1: none
};

inline constexpr int kFramesPerRankOp = 2;  // per peer and op (or batch), rank 0 driving

// Collective. src and dst run `my_side` (the others skip it). Rank 0 returns the op's
// OpTiming: host and device stamps of `clock_rank` (host times of the same host compare;
// across hosts, the clock rank's own host clock is what its GPU's clock map uses), the
// device duration the later of the two sides', the host duration the longer one. The
// other ranks return their own side's times (empty where they took no part).
OpTiming op_among_ranks(Bootstrap& boot, int src, int dst, int clock_rank, const std::function<SideTiming()>& my_side);

}  // namespace p2pscope::bench
