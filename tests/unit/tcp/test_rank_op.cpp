// The launcher path's cost per op (issue 30): under torchrun a campaign ran at 5.5 ops/s
// where one process ran 1500, because each op took 5 bootstrap frames per peer (a batch
// of k ops 5k) and Nagle held rank 0's second frame in a row until the peer's delayed
// ACK (40 ms). Ranks are threads over the loopback TCP bootstrap; each rank's backend
// does no device work, so what is measured is the control path alone.
#include <algorithm>
#include <future>

#include <unistd.h>

#include <gtest/gtest.h>

#include "bench/driven_backend.hpp"
#include "bench/rank_op.hpp"
#include "bootstrap/bring_up.hpp"
#include "p2pscope/clock.hpp"
#include "support/loopback_port.hpp"

using namespace p2pscope;
using namespace p2pscope::bench;
using p2pscope::test::free_port;

namespace {

// One rank's backend: its side of an op takes no time and reports made-up device
// times that say which rank measured them (rank r: 1000 * (r + 1) ns per op).
class ThreadRank final : public Backend {
 public:
  explicit ThreadRank(Bootstrap& b) : boot_(b) {}
  std::string name() const override { return "threads"; }
  int device_count() const override { return boot_.size(); }
  std::string device_name(int d) const override { return "rank " + std::to_string(d); }
  PairSupport support(int, int) const override { return {}; }
  void prepare(const std::vector<int>&, std::uint64_t) override {}
  BatchResult run_batch(const BatchSpec&) override { return {}; }
  std::int64_t verify(int, int, std::uint64_t) override { return -1; }
  OpTiming run_blocking(int s, int d, std::uint64_t n) override { return run_blocking_batch(s, d, n, 1); }
  OpTiming run_blocking_batch(int s, int d, std::uint64_t, int count) override {
    return op_among_ranks(boot_, s, d, s, [&] {
      SideTiming t;
      t.host_start_ns = monotonic_ns();
      t.device_ns = 1000.0 * count * (boot_.rank() + 1);
      t.device_start_ns = 100 * (boot_.rank() + 1);
      t.device_end_ns = t.device_start_ns + static_cast<std::int64_t>(t.device_ns);
      t.host_end_ns = monotonic_ns();
      return t;
    });
  }

 private:
  Bootstrap& boot_;
};

constexpr int kRanks = 4;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rank 0's view: `round_trip_ns`, barrier times before serving; then `fn` drives ops.
template <class F>
void with_ranks(F&& fn, int barriers = 0) {
  const std::uint16_t port = free_port();
  std::vector<std::future<void>> peers;
  for (int r = 1; r < kRanks; ++r)
    peers.push_back(std::async(std::launch::async, [=] {
      auto boot = make_tcp_bootstrap(r, kRanks, "127.0.0.1", port, 20);
      for (int i = 0; i < barriers; ++i) boot->barrier();
      ThreadRank mine(*boot);
      serve_backend(mine, *boot);
    }));
  std::shared_ptr<Bootstrap> boot = make_tcp_bootstrap(0, kRanks, "127.0.0.1", port, 20);
  fn(boot, barriers);
  for (auto& p : peers) p.get();
}

}  // namespace

