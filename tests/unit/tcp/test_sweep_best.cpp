// SweepResult's best and next point, and when the best is ahead beyond the noise.
#include <gtest/gtest.h>

#include <vector>

#include "p2pscope/stats.hpp"
#include "transport/tcp/sweep.hpp"

TEST(SweepFigures, SeparableOnlyWhenTheRepetitionsDoNotOverlap) {
  using p2pscope::compute_stats;
  using p2pscope::tcp::separable;
  const std::vector<double> a{10, 11, 12}, b{8, 9, 9.5}, c{9, 10.5, 11}, one{20};
  EXPECT_TRUE(separable(compute_stats(a), compute_stats(b)));
  EXPECT_FALSE(separable(compute_stats(a), compute_stats(c))) << "11 is within 10..12";
  EXPECT_FALSE(separable(compute_stats(one), compute_stats(b))) << "one repetition gives no interval";

  p2pscope::tcp::SweepResult r;
  for (double v : a) r.runs.push_back({{1, 1 << 20, 2, 1}, 0, v, 0, 0, 0, 0});
  for (double v : c) r.runs.push_back({{2, 1 << 20, 2, 1}, 0, v, 0, 0, 0, 0});
  for (double v : b) r.runs.push_back({{4, 1 << 20, 2, 1}, 0, v, 0, 0, 0, 0});
  ASSERT_TRUE(r.best() && r.runner_up());
  EXPECT_EQ(r.best()->first.channels, 1u);
  EXPECT_EQ(r.runner_up()->first.channels, 2u) << "the next highest median, not the last point";
}
