#pragma once
// The host<->GPU clock sync: a one-thread kernel answers host pokes through mapped
// host memory with %globaltimer readings. Each reading lies between the host's write
// of the poke and its seeing the answer (one PCIe round trip, ~1-2 us), a bound that
// holds by causality, where the old "midpoint of a kernel launch + synchronize"
// estimate was biased by the launch's asymmetry (tens of microseconds).
#include <cuda_runtime_api.h>

#include "p2pscope/backend.hpp"

namespace p2pscope::bench::cuda {

// `words`: host-mapped pinned memory of at least kClockWords 64-bit words, used by one
// burst at a time. Runs `count` pokes on `stream` (of `device`, which must be current).
// A GPU that does not answer within a second yields the readings taken so far.
inline constexpr int kClockWords = 32;
TimerBurst poke_device_timer(int device, cudaStream_t stream, volatile unsigned long long* words, int count);

}  // namespace p2pscope::bench::cuda
