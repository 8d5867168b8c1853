// Issue 32 item 10: a session's bookkeeping (per-chunk timing samples, per-round figures)
// is bounded by a stated cap and counts against the server's --max-memory. Before, a
// client asking for 100000 rounds of small chunks grew the server by 8 bytes a chunk
// without limit (8 to 172 MB in 40 rounds at 1 KiB chunks).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/server_thread.hpp"
#include "transport/session/channel.hpp"
#include "transport/session/samples.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using p2pscope::session::LatencySamples;

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

TEST(SessionBookkeeping, TenMillionSamplesKeepAtMostTheCapAndTheirMedian) {
  LatencySamples s(4096);
  for (std::uint64_t i = 0; i < 10'000'000; ++i) s.push(static_cast<double>(i % 1000));
  EXPECT_EQ(s.seen(), 10'000'000u);
  EXPECT_LE(s.size(), 4096u);
  EXPECT_GE(s.size(), 2048u);  // it halves when full, never below half
  EXPECT_NEAR(median_of(s.values()), 500, 40);  // a uniform subset: the median holds
}

// A failed round's samples are undone exactly: the store holds what it would hold had
// that round never run (the kept set depends on the samples' indices alone).
TEST(SessionBookkeeping, TruncateForgetsAFailedRoundAsIfItNeverRan) {
  LatencySamples a(256), b(256);
  for (int i = 0; i < 5000; ++i) a.push(i);
  for (int i = 0; i < 9000; ++i) b.push(i);
  b.truncate(5000);
  EXPECT_EQ(b.seen(), 5000u);
  const auto va = a.values(), vb = b.values();
  // Both within their cap, before and after the truncation (a vector of every sample, as
  // the old code kept, truncates exactly too: this is what tells them apart).
  EXPECT_LE(va.size(), 256u);
  EXPECT_LE(vb.size(), 256u);
  for (double v : vb) EXPECT_LT(v, 5000);
  // b rose a level or more past a (more samples came): it keeps a subset of a's.
  EXPECT_LE(vb.size(), va.size());
  for (double v : vb) EXPECT_NE(std::find(va.begin(), va.end(), v), va.end()) << v;
}

TEST(SessionBookkeeping, TheSessionCapIsStatedAndSpreadOverChannels) {
  EXPECT_EQ(LatencySamples::cap_for(1), LatencySamples::kMaxPerChannel);
  EXPECT_EQ(LatencySamples::cap_for(64), LatencySamples::kSessionSamples / 64);
  EXPECT_EQ(LatencySamples::cap_for(100000), LatencySamples::kMinPerChannel);
  // At most the session's budget (or the floor per channel) in all.
  for (std::uint64_t c : {1u, 3u, 64u, 4096u, 8192u})
    EXPECT_LE(c * LatencySamples::cap_for(c),
              std::max<std::uint64_t>(LatencySamples::kSessionSamples, c * LatencySamples::kMinPerChannel));
}

// 100000 rounds of 64 one-KiB chunks need only 8 KiB of buffers, but their samples and
// per-round figures take megabytes: a server with --max-memory 1M refuses the session
// and names its bookkeeping. Before, it accepted and grew by 8 bytes a chunk.
TEST(SessionBookkeeping, AServerCountsBookkeepingAgainstItsMaxMemory) {
  ServerOptions so;
  so.limits.max_memory_bytes = 1u << 20;
  p2pscope::test::ServerThread srv(so);
  Params p{.size_bytes = 64u << 10, .chunk_bytes = 1u << 10, .iters = 100000, .timeout_s = 4};
  const std::string err = p2pscope::test::refusal_of(srv.port(), p);  // the old code ran it: stopped at 5 s
  EXPECT_NE(err.find("bookkeeping"), std::string::npos) << err;
  EXPECT_NE(err.find("--max-memory 1 MiB"), std::string::npos) << err;
  // A session of the same buffers and a few rounds fits: the count is not a flat charge.
  p.iters = 5;
  ClientOptions co;
  co.port = srv.port();
  const Results r = run_client(co, p);
  EXPECT_TRUE(r.failure.empty()) << r.failure;
}

// What is counted bounds what is kept: the worst channel count and rounds stay within the
// stated figures (16 bytes a sample, 16 a round).
TEST(SessionBookkeeping, TheCountedBytesAreBoundedWhateverTheClientAsks) {
  Params p{.channels = 4096, .size_bytes = 64ull << 30, .chunk_bytes = 16u << 10, .iters = 100000};
  const std::uint64_t samples = std::max<std::uint64_t>(LatencySamples::kSessionSamples,
                                                        4096 * LatencySamples::kMinPerChannel) * 16;
  EXPECT_LE(p2pscope::session::bookkeeping_bytes(p), samples + 100001 * 16 + (64ull << 30) / (16u << 10) * 8 +
                                                         4096ull * p.window * 8);
}
