// The host backend through every pattern with data checks, the registry, the
// patterns' names, Stats over the samples and nccl-tests' formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "bench/formulas.hpp"
#include "bench/setup_pacer.hpp"
#include "p2pscope/pattern.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/stats.hpp"

using namespace p2pscope;
using namespace p2pscope::bench;

namespace {
std::unique_ptr<Backend> prepared(std::uint64_t bytes) {
  auto b = make_backend("host");
  b->prepare({0, 1}, bytes);
  return b;
}
}  // namespace

TEST(BenchRegistry, HostAlwaysBuiltAndUnknownNamesListKnownOnes) {
  const auto names = backend_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "host");
  try {
    make_backend("warp-drive");
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("host"), std::string::npos) << e.what();
  }
#if !P2PSCOPE_HAVE_CUDA
  try {
    make_backend("ce");
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not built in"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("P2PSCOPE_WITH_CUDA"), std::string::npos) << e.what();
  }
#endif
#if !P2PSCOPE_HAVE_NCCL
  EXPECT_THROW(make_backend("nccl"), UsageError);
#endif
}

TEST(BenchPattern, NamesRoundTrip) {
  for (auto p : {Pattern::unidirectional, Pattern::bidirectional, Pattern::latency})
    EXPECT_EQ(parse_pattern(to_string(p)), p);
  EXPECT_EQ(parse_pattern("bidir"), Pattern::bidirectional);
  EXPECT_THROW(parse_pattern("sideways"), UsageError);
}

TEST(BenchPattern, FillIsNotZeroAndDiffersPerDevice) {
  int zeros = 0, same = 0;
  for (std::uint64_t k = 0; k < 1000; ++k) {
    zeros += pattern_word(pattern_seed(0), k) == 0;
    same += pattern_word(pattern_seed(0), k) == pattern_word(pattern_seed(1), k);
  }
  EXPECT_EQ(zeros, 0);
  EXPECT_EQ(same, 0);
  EXPECT_EQ(pattern_byte(pattern_seed(3), 13), static_cast<std::uint8_t>(pattern_word(pattern_seed(3), 1) >> 40));
}

TEST(HostBackend, DevicesAndSupport) {
  auto b = make_backend("host");
  EXPECT_EQ(b->name(), "host");
  EXPECT_GE(b->device_count(), 2);
  EXPECT_NE(b->device_name(0).find("NUMA node"), std::string::npos);
  EXPECT_TRUE(b->support(0, 1).ok);
  EXPECT_FALSE(b->support(1, 1).ok);
  EXPECT_THROW(b->support(0, b->device_count()), UsageError);
  EXPECT_EQ(b->device_timer(), nullptr);  // host memory has no device clock
  EXPECT_EQ(b->heater(), nullptr);
}

TEST(HostBackend, UnidirectionalCopiesThePatternAndGivesOneSamplePerIteration) {
  const std::uint64_t n = 1 << 20;
  auto b = prepared(n);
  EXPECT_EQ(b->verify(0, 1, n), 0) << "destination poisoned before any copy";
  BatchSpec s{0, 1, n, Pattern::unidirectional, 2, 7};
  const auto r = b->run_batch(s);
  ASSERT_TRUE(r.support.ok);
  ASSERT_EQ(r.elapsed_ns.size(), 7u);
  EXPECT_TRUE(r.reverse_elapsed_ns.empty());
  for (double v : r.elapsed_ns) EXPECT_GT(v, 0);
  EXPECT_EQ(b->verify(0, 1, n), -1);
  // The other direction has not been written yet.
  EXPECT_EQ(b->verify(1, 0, n), 0);
  const Stats st = compute_stats(r.elapsed_ns);
  EXPECT_EQ(st.n, 7u);
  EXPECT_LE(st.p5, st.median);
  EXPECT_LE(st.median, st.p95);
}

TEST(HostBackend, BidirectionalReportsEachDirectionAndTheTotal) {
  const std::uint64_t n = (1 << 20) + 5;  // odd size: the tail bytes are copied and checked too
  auto b = prepared(n);
  const auto r = b->run_batch({1, 0, n, Pattern::bidirectional, 1, 5});
  ASSERT_EQ(r.elapsed_ns.size(), 5u);
  ASSERT_EQ(r.reverse_elapsed_ns.size(), 5u);
  ASSERT_EQ(r.total_elapsed_ns.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_GE(r.total_elapsed_ns[i], r.elapsed_ns[i]);
    EXPECT_GE(r.total_elapsed_ns[i], r.reverse_elapsed_ns[i]);
  }
  EXPECT_EQ(b->verify(1, 0, n), -1);
  EXPECT_EQ(b->verify(0, 1, n), -1);
}

TEST(HostBackend, LatencyPingPongMovesTheMessageBothWays) {
  auto b = prepared(64);
  const auto r = b->run_batch({0, 1, 8, Pattern::latency, 1, 3});
  ASSERT_EQ(r.elapsed_ns.size(), 3u);
  for (double v : r.elapsed_ns) {
    EXPECT_GT(v, 0);
    EXPECT_LT(v, 1e8) << "one-way latency over 100 ms: the ping-pong is stuck";
  }
  EXPECT_EQ(b->verify(0, 1, 8), -1);
  EXPECT_EQ(b->verify(1, 0, 8), -1);
  EXPECT_NE(b->verify(0, 1, 64), -1) << "only 8 bytes moved";
}

TEST(HostBackend, VerifyNamesTheFirstBadOffset) {
  const std::uint64_t n = 4096;
  auto b = prepared(n);
  b->run_blocking(0, 1, n);
  EXPECT_EQ(b->verify(0, 1, n), -1);
  EXPECT_EQ(b->verify(0, 1, 100), -1);
  // Device 1's pattern is not device 0's: verifying the wrong source fails at 0.
  EXPECT_EQ(b->verify(1, 1, n), 0);
  // A partial copy: bytes beyond 1000 are stale.
  auto c = prepared(n);
  c->run_blocking(0, 1, 1000);
  EXPECT_EQ(c->verify(0, 1, n), 1000);
}