TEST(RankOp, AnOpOrABatchCostsEachPeerOneRoundTripAndRankZeroGetsBothSides) {
  with_ranks([](std::shared_ptr<Bootstrap> boot, int) {
    {
      auto driven = make_driven_backend(std::make_unique<ThreadRank>(*boot), boot);
      const BootstrapCounters a = boot->counters();
      int ops = 0;
      for (int s = 0; s < kRanks; ++s)
        for (int d = 0; d < kRanks; ++d) {
          if (s == d) continue;
          for (int count : {1, 7, 512}) {
            const OpTiming t = driven->run_blocking_batch(s, d, 8, count);
            ++ops;
            // The later side's device time; the source's stamps.
            EXPECT_DOUBLE_EQ(t.device_duration_ns, 1000.0 * count * (std::max(s, d) + 1)) << s << ">" << d;
            EXPECT_EQ(t.device_start_ns, 100 * (s + 1));
            EXPECT_GE(t.host_end_ns, t.host_start_ns);
          }
          driven->run_blocking(s, d, 8);
          ++ops;
        }
      const BootstrapCounters b = boot->counters();
      const std::uint64_t frames = b.frames_sent - a.frames_sent + b.frames_received - a.frames_received;
      // Rank 0 relays: every peer's frames pass through it.
      EXPECT_EQ(frames, static_cast<std::uint64_t>(ops) * kFramesPerRankOp * (kRanks - 1));
      EXPECT_LE(kFramesPerRankOp, 2);  // one round trip per peer
      EXPECT_EQ(b.collectives - a.collectives, static_cast<std::uint64_t>(ops) * 2);  // command + gather
    }  // the driven backend's destructor stops the serving ranks
  });
}

// The time of one op against the time of one bootstrap round trip (a barrier), both
// medians: an op is a command and a gather, one round trip. A Nagle stall (40 ms) or a
// polling interval of milliseconds would make it hundreds of round trips. The slack is
// 1 ms: under ASan+UBSan on 2 loaded cores, 4 rank threads took 504.6 us an op against
// 101 us a barrier (the command's JSON is built and parsed in a Debug build), over a
// bound of 3 round trips + 200 us.
TEST(RankOp, OneOpCostsAFewRoundTripsNotAStall) {
  constexpr int kRounds = 200;
  with_ranks(
      [](std::shared_ptr<Bootstrap> boot, int barriers) {
        std::vector<double> rtt, op;
        for (int i = 0; i < barriers; ++i) {
          const std::int64_t t0 = monotonic_ns();
          boot->barrier();
          rtt.push_back(static_cast<double>(monotonic_ns() - t0));
        }
        auto driven = make_driven_backend(std::make_unique<ThreadRank>(*boot), boot);
        for (int i = 0; i < kRounds; ++i) {
          const std::int64_t t0 = monotonic_ns();
          driven->run_blocking_batch(i % kRanks, (i + 1) % kRanks, 8, 16);
          op.push_back(static_cast<double>(monotonic_ns() - t0));
        }
        const double r = median(rtt), o = median(op);
        RecordProperty("round_trip_us", std::to_string(r / 1e3));
        RecordProperty("op_us", std::to_string(o / 1e3));
        EXPECT_LE(o, 3 * r + 1'000'000) << "median op " << o / 1e3 << " us, median round trip " << r / 1e3 << " us";
        EXPECT_LT(o, 10e6) << "an op took " << o / 1e6 << " ms: Nagle or a polling interval?";
      },
      kRounds);
}

// The run's own ranks are no strangers on the GPUs: bring-up tells rank 0 each rank's
// pid and host (the "GPU 1 is used by 1 other process" warning named our own ranks).
TEST(RankOp, BringUpTellsEveryRanksPidAndHost) {
  const std::uint16_t port = free_port();
  auto peer = std::async(std::launch::async, [=] {
    auto boot = make_tcp_bootstrap(1, 2, "127.0.0.1", port, 10);
    return gather_rank_places(*boot, {});
  });
  auto boot = make_tcp_bootstrap(0, 2, "127.0.0.1", port, 10);
  const auto mine = gather_rank_places(*boot, {});
  const auto theirs = peer.get();
  ASSERT_EQ(mine.size(), 2u);
  ASSERT_EQ(theirs.size(), 2u);
  for (const auto& p : mine) {
    EXPECT_EQ(p.pid, static_cast<std::int64_t>(::getpid()));  // threads: one process
    EXPECT_FALSE(p.host.empty());
    EXPECT_FALSE(p.cpus.empty());
  }
  EXPECT_EQ(mine[1].host, theirs[1].host);
}
