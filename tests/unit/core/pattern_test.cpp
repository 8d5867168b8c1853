// The one data pattern: SplitMix64's published outputs, fill and check at any offset
// and alignment, and a stale or shifted byte found where it is (the final partial word
// included).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "p2pscope/pattern.hpp"

using namespace p2pscope;

// SplitMix64 seeded with 0 (the reference C code of Vigna's xorshift page) outputs
// e220a8397b1dcdaf, 6e789e6aa1b965f4, 06c45d188009454f: word k is output k.
TEST(Pattern, WordsAreSplitMix64Outputs) {
  EXPECT_EQ(pattern_word(0, 0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(pattern_word(0, 1), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(pattern_word(0, 2), 0x06C45D188009454Full);
  // Little-endian bytes of word 1.
  EXPECT_EQ(pattern_byte(0, 8), 0xF4);
  EXPECT_EQ(pattern_byte(0, 15), 0x6E);
}

// Round r and r+1 of a TCP session use seeds 2 apart: their streams must not be one
// another shifted by a few words (as splitmix64(seed + k) would make them).
TEST(Pattern, NearbySeedsDoNotOverlap) {
  int same = 0;
  for (std::uint64_t k = 0; k < 4096; ++k)
    for (std::uint64_t shift = 0; shift < 4; ++shift) same += pattern_word(10, k + shift) == pattern_word(12, k);
  EXPECT_EQ(same, 0);
  EXPECT_NE(pattern_seed(0), pattern_seed(1));
}

TEST(Pattern, FillAtAnyOffsetAndAlignmentMatchesTheBytes) {
  for (std::uint64_t offset : {0ull, 3ull, 8ull, 13ull})
    for (std::size_t misalign : {0u, 1u, 5u})
      for (std::uint64_t n : {0ull, 1ull, 7ull, 8ull, 9ull, 1005ull}) {
        std::vector<unsigned char> buf(n + misalign + 1, 0xA5);
        pattern_fill(buf.data() + misalign, n, 77, offset);
        for (std::uint64_t i = 0; i < n; ++i)
          ASSERT_EQ(buf[misalign + i], pattern_byte(77, offset + i)) << "offset " << offset << " byte " << i;
        EXPECT_EQ(buf[misalign + n], 0xA5) << "wrote past the end";
        EXPECT_EQ(pattern_first_mismatch(buf.data() + misalign, n, 77, offset), n);
      }
}

TEST(Pattern, FirstMismatchIsTheFirstBadByte) {
  std::vector<unsigned char> buf(1005);
  pattern_fill(buf.data(), buf.size(), 5);
  for (std::uint64_t bad : {0ull, 7ull, 8ull, 517ull, 1000ull, 1004ull}) {
    auto copy = buf;
    copy[bad] ^= 0x10;
    EXPECT_EQ(pattern_first_mismatch(copy.data(), copy.size(), 5), bad);
    // Checked as a piece at an offset (TCP checks each chunk where it lands).
    if (bad >= 3) {
      EXPECT_EQ(pattern_first_mismatch(copy.data() + 3, copy.size() - 3, 5, 3), bad - 3);
    }
  }
  // Another stream's data, and the right stream one word late, are both wrong.
  EXPECT_EQ(pattern_first_mismatch(buf.data(), buf.size(), 6), 0u);
  EXPECT_LT(pattern_first_mismatch(buf.data() + 8, 64, 5, 0), 8u);
}
