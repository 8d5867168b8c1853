// Host fill and check of the data pattern (include/p2pscope/pattern.hpp): whole words
// through memcpy (any alignment), bytes at the unaligned ends.
#include "p2pscope/pattern.hpp"

#include <cstring>

namespace p2pscope {

void pattern_fill(void* dst, std::uint64_t bytes, std::uint64_t seed, std::uint64_t offset) {
  auto* p = static_cast<unsigned char*>(dst);
  std::uint64_t i = 0;
  for (; i < bytes && (offset + i) % 8 != 0; ++i) p[i] = pattern_byte(seed, offset + i);
  for (; i + 8 <= bytes; i += 8) {
    const std::uint64_t w = pattern_word(seed, (offset + i) / 8);
    std::memcpy(p + i, &w, 8);
  }
  for (; i < bytes; ++i) p[i] = pattern_byte(seed, offset + i);
}

std::uint64_t pattern_first_mismatch(const void* data, std::uint64_t bytes, std::uint64_t seed, std::uint64_t offset) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t i = 0;
  for (; i < bytes && (offset + i) % 8 != 0; ++i)
    if (p[i] != pattern_byte(seed, offset + i)) return i;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w != pattern_word(seed, (offset + i) / 8)) break;  // the byte loop below finds which
  }
  for (; i < bytes; ++i)
    if (p[i] != pattern_byte(seed, offset + i)) return i;
  return bytes;
}

}  // namespace p2pscope
