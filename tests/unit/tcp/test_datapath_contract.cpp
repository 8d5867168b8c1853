// The contract every data path keeps (issue 33): one suite instantiated over a table of
// paths, as gloo's base_test runs one suite over its transports. Sockets (bench tcp),
// the reference net plugin (bench net) and an in-memory path (support/memory_path.hpp)
// that shows what a new transport costs: its file and one row of kPaths.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"
#include "support/memory_path.hpp"
#include "support/tcp_session.hpp"
#include "unit/net/net_test_util.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
namespace pt = p2pscope::test;

namespace {

struct Sides {
  LocalOptions client, server;
};
struct PathRow {
  const char* name;
  std::function<Sides()> sides;  // a client's and a server's options over this path
};

const PathRow kPaths[] = {
    {"sockets", [] { return Sides{}; }},
    {"refnet",
     [] {
       auto plugin = nettest::load_refnet({}, net::kMaxAbiVersion);
       return Sides{pt::over(plugin), pt::over(plugin)};
     }},
    {"memory",
     [] {
       auto hub = std::make_shared<pt::MemoryPath::Hub>();
       Sides s;
       s.client.path = std::make_shared<pt::MemoryPath>(hub);
       s.server.path = std::make_shared<pt::MemoryPath>(hub);
       return s;
     }},
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Chunks divide neither the message nor the channels; the ring is smaller than the message.
Params params(Mode mode = Mode::bw, bool verify = false) {
  return {.mode = mode, .channels = 3, .sockets_per_channel = 2, .window = 3, .size_bytes = (16u << 20) + 12345,
          .chunk_bytes = 300u << 10, .iters = 2, .warmup = 1, .verify = verify, .timeout_s = 10};
}

// What a side received: every byte of every timed round once per direction, and each
// rate is its bytes over its time.
void expect_received(const SideReport& s, const Params& p, const std::string& dir) {
  std::uint64_t bytes = 0;
  for (const auto& c : s.channels) {
    if (c.sent || c.dir != dir) continue;
    bytes += c.bytes;
    if (c.bytes == 0) continue;  // dealt as they go, a channel may get nothing
    ASSERT_GT(c.elapsed_s, 0);
    EXPECT_NEAR(c.bytes_per_s, static_cast<double>(c.bytes) / c.elapsed_s, 1e-6 * c.bytes_per_s) << s.side << " " << dir;
  }
  EXPECT_EQ(bytes, p.size_bytes * p.iters * p.gpus.size()) << s.side << " " << dir;
  EXPECT_EQ(s.round_rx_bytes_per_s.size(), p.iters) << s.side;
  for (double r : s.round_rx_bytes_per_s) EXPECT_GT(r, 0);
}

class DataPathContract : public ::testing::TestWithParam<PathRow> {
 protected:
  Results run(const Params& p) {
    const Sides s = GetParam().sides();
    return run_loopback(p, s.client, s.server);
  }
};

}  // namespace

TEST_P(DataPathContract, BandwidthEveryByteOnceRatesFromBytesAndTime) {
  const Params p = params();
  const Results r = run(p);
  ASSERT_EQ(r.failure, "");
  EXPECT_EQ(r.rounds_completed, p.iters);
  expect_received(r.server, p, "c2s");
  EXPECT_EQ(r.client.rx_bytes_per_s, 0);  // bw: nothing came back
  EXPECT_GT(r.client.tx_bytes_per_s, 0);
  // One worker per link and side.
  EXPECT_EQ(r.client.workers.size(), p.channels * p.sockets_per_channel);
  EXPECT_EQ(r.server.workers.size(), p.channels * p.sockets_per_channel);
}

TEST_P(DataPathContract, BidirVerifiedBothWays) {
  const Params p = params(Mode::bidir, true);
  const Results r = run(p);
  ASSERT_EQ(r.failure, "");
  EXPECT_EQ(r.client.verified_bytes, p.size_bytes * (p.warmup + p.iters));
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters));
  expect_received(r.server, p, "c2s");
  expect_received(r.client, p, "s2c");
}

TEST_P(DataPathContract, ReverseTheServerSends) {
  Params p = params();
  p.reverse = true;
  p.gpus = {0, 1};
  const Results r = run(p);
  ASSERT_EQ(r.failure, "");
  expect_received(r.client, p, "s2c");
  EXPECT_EQ(r.server.rx_bytes_per_s, 0);
}

// Each round's rate, computed again from the bytes and the time: over one link per
// direction, a round of S bytes at rate R took S / R, and the rounds' times add up to
// the link's active time. Every side, each direction (a wrong factor in the round rate,
// either way, breaks the sum).
TEST_P(DataPathContract, EachRoundsRateIsItsBytesOverItsTimeBothWays) {
  const Params p = {.mode = Mode::bidir, .channels = 1, .sockets_per_channel = 1, .window = 2,
                    .size_bytes = 4u << 20, .chunk_bytes = 256u << 10, .iters = 3, .warmup = 0, .timeout_s = 10};
  const Results r = run(p);
  ASSERT_EQ(r.failure, "");
  for (const SideReport* s : {&r.client, &r.server})
    for (const bool sent : {true, false}) {
      const auto& rounds = sent ? s->round_tx_bytes_per_s : s->round_rx_bytes_per_s;
      ASSERT_EQ(rounds.size(), p.iters) << s->side << (sent ? " tx" : " rx");
      const ChannelReport* link = nullptr;
      for (const auto& c : s->channels)
        if (c.sent == sent) link = &c;
      ASSERT_NE(link, nullptr) << s->side;
      ASSERT_EQ(link->bytes, p.iters * p.size_bytes) << s->side;
      double seconds = 0;
      for (const double rate : rounds) {
        ASSERT_GT(rate, 0) << s->side;
        seconds += static_cast<double>(p.size_bytes) / rate;
      }
      EXPECT_NEAR(seconds, link->elapsed_s, 1e-6 * link->elapsed_s) << s->side << (sent ? " tx" : " rx");
    }
}

// A client and a server of different paths: refused before any link, both told why.
TEST_P(DataPathContract, AnotherPathsServerRefusesWithBothNames) {
  const Sides mine = GetParam().sides();
  const bool sockets = std::string(GetParam().name) == "sockets";
  const Sides other = sockets ? kPaths[2].sides() : Sides{};
  const pt::Both b = pt::run_both(params(), pt::loopback_server(other.server), mine.client);
  const std::string theirs = sockets ? "memory" : "sockets";
  EXPECT_TRUE(has(b.client_error, "refused") && has(b.client_error, "this server over " + theirs)) << b.client_error;
  EXPECT_TRUE(has(b.server_error, "this server over " + theirs)) << b.server_error;
}

INSTANTIATE_TEST_SUITE_P(Paths, DataPathContract, ::testing::ValuesIn(kPaths),
                         [](const auto& info) { return std::string(info.param.name); });
