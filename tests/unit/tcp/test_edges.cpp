// The edges of bench tcp's server limits and of the figures its sweep reads (issue 45
// item 4): each limit at its value (accepted) and one past it (refused), as injected
// bugs of one character at these edges survived every test before.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "p2pscope/tcp.hpp"
#include "support/raw_peer.hpp"
#include "support/server_thread.hpp"
#include "support/tcp_report.hpp"
#include "support/tcp_session.hpp"
#include "transport/session/protocol.hpp"
#include "transport/tcp/sweep.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using p2pscope::test::RawPeer;
using p2pscope::test::ServerThread;
namespace pt = p2pscope::test;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Bidir over 2 channels: 2 directions x 2 channels x 1 socket = 4 data links.
Params four_links() {
  return {.mode = Mode::bidir, .channels = 2, .window = 2, .size_bytes = 1u << 20, .chunk_bytes = 256u << 10,
          .iters = 1, .warmup = 0, .verify = false, .timeout_s = 10};
}

// A frame body of exactly `elements` JSON values and keys: the object, its key, the
// array and elements - 3 numbers.
std::string body_of(std::size_t elements) {
  std::string text = R"({"a":[)";
  for (std::size_t i = 0; i + 3 < elements; ++i) text += i ? ",0" : "0";
  return text + "]}";
}

bool frame_accepted(session::FrameType type, std::size_t elements) {
  try {
    session::frame_body(type, body_of(elements), "test");
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

// --max-conns N allows a session of exactly N links; N - 1 refuses it, naming both.
TEST(TcpEdges, ASessionOfExactlyMaxConnsLinksIsServedAndOneMoreIsRefused) {
  const Params p = four_links();
  ServerOptions at = pt::loopback_server();
  at.limits.max_connections = 4;
  const pt::Both ok = pt::run_both(p, at);
  EXPECT_EQ(ok.client_error, "") << "a session of exactly --max-conns links must be served";
  EXPECT_EQ(ok.server_error, "");
  EXPECT_EQ(pt::sum_bytes(ok.client.server, false), p.size_bytes);

  ServerOptions under = pt::loopback_server();
  under.limits.max_connections = 3;
  const pt::Both bad = pt::run_both(p, under);
  EXPECT_TRUE(has(bad.client_error, "the session needs 4 data links, over this server's limit of 3"))
      << bad.client_error;
}

// max_pending connections may handshake at once: that many idle ones are all kept; the
// next one drops the oldest (and only it).
TEST(TcpEdges, MaxPendingHandshakesAreKeptAndOneMoreDropsTheOldest) {
  ServerOptions so;
  so.limits.max_pending = 3;
  so.limits.hello_timeout_s = 20;  // the idle ones must not time out during the test
  ServerThread srv(so);
  std::vector<std::unique_ptr<RawPeer>> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(std::make_unique<RawPeer>(srv.port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  for (auto& peer : idle) EXPECT_FALSE(peer->closed_within(0.3)) << "at max_pending, every handshake waits";
  EXPECT_FALSE(has(srv.log(), "too many connections handshaking")) << srv.log();

  RawPeer one_more(srv.port());
  ASSERT_TRUE(one_more.connected());
  EXPECT_TRUE(idle[0]->closed_within(3)) << "max_pending + 1: the oldest handshake must be dropped";
  EXPECT_TRUE(srv.log_has("too many connections handshaking at once (limit 3)")) << srv.log();
  for (std::size_t i = 1; i < idle.size(); ++i) EXPECT_FALSE(idle[i]->closed_within(0.2)) << "peer " << i;
  EXPECT_FALSE(one_more.closed_within(0.2));
}

// Results carry a figure per round: their frame allows 2^20 values, every other frame
// 2^15 (each at its limit, and one past it).
TEST(TcpEdges, AResultFrameHasItsOwnElementLimitAndOtherFramesTheSmallOne) {
  using session::FrameType;
  EXPECT_TRUE(frame_accepted(FrameType::result, 1u << 20));
  EXPECT_FALSE(frame_accepted(FrameType::result, (1u << 20) + 1));
  EXPECT_TRUE(frame_accepted(FrameType::result, (1u << 15) + 1)) << "a result frame got the small frames' limit";
  for (const FrameType t : {FrameType::hello, FrameType::params, FrameType::done, FrameType::net_handles}) {
    EXPECT_TRUE(frame_accepted(t, 1u << 15)) << static_cast<int>(t);
    EXPECT_FALSE(frame_accepted(t, (1u << 15) + 1)) << static_cast<int>(t);
  }
}

// --slot-memory folds a slot only onto a smaller piece: equal to --chunk, each slot is
// its own chunk (no fold, and the session runs); a page less, it folds.
TEST(TcpEdges, SlotMemoryEqualToTheChunkRunsUnfoldedAndAPageLessFolds) {
  Params p;
  p.channels = 1;
  p.size_bytes = 8u << 20;
  p.chunk_bytes = 1u << 20;
  p.iters = 1;
  p.warmup = 0;
  p.timeout_s = 10;
  p.slot_memory_bytes = static_cast<std::uint32_t>(p.chunk_bytes);
  const Results equal = run_loopback(p);
  EXPECT_EQ(pt::sum_bytes(equal.server, false), p.size_bytes);
  EXPECT_FALSE(has(equal.client.buffer_layout, "of memory per socket")) << equal.client.buffer_layout;
  EXPECT_EQ(equal.client.buffer_bytes, p.chunk_bytes);

  p.slot_memory_bytes = static_cast<std::uint32_t>(p.chunk_bytes - 4096);
  const Results less = run_loopback(p);
  EXPECT_EQ(pt::sum_bytes(less.server, false), p.size_bytes);
  EXPECT_TRUE(has(less.client.buffer_layout, "of memory per socket")) << less.client.buffer_layout;
}

// The sweep's figure of a bidir point is what both receivers got: the two directions'
// rates added, each of them there.
TEST(TcpEdges, TheSweepsBidirFigureCountsBothDirections) {
  SweepSpec s;
  s.base = four_links();
  s.base.size_bytes = 512u << 10;
  s.base.chunk_bytes = 64u << 10;
  s.channels = {1};
  s.chunks = {64u << 10};
  s.windows = {2};
  s.sockets_per_channel = {1};
  s.reps = 1;
  const SweepResult r = run_sweep(s);
  ASSERT_EQ(r.runs.size(), 1u);
  const SweepRun& run = r.runs[0];
  ASSERT_GT(run.client_rx_bytes_per_s, 0) << "s2c";
  ASSERT_GT(run.server_rx_bytes_per_s, 0) << "c2s";
  EXPECT_DOUBLE_EQ(run.bytes_per_s, run.client_rx_bytes_per_s + run.server_rx_bytes_per_s);
}
