// sweep tcp's loop as a library call (issue 24): a tiny plan over real loopback
// sockets returns every run in order with the receivers' figures, the best point by
// median, the stop flag honoured between runs, and a bad point refused before any run.
#include <gtest/gtest.h>

#include <atomic>

#include "p2pscope/error.hpp"
#include "support/loopback_port.hpp"
#include "transport/tcp/sweep.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;

namespace {

SweepSpec tiny() {
  SweepSpec s;
  s.base.mode = Mode::bw;
  s.base.size_bytes = 512u << 10;
  s.base.iters = 1;
  s.base.warmup = 0;
  s.base.timeout_s = 10;
  s.channels = {1, 2};
  s.chunks = {64u << 10};
  s.windows = {2};
  s.sockets_per_channel = {1};
  s.reps = 2;
  return s;
}

}  // namespace

TEST(TcpSweep, ATinyPlanOverLoopbackReturnsEveryRunInOrder) {
  auto spec = tiny();
  std::vector<std::pair<std::size_t, std::size_t>> progress;
  spec.on_run = [&](std::size_t done, std::size_t planned, const SweepRun&) { progress.emplace_back(done, planned); };
  const SweepResult r = run_sweep(spec);
  ASSERT_EQ(r.grid.size(), 2u);
  ASSERT_EQ(r.runs.size(), 4u);
  EXPECT_TRUE(r.stopped.empty());
  EXPECT_FALSE(r.interrupted);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& run = r.runs[i];
    EXPECT_EQ(run.point.channels, i < 2 ? 1u : 2u) << i;
    EXPECT_EQ(run.point.chunk_bytes, 64u << 10);
    EXPECT_EQ(run.rep, static_cast<int>(i % 2));
    // One way (bw): the server receives, the client does not; what arrived is the server's.
    EXPECT_GT(run.server_rx_bytes_per_s, 0) << i;
    EXPECT_GT(run.client_tx_bytes_per_s, 0) << i;
    EXPECT_EQ(run.client_rx_bytes_per_s, 0) << i;
    EXPECT_DOUBLE_EQ(run.bytes_per_s, run.server_rx_bytes_per_s) << i;
    EXPECT_EQ(progress[i], std::make_pair(i + 1, std::size_t{4}));
  }
  const auto samples = r.samples();
  ASSERT_EQ(samples.size(), 2u);
  const auto best = r.best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->second.n, 2u);
  for (const auto& [pt, v] : samples) EXPECT_LE(compute_stats(v).median, best->second.median);
}

TEST(TcpSweep, TheStopFlagEndsTheSweepBetweenRuns) {
  auto spec = tiny();
  std::atomic<bool> stop{false};
  spec.stop = &stop;
  spec.on_run = [&](std::size_t, std::size_t, const SweepRun&) { stop = true; };
  const SweepResult r = run_sweep(spec);
  EXPECT_TRUE(r.interrupted);
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.stopped.rfind("interrupted before channels 1 chunk ", 0), 0u) << r.stopped;
  EXPECT_NE(r.stopped.find("rep 1"), std::string::npos) << r.stopped;
  EXPECT_EQ(r.samples().size(), 1u);
}

TEST(TcpSweep, ABadPointIsRefusedBeforeAnyRun) {
  auto spec = tiny();
  spec.chunks = {64u << 10, 1u << 20};  // 1 MiB chunks do not fit a 512 KiB message
  int runs = 0;
  spec.on_run = [&](std::size_t, std::size_t, const SweepRun&) { ++runs; };
  EXPECT_THROW(run_sweep(spec), UsageError);
  EXPECT_EQ(runs, 0) << "the 64 KiB points ran before the bad one was noticed";
  spec = tiny();
  spec.reps = 0;
  EXPECT_THROW(run_sweep(spec), UsageError);
  spec = tiny();
  spec.windows.clear();
  EXPECT_THROW(run_sweep(spec), UsageError);
}

TEST(TcpSweep, NoServerIsThePlainErrorOfTheFirstRun) {
  auto spec = tiny();
  spec.servers = {"127.0.0.1"};
  spec.port = static_cast<std::uint16_t>(p2pscope::test::free_port());  // nobody listens
  spec.base.timeout_s = 2;
  EXPECT_THROW(run_sweep(spec), Error);
}
