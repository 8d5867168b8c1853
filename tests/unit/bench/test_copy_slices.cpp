// The ce backend's slicing (src/bench/copy_slices): every byte once, in order, on
// whole 64 KiB blocks, never more pieces than streams.
#include <gtest/gtest.h>

#include "bench/copy_slices.hpp"

namespace p2pscope::bench {
namespace {

void expect_covers_once(const std::vector<CopySlice>& v, std::uint64_t n, int slices) {
  ASSERT_FALSE(v.empty());
  EXPECT_LE(v.size(), static_cast<std::size_t>(std::max(1, slices)));
  std::uint64_t at = 0;
  for (std::size_t k = 0; k < v.size(); ++k) {
    EXPECT_EQ(v[k].offset, at) << "slice " << k << " leaves a gap or overlaps";
    EXPECT_EQ(v[k].offset % kSliceAlign, 0u) << "slice " << k;
    EXPECT_GT(v[k].bytes, 0u) << "slice " << k;
    EXPECT_EQ(v[k].slot, static_cast<int>(k));
    at += v[k].bytes;
  }
  EXPECT_EQ(at, n) << "the slices do not add up to the copy";
}

TEST(CopySlices, SmallCopiesAndOneStreamStayWhole) {
  for (const auto& [n, slices] : {std::pair<std::uint64_t, int>{8, 4}, {(1 << 20) - 1, 16}, {1ull << 30, 1}}) {
    const auto v = plan_copy_slices(n, slices, 1 << 20);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].offset, 0u);
    EXPECT_EQ(v[0].bytes, n);
  }
}

TEST(CopySlices, EqualSlicesOfAGibibyte) {
  const auto v = plan_copy_slices(1ull << 30, 4, 1 << 20);
  ASSERT_EQ(v.size(), 4u);
  for (const auto& s : v) EXPECT_EQ(s.bytes, 256ull << 20);
  expect_covers_once(v, 1ull << 30, 4);
}

// Rounding n / slices down loses the tail: 1 MiB + 3 in 16 slices of 64 KiB would end 3
// bytes short.
TEST(CopySlices, TheTailIsNeverLeftBehind) {
  for (int slices : {2, 3, 4, 7, 8, 16})
    for (std::uint64_t n : {(1ull << 20) + 3, (1ull << 20), 3 * (1ull << 20) + 65535, (300ull << 20) + 5, (1ull << 30) + 1}) {
      SCOPED_TRACE(testing::Message() << n << " bytes in " << slices);
      expect_covers_once(plan_copy_slices(n, slices, 1 << 20), n, slices);
    }
}

}  // namespace
}  // namespace p2pscope::bench
