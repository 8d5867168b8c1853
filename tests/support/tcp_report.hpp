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

// A report of known figures: the client sent 5e9 bytes in 2 s on one channel (2.5e9 B/s),
// acked in 1234.5 us (p50) and 2345.6 us (p99) with 3.25 of 4 chunks in flight; the server
// received them in 4 s of its time (1.25e9 B/s as it counted); totals 3.75e9 B/s sent
// and 1.5e9 B/s received, over one round.
inline tcp::Results known_report() {
  tcp::Results r;
  r.params.channels = 1;
  r.params.iters = 1;
  const tcp::ChannelReport sent{.dir = "c2s", .sent = true, .nic = "lo", .bytes = 5'000'000'000ull, .elapsed_s = 2.0,
                                .bytes_per_s = 2.5e9, .chunk_lat_p50_ns = 1'234'500, .chunk_lat_p99_ns = 2'345'600,
                                .window_mean = 3.25, .window_max = 4};
  tcp::ChannelReport got = sent;
  got.sent = false;
  got.elapsed_s = 4.0;
  got.bytes_per_s = 1.25e9;
  r.client = {.side = "client", .channels = {sent}, .round_tx_bytes_per_s = {3.75e9}, .tx_bytes_per_s = 3.75e9};
  r.server = {.side = "server", .channels = {got}, .round_rx_bytes_per_s = {1.5e9}, .rx_bytes_per_s = 1.5e9};
  return r;
}

}  // namespace p2pscope::test
