// The median's interval with the repetitions split over processes (profile --processes
// K): a steady shift between processes, which the order-statistics interval of one
// process cannot see, widens it; one process keeps today's interval; the split of the
// repetitions covers each exactly once.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "analyze/campaign.hpp"
#include "p2pscope/profile.hpp"

namespace p2pscope::analyze {
namespace {

// One config, 10 repetitions: reps 0-4 near 1000 ns, reps 5-9 near 1000 x (1 + shift),
// each with 0.1 % noise; metadata says the repetitions ran in `processes` processes.
Campaign shifted(int processes, double shift, int reps = 10) {
  Campaign c;
  c.metadata = {{"plan", {{"reps", reps}}}, {"settings", {{"processes", processes}}}};
  std::mt19937_64 rng(7);
  std::normal_distribution<double> gauss(0, 0.001);
  for (int r = 0; r < reps; ++r) {
    const double t = 1000 * (r < reps / 2 ? 1 : 1 + shift) * (1 + gauss(rng));
    c.ops.push_back({0, 0, 1, 64, r, "staged", 1000 + r, t, true});
  }
  return c;
}

TEST(ProcessInterval, TQuantiles) {
  EXPECT_NEAR(t975(1), 12.706, 1e-3);
  EXPECT_NEAR(t975(2), 4.303, 1e-3);
  EXPECT_NEAR(t975(9), 2.262, 1e-3);
  EXPECT_NEAR(t975(60), 2.000, 0.002);
  EXPECT_NEAR(t975(100000), 1.960, 0.001);
  EXPECT_TRUE(std::isnan(t975(0)));
}

TEST(ProcessInterval, WidenedInQuadratureByTheTIntervalOfTheProcessMedians) {
  MedianInterval w;
  w.lo_ns = 99;
  w.hi_ns = 102;
  w.level = 0.96;
  const auto r = widen_by_processes(w, 100, {100, 100, 108});
  const double between = 4.303 * std::sqrt(64.0 / 3) / std::sqrt(3.0);  // SD of {100, 100, 108} = sqrt(64/3)
  EXPECT_NEAR(r.between_ns, between, 1e-2);
  EXPECT_NEAR(r.lo_ns, 100 - std::hypot(1.0, between), 1e-2);
  EXPECT_NEAR(r.hi_ns, 100 + std::hypot(2.0, between), 1e-2);
  EXPECT_DOUBLE_EQ(r.within_lo_ns, 99);
  EXPECT_DOUBLE_EQ(r.within_hi_ns, 102);
  EXPECT_EQ(r.processes, 3);
  EXPECT_DOUBLE_EQ(r.level, 0.96);
  // One process median: nothing to widen by.
  const auto one = widen_by_processes(w, 100, {100});
  EXPECT_DOUBLE_EQ(one.lo_ns, 99);
  EXPECT_DOUBLE_EQ(one.hi_ns, 102);
  EXPECT_EQ(one.between_ns, 0);
}

// The H100 case: the second process 8 % slower. Read as one process, the interval is a
// few ns wide around the middle of the two and holds neither process's median; read as
// two, it holds both.
TEST(ProcessInterval, ASyntheticBetweenProcessShiftWidensTheInterval) {
  const auto one = summarize_configs(shifted(1, 0.08), OutlierRule::none);
  ASSERT_EQ(one.size(), 1u);
  const auto& a = one[0].median_ci;
  EXPECT_TRUE(a.process_medians_ns.empty());
  EXPECT_EQ(a.between_ns, 0);
  const auto two = summarize_configs(shifted(2, 0.08), OutlierRule::none);
  ASSERT_EQ(two.size(), 1u);
  const auto& b = two[0].median_ci;
  ASSERT_EQ(b.process_medians_ns.size(), 2u);
  EXPECT_NEAR(b.process_medians_ns[0], 1000, 5);
  EXPECT_NEAR(b.process_medians_ns[1], 1080, 5);
  // t(1) x SD / sqrt(2) = 12.706 x 56.6 / 1.414 = 508 ns
  EXPECT_NEAR(b.between_ns, 12.706 * 80 / 2, 10);
  EXPECT_LT(b.lo_ns, 1000);
  EXPECT_GT(b.hi_ns, 1080);
  EXPECT_GT(b.hi_ns - b.lo_ns, 10 * (a.hi_ns - a.lo_ns));
  EXPECT_DOUBLE_EQ(b.within_lo_ns, a.lo_ns);  // the within-process term is today's interval
  EXPECT_DOUBLE_EQ(b.within_hi_ns, a.hi_ns);
  // No shift: three processes widen it by little (their medians agree within the noise).
  const auto same = summarize_configs(shifted(3, 0, 9), OutlierRule::none);
  EXPECT_LT(same[0].median_ci.hi_ns - same[0].median_ci.lo_ns, 30);
  // A split the plan cannot hold (more processes than repetitions): read as one process.
  const auto odd = summarize_configs(shifted(20, 0.08), OutlierRule::none);
  EXPECT_TRUE(odd[0].median_ci.process_medians_ns.empty());
}

TEST(ProcessInterval, SharesCoverEveryRepetitionOnce) {
  for (int reps = 1; reps <= 23; ++reps)
    for (int k = 1; k <= reps; ++k) {
      int next = 0;
      for (int i = 0; i < k; ++i) {
        const auto [a, b] = profile::share_repetitions(reps, k, i);
        EXPECT_EQ(a, next) << reps << " " << k << " " << i;
        EXPECT_GE(b - a, reps / k);
        EXPECT_LE(b - a, reps / k + 1);
        for (int r = a; r < b; ++r) EXPECT_EQ(profile::process_of_repetition(r, reps, k), i);
        next = b;
      }
      EXPECT_EQ(next, reps);
    }
  EXPECT_EQ(profile::share_repetitions(10, 3, 0), std::make_pair(0, 3));
  EXPECT_EQ(profile::share_repetitions(10, 3, 2), std::make_pair(6, 10));
}

}  // namespace
}  // namespace p2pscope::analyze
