#include <gtest/gtest.h>

#include <cmath>

#include "p2pscope/stats.hpp"

using namespace p2pscope;

TEST(Stats, KnownSample) {
  const std::vector<double> v{5, 1, 4, 2, 3};
  const Stats s = compute_stats(v);
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.p5, 1.2);   // numpy: percentile([1..5], 5) = 1.2
  EXPECT_DOUBLE_EQ(s.p95, 4.8);
  EXPECT_NEAR(s.stddev, std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(s.cv, std::sqrt(2.5) / 3, 1e-12);
}

TEST(Stats, EvenCountMedianInterpolates) {
  const std::vector<double> v{10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(compute_stats(v).median, 25);
}

TEST(Stats, EmptyAndSingle) {
  EXPECT_EQ(compute_stats({}).n, 0u);
  const std::vector<double> one{7};
  const Stats s = compute_stats(one);
  EXPECT_DOUBLE_EQ(s.median, 7);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.cv, 0);
}

// The one median (before: three, one of which took the upper middle of an even count
// and gave 0 for no samples).
TEST(Stats, MedianOddEvenEmptyOne) {
  EXPECT_DOUBLE_EQ(median(std::vector<double>{9, 1, 5}), 5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{40, 10, 30, 20}), 25);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{7}), 7);
  EXPECT_TRUE(std::isnan(median(std::vector<double>{})));
  EXPECT_DOUBLE_EQ(median(std::vector<double>{-3, 3}), 0);
}

TEST(Stats, PercentileOfUnsortedSamples) {
  const std::vector<double> v{5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(percentile(v, 0.05), 1.2);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 1), 5);
  EXPECT_DOUBLE_EQ(percentile(v, 0.25), 2);
  EXPECT_TRUE(std::isnan(percentile(std::vector<double>{}, 0.5)));
  EXPECT_EQ(v.front(), 5) << "the samples are not reordered";
}
