#pragma once
// How the ce backend cuts one copy into slices (ce_copy.hpp), kept free of CUDA so
// CI tests it: whole 64 KiB blocks per slice, the last taking what is left, slices
// on the source's and the destination's copy engines in turn when both drive it.
#include <cstdint>
#include <vector>

namespace p2pscope::bench {

struct CopySlice {
  std::uint64_t offset = 0, bytes = 0;
  int slot = 0;  // which of the requested slices (streams) carries it
};

constexpr std::uint64_t kSliceAlign = 64 << 10;

// `n` bytes in at most `slices` (>= 1) pieces. Copies below `min_sliced` stay whole
// (one slice in slot 0). Together the slices cover [0, n) once, in order.
std::vector<CopySlice> plan_copy_slices(std::uint64_t n, int slices, std::uint64_t min_sliced);

}  // namespace p2pscope::bench
