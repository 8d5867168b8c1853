// End to end over real 127.0.0.1 sockets: server and client run as threads of this
// process (run_loopback), every mode, with --verify.
#include <gtest/gtest.h>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/tcp_report.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;

namespace {

Params small(Mode m) {
  return {.mode = m, .channels = 2, .window = 3, .size_bytes = 3u << 20, .chunk_bytes = 256u << 10, .iters = 2,
          .warmup = 1, .verify = true, .timeout_s = 10};
}

using p2pscope::test::sum_bytes;

}  // namespace

TEST(TcpLoopback, OneWayMovesEveryByteAndBothSidesReport) {
  Params p = small(Mode::bw);
  p.size_bytes = 3u * (256u << 10) + 1234;  // a short last chunk
  p.sockets_per_channel = 2;
  const Results r = run_loopback(p);
  // 2 timed rounds; chunks dealt over 2 channels x 2 sockets.
  EXPECT_EQ(sum_bytes(r.client, true), 2 * p.size_bytes);
  EXPECT_EQ(sum_bytes(r.server, false), 2 * p.size_bytes);
  EXPECT_EQ(r.server.verified_bytes, 3 * p.size_bytes);  // warm-up round verified too
  EXPECT_GT(r.client.tx_bytes_per_s, 0);
  EXPECT_GT(r.server.rx_bytes_per_s, 0);
  ASSERT_EQ(r.client.channels.size(), 2u);
  for (const auto& c : r.client.channels) {
    EXPECT_EQ(c.nic, "lo");
    if (c.bytes == 0) continue;  // chunks are dealt as they go: a channel may carry none
    EXPECT_GE(c.window_max, 1u);
    EXPECT_LE(c.window_max, p.window);
    EXPECT_GT(c.chunk_lat_p50_ns, 0);
    EXPECT_GE(c.chunk_lat_p99_ns, c.chunk_lat_p50_ns);
  }
  // 2 channels x 2 sockets: one worker per socket on each side (the client's TX worker
  // reads its own acks; there is no separate ack thread).
  ASSERT_EQ(r.client.workers.size(), 4u);
  ASSERT_EQ(r.server.workers.size(), 4u);
  for (const auto& w : r.client.workers) {
    EXPECT_EQ(w.role, "tx");
    EXPECT_GT(w.wall_time_s, 0);
    EXPECT_GT(w.syscalls, 0u);
  }
  for (const auto& w : r.server.workers) {
    EXPECT_EQ(w.role, "rx");
    EXPECT_GT(w.cpu_time_s, 0);
    EXPECT_GE(w.wall_time_s, w.cpu_time_s * 0.5);  // wall covers the thread's rounds
  }
}

TEST(TcpLoopback, ReverseSendsFromServer) {
  Params p = small(Mode::bw);
  p.reverse = true;
  const Results r = run_loopback(p);
  EXPECT_EQ(sum_bytes(r.server, true), 2 * p.size_bytes);
  EXPECT_EQ(sum_bytes(r.client, false), 2 * p.size_bytes);
  EXPECT_EQ(r.client.verified_bytes, 3 * p.size_bytes);
}

TEST(TcpLoopback, BidirMovesBothWays) {
  const Params p = small(Mode::bidir);
  const Results r = run_loopback(p);
  EXPECT_EQ(sum_bytes(r.client, true), 2 * p.size_bytes);
  EXPECT_EQ(sum_bytes(r.client, false), 2 * p.size_bytes);
  EXPECT_EQ(sum_bytes(r.server, true), 2 * p.size_bytes);
  EXPECT_GT(r.client.rx_bytes_per_s, 0);
  EXPECT_GT(r.server.tx_bytes_per_s, 0);
  EXPECT_EQ(r.client.verified_bytes, 3 * p.size_bytes);
  EXPECT_EQ(r.server.verified_bytes, 3 * p.size_bytes);
}

TEST(TcpLoopback, LatencyPingPong) {
  Params p = small(Mode::latency);
  p.size_bytes = 64;
  p.iters = 200;
  p.warmup = 10;
  const Results r = run_loopback(p);
  ASSERT_EQ(r.client.latency_ns.size(), 2u * 200);  // 2 channels ping at once
  for (double v : r.client.latency_ns) EXPECT_GT(v, 0);
  const auto j = to_json(r);
  EXPECT_GT(j["client"]["latency_ns"]["p99"].get<double>(), 0);
}

TEST(TcpLoopback, FullmeshPairsEveryGpuWithHostBuffers) {
  Params p = small(Mode::fullmesh);
  p.gpus = {0, 1, 2};
  p.channels = 2;
  const Results r = run_loopback(p);
  ASSERT_EQ(r.server.channels.size(), 6u);
  for (int g : {0, 1, 2}) {
    std::uint64_t b = 0;
    for (const auto& c : r.server.channels)
      if (c.gpu == g) b += c.bytes;
    EXPECT_EQ(b, 2 * p.size_bytes) << "gpu " << g;
  }
  EXPECT_EQ(r.server.verified_bytes, 3 * 3 * p.size_bytes);
}

TEST(TcpLoopback, ResultsRoundTripThroughJsonAndText) {
  const Results r = run_loopback(small(Mode::bw));
  const SideReport back = side_from_json(to_json(r.server));
  EXPECT_EQ(back.channels.size(), r.server.channels.size());
  EXPECT_EQ(back.workers.size(), r.server.workers.size());
  EXPECT_DOUBLE_EQ(back.rx_bytes_per_s, r.server.rx_bytes_per_s);
  const std::string text = format_text(r);
  EXPECT_NE(text.find("Per channel"), std::string::npos);
  EXPECT_NE(text.find("Per NIC"), std::string::npos);
  EXPECT_NE(text.find("Workers"), std::string::npos);
}

TEST(TcpLoopback, GpuMemoryWithoutAGpuIsAClearError) {
  Params p = small(Mode::bw);
  p.mem = MemKind::gpu;
  p.gpus = {0};
  try {
    run_loopback(p);
    GTEST_SKIP() << "a GPU is present: --mem gpu ran (covered by the device run)";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.find("GPU") != std::string::npos || m.find("CUDA") != std::string::npos) << m;
  }
}
