// copy_slices.hpp
#include "bench/copy_slices.hpp"

#include <algorithm>

namespace p2pscope::bench {

std::vector<CopySlice> plan_copy_slices(std::uint64_t n, int slices, std::uint64_t min_sliced) {
  if (slices <= 1 || n < min_sliced) return {{0, n, 0}};
  const auto k_n = static_cast<std::uint64_t>(slices);
  // n / slices rounded up, then up to whole blocks: `slices` pieces always reach n
  // (rounding n / slices down would leave the tail of 1 MiB + 3 bytes uncopied).
  const std::uint64_t share = (n + k_n - 1) / k_n;
  const std::uint64_t slice = (share + kSliceAlign - 1) / kSliceAlign * kSliceAlign;
  std::vector<CopySlice> out;
  for (std::uint64_t k = 0; k < k_n && k * slice < n; ++k)
    out.push_back({k * slice, std::min(slice, n - k * slice), static_cast<int>(k)});
  return out;
}

}  // namespace p2pscope::bench
