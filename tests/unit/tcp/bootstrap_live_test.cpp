// gather_live / broadcast_live (the survey's exchanges): rank 0 goes on without a rank
// that died or stays silent past the timeout, names it, and skips it from then on.
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "p2pscope/bootstrap.hpp"
#include "p2pscope/clock.hpp"
#include "support/loopback_port.hpp"

using namespace p2pscope;

namespace {

// Ranks as threads; rank `quits` leaves after the first exchange (its bootstrap is
// destroyed, as a killed process's sockets close), rank `stalls` never sends its part.
struct Outcome {
  std::vector<std::optional<std::string>> first, second;
  std::vector<std::pair<int, std::string>> dropped;
  double second_s = 0;
};

Outcome run(int size, int quits, int stalls, double timeout_s) {
  const std::uint16_t port = p2pscope::test::free_port();
  Outcome out;
  std::promise<void> done;
  auto done_f = done.get_future().share();
  std::vector<std::future<void>> ranks;
  for (int r = 0; r < size; ++r)
    ranks.push_back(std::async(std::launch::async, [&, r] {
      auto b = make_tcp_bootstrap(r, size, "127.0.0.1", port, 10);
      if (r == 0) {
        out.first = b->gather_live("part0", timeout_s);
        b->broadcast_live("go", timeout_s);
        const std::int64_t t0 = monotonic_ns();
        out.second = b->gather_live("again0", timeout_s);
        out.second_s = static_cast<double>(monotonic_ns() - t0) / 1e9;
        out.dropped = b->dropped();
        done.set_value();
        return;
      }
      if (r == stalls) {
        (void)b->gather_live("part" + std::to_string(r), timeout_s);
        (void)b->broadcast_live("", timeout_s);
        done_f.wait();  // silent: alive, but never sends the second part
        return;
      }
      (void)b->gather_live("part" + std::to_string(r), timeout_s);
      if (r == quits) return;  // its socket closes here
      (void)b->broadcast_live("", timeout_s);
      (void)b->gather_live("again" + std::to_string(r), timeout_s);
    }));
  for (auto& f : ranks) f.get();
  return out;
}

TEST(BootstrapLive, ADeadRankIsDroppedAndTheOthersGathered) {
  const Outcome o = run(4, /*quits=*/2, /*stalls=*/-1, 5);
  ASSERT_EQ(o.first.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(o.first[r].value_or("?"), "part" + std::to_string(r));
  ASSERT_EQ(o.second.size(), 4u);
  EXPECT_EQ(o.second[1].value_or("?"), "again1");
  EXPECT_FALSE(o.second[2].has_value());
  EXPECT_EQ(o.second[3].value_or("?"), "again3");
  ASSERT_EQ(o.dropped.size(), 1u);
  EXPECT_EQ(o.dropped[0].first, 2);
  EXPECT_LT(o.second_s, 4.0) << "a closed socket is seen at once, not at the timeout";
}

TEST(BootstrapLive, ASilentRankIsDroppedAtTheTimeoutNotBefore) {
  const Outcome o = run(3, /*quits=*/-1, /*stalls=*/1, 1.0);
  EXPECT_FALSE(o.second[1].has_value());
  EXPECT_EQ(o.second[2].value_or("?"), "again2");
  ASSERT_EQ(o.dropped.size(), 1u);
  EXPECT_EQ(o.dropped[0].first, 1);
  EXPECT_GE(o.second_s, 0.9);
  EXPECT_LT(o.second_s, 5.0);
}

}  // namespace
