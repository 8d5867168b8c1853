#pragma once
// Totals over a TCP run's per-channel report, for tests that check what moved.
#include <cstdint>

#include "p2pscope/tcp.hpp"

namespace p2pscope::test {

// Bytes of one side's channels that sent (`sent`) or received.
inline std::uint64_t sum_bytes(const tcp::SideReport& s, bool sent) {
  std::uint64_t b = 0;
  for (const auto& c : s.channels)
    if (c.sent == sent) b += c.bytes;
  return b;
}

}  // namespace p2pscope::test
