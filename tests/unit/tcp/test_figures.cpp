// The figures a bench tcp / bench net user reads, pinned to known answers (issue 33,
// item 5): each rate against its own bytes and time, every server limit at its edge
// (the last value accepted and the first refused), both directions of a bidir run, and
// the unit in text and JSON. Injected bugs of a few characters in these figures (a rate's
// unit, a limit off by one, a bidirectional total) survived the tests that only asked
// for figures above zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/tcp_report.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;

namespace {

Params base() {
  return {.mode = Mode::bw, .channels = 2, .window = 4, .size_bytes = 1u << 20, .chunk_bytes = 1u << 20, .iters = 2,
          .warmup = 0, .verify = false, .timeout_s = 10};
}

// params_from_json is what a server applies to a client's request: accepted or UsageError.
bool accepted(const Params& p) {
  try {
    params_from_json(to_json(p));
    return true;
  } catch (const UsageError&) {
    return false;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

TEST(TcpFigures, EveryLimitHoldsAtItsEdge) {
  Params p = base();
  ASSERT_TRUE(accepted(p));
  const auto edge = [&](auto set, auto last_ok, auto first_bad, const char* what) {
    Params ok = base(), bad = base();
    set(ok, last_ok);
    set(bad, first_bad);
    EXPECT_TRUE(accepted(ok)) << what << " = " << last_ok << " must be accepted";
    EXPECT_FALSE(accepted(bad)) << what << " = " << first_bad << " must be refused";
  };
  edge([](Params& q, std::uint64_t v) { q.size_bytes = v, q.chunk_bytes = 1u << 30; }, 64ull << 30, (64ull << 30) + 1,
       "--size");
  edge([](Params& q, std::uint32_t v) { q.channels = v; }, 4096u, 4097u, "--channels");
  edge([](Params& q, std::uint32_t v) { q.window = v; }, 65536u, 65537u, "--window");
  edge([](Params& q, std::uint32_t v) { q.sockets_per_channel = v, q.channels = 1; }, 256u, 257u,
       "--sockets-per-channel");
  edge([](Params& q, std::uint64_t v) { q.size_bytes = 2ull << 30, q.chunk_bytes = v; }, 1ull << 30, (1ull << 30) + 1,
       "--chunk");
  edge([](Params& q, std::uint32_t v) { q.iters = v; }, 100000u, 100001u, "--iters");
  edge([](Params& q, double v) { q.timeout_s = v; }, 3600.0, 3600.5, "--timeout");
  // Chunks tracked per round: 2^22 of one byte is the last accepted.
  edge([](Params& q, std::uint64_t v) { q.size_bytes = v, q.chunk_bytes = 1; }, 1ull << 22, (1ull << 22) + 1,
       "chunks per round");
  // Connections: gpus x channels x sockets (x2 for bidir) up to 4096.
  edge([](Params& q, std::uint32_t v) { q.mode = Mode::bidir, q.channels = v; }, 2048u, 2049u, "bidir --channels");
  // Latency mode: one message of at most 64 MiB.
  edge([](Params& q, std::uint64_t v) { q.mode = Mode::latency, q.size_bytes = v, q.chunk_bytes = v; }, 64ull << 20,
       (64ull << 20) + 1, "latency --size");
}

// A real loopback run: each channel's rate is its bytes over its active time, the
// sender moved every byte of every timed round once, and the total is the median of the
// rounds' rates (not their mean, not the last).
TEST(TcpFigures, RatesAreBytesOverTimeAndTheTotalIsTheMedianRound) {
  Params p = base();
  p.size_bytes = 4u << 20;
  p.chunk_bytes = 256u << 10;
  p.iters = 5;
  const Results r = run_loopback(p);
  for (const SideReport* s : {&r.client, &r.server})
    for (const auto& c : s->channels) {
      if (c.bytes == 0) continue;  // dealt as they go: a channel may carry no chunk
      ASSERT_GT(c.elapsed_s, 0);
      EXPECT_NEAR(c.bytes_per_s, static_cast<double>(c.bytes) / c.elapsed_s, 1e-9 * c.bytes_per_s)
          << s->side << " channel " << c.channel;
    }
  EXPECT_EQ(p2pscope::test::sum_bytes(r.client, true), 5 * p.size_bytes);
  EXPECT_EQ(p2pscope::test::sum_bytes(r.server, false), 5 * p.size_bytes);
  ASSERT_EQ(r.client.round_tx_bytes_per_s.size(), 5u);
  EXPECT_DOUBLE_EQ(r.client.tx_bytes_per_s, median(r.client.round_tx_bytes_per_s));
  ASSERT_EQ(r.server.round_rx_bytes_per_s.size(), 5u);
  EXPECT_DOUBLE_EQ(r.server.rx_bytes_per_s, median(r.server.round_rx_bytes_per_s));
}

// Bidir: both directions carry every byte of every round, each side reports a send and
// a receive rate, and neither direction's figure is the other's or their sum.
TEST(TcpFigures, BidirReportsEachDirectionApart) {
  Params p = base();
  p.mode = Mode::bidir;
  p.size_bytes = 2u << 20;
  p.chunk_bytes = 256u << 10;
  p.iters = 3;
  const Results r = run_loopback(p);
  EXPECT_EQ(p2pscope::test::sum_bytes(r.client, true), 3 * p.size_bytes);   // c2s, sent by the client
  EXPECT_EQ(p2pscope::test::sum_bytes(r.client, false), 3 * p.size_bytes);  // s2c, received by it
  EXPECT_EQ(p2pscope::test::sum_bytes(r.server, true), 3 * p.size_bytes);
  EXPECT_EQ(p2pscope::test::sum_bytes(r.server, false), 3 * p.size_bytes);
  EXPECT_GT(r.client.tx_bytes_per_s, 0);
  EXPECT_GT(r.client.rx_bytes_per_s, 0);
  EXPECT_DOUBLE_EQ(r.client.tx_bytes_per_s, median(r.client.round_tx_bytes_per_s));
  EXPECT_DOUBLE_EQ(r.client.rx_bytes_per_s, median(r.client.round_rx_bytes_per_s));
}

// The printed figures: GB/s is 1e9 B/s with three decimals in text, B/s in JSON, on a
// report of known numbers.
TEST(TcpFigures, TextAndJsonCarryTheSameFigureInTheirOwnUnit) {
  const Results r = test::known_report();
  const std::string text = format_text(r);
  EXPECT_NE(text.find("GB/s = 1e9 B/s"), std::string::npos) << text;
  EXPECT_NE(text.find(" 2.500 "), std::string::npos) << text;  // the client's channel
  EXPECT_NE(text.find(" 1.250 "), std::string::npos) << text;  // the server's channel
  EXPECT_NE(text.find(" 3.750 "), std::string::npos) << text;  // the client's total (send)
  EXPECT_NE(text.find(" 1.500 "), std::string::npos) << text;  // the server's total (receive)
  EXPECT_EQ(text.find(" 2500"), std::string::npos) << "MB/s where GB/s is said:\n" << text;
  const nlohmann::json j = to_json(r);
  EXPECT_DOUBLE_EQ(j["client"]["channels"][0]["bytes_per_s"].get<double>(), 2.5e9);
  EXPECT_DOUBLE_EQ(j["client"]["tx_bytes_per_s"].get<double>(), 3.75e9);
  EXPECT_DOUBLE_EQ(j["server"]["rx_bytes_per_s"].get<double>(), 1.5e9);
}