TEST(HostBackend, RunBlockingTimesOnTheHostOnly) {
  auto b = prepared(1 << 16);
  const auto t = b->run_blocking(0, 1, 1 << 16);
  EXPECT_GE(t.host_end_ns, t.host_start_ns);
  EXPECT_TRUE(std::isnan(t.device_duration_ns));
  EXPECT_EQ(t.device_start_ns, -1);
}

TEST(HostBackend, BadInputIsAUsageError) {
  auto b = prepared(1024);
  EXPECT_THROW(b->run_batch({0, 1, 2048, Pattern::unidirectional, 0, 1}), UsageError);
  EXPECT_FALSE(b->run_batch({1, 1, 8, Pattern::unidirectional, 0, 1}).support.ok);
  EXPECT_THROW(b->run_blocking(0, 9, 8), UsageError);
  auto huge = make_backend("host");
  EXPECT_THROW(huge->prepare({0, 1}, 1ull << 50), UsageError);
}

// Buffers only where copies start and end: a one-way pair holds 2, not 4, and a copy
// it was not set up for is refused rather than run on missing memory.
TEST(HostBackend, PrepareForSetsUpOnlyTheCopiesNamed) {
  auto b = make_backend("host");
  PrepareSpec spec;
  spec.devices = {0, 1};
  spec.max_bytes = 1 << 20;
  spec.copies = {{0, 1}};
  std::vector<std::string> said;
  spec.announce = [&](const std::string& s) { said.push_back(s); };
  spec.announce_after_s = 0;  // say it however quick
  ASSERT_TRUE(b->prepare_for(spec));
  ASSERT_EQ(said.size(), 2u);
  EXPECT_NE(said[0].find("setting up 2 x 1 MiB host buffers (2 MiB"), std::string::npos) << said[0];
  EXPECT_NE(said[1].find("set up in"), std::string::npos) << said[1];
  const auto r = b->run_batch({0, 1, 1 << 20, Pattern::unidirectional, 0, 2});
  EXPECT_EQ(r.elapsed_ns.size(), 2u);
  EXPECT_EQ(b->verify(0, 1, 1 << 20), -1);
  EXPECT_THROW(b->run_blocking(1, 0, 8), UsageError);                                 // 1 has no source
  EXPECT_THROW(b->run_batch({0, 1, 8, Pattern::bidirectional, 0, 1}), UsageError);   // nor 0 a destination
}

// A stop flag up before or during set-up: prepare_for returns false with nothing left
// set up (the sweep then measures nothing), and a later prepare works as ever.
TEST(HostBackend, PrepareForStopsBetweenSlicesAndFreesWhatItSetUp) {
  auto b = make_backend("host");
  std::atomic<bool> stop{false};
  PrepareSpec spec;
  spec.devices = {0, 1};
  spec.max_bytes = 3 * kSetupSliceBytes;  // 3 slices per buffer
  spec.copies = {{0, 1}};
  spec.stop = &stop;
  int slices_said = 0;
  spec.announce_after_s = 0;
  spec.announce = [&](const std::string&) {
    ++slices_said;
    stop = true;  // raised from the set-up thread, before the first slice
  };
  EXPECT_FALSE(b->prepare_for(spec));
  EXPECT_EQ(slices_said, 1);  // the "setting up" line, no "set up in"
  EXPECT_THROW(b->run_blocking(0, 1, 8), UsageError);
  stop = false;
  spec.announce = nullptr;
  spec.max_bytes = 4096;
  EXPECT_TRUE(b->prepare_for(spec));
  b->run_blocking(0, 1, 4096);
  EXPECT_EQ(b->verify(0, 1, 4096), -1);
}

TEST(NcclFormulas, MatchNcclTests) {
  // nccl-tests: 1 GB in 10 ms = 100 GB/s algbw.
  EXPECT_DOUBLE_EQ(algbw_gbps(1e9, 0.01), 100.0);
  EXPECT_DOUBLE_EQ(busbw_gbps(NcclOp::allreduce, 2, 1e9, 0.01), 100.0);
  EXPECT_DOUBLE_EQ(busbw_gbps(NcclOp::allreduce, 4, 1e9, 0.01), 150.0);
  EXPECT_DOUBLE_EQ(busbw_gbps(NcclOp::allreduce, 8, 1e9, 0.01), 175.0);
  EXPECT_DOUBLE_EQ(busbw_gbps(NcclOp::allgather, 4, 1e9, 0.01), 75.0);
  EXPECT_DOUBLE_EQ(busbw_gbps(NcclOp::reducescatter, 2, 1e9, 0.01), 50.0);
  EXPECT_DOUBLE_EQ(busbw_gbps(NcclOp::alltoall, 8, 1e9, 0.01), 87.5);
  EXPECT_DOUBLE_EQ(busbw_gbps(NcclOp::sendrecv, 8, 1e9, 0.01), 100.0);
  // The anchors' nccl-tests sendrecv at 512 MiB: 1508.8 us -> 355.8 GB/s.
  EXPECT_NEAR(algbw_gbps(512.0 * 1024 * 1024, 1508.8e-6), 355.8, 0.05);
  EXPECT_EQ(parse_nccl_op("alltoall"), NcclOp::alltoall);
  EXPECT_THROW(parse_nccl_op("broadcastish"), UsageError);
  EXPECT_NE(busbw_formula_text(NcclOp::allreduce).find("2(n-1)/n"), std::string::npos);
}
