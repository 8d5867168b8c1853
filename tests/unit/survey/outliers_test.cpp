// The outlier statistics and the verdict on synthetic surveys with known answers: a slow
// link, a slow NIC, a slow host, a slow partner, noise that must not raise a flag.
#include <gtest/gtest.h>

#include <random>

#include "survey/outliers.hpp"
#include "survey/verdict.hpp"

namespace p2pscope::survey {
namespace {

constexpr double kRate = 25e6;  // B/s

// All pairs of n hosts on `rails` rails, both directions, 5 rounds each with ~1 % noise;
// `factor(from, to, rail)` scales a figure.
template <class F>
std::vector<Figure> synthetic(int n, int rails, F factor, double noise = 0.01, unsigned seed = 1, int pass = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(1.0, noise);
  std::vector<Figure> out;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      for (int r = 0; r < rails; ++r) {
        Figure f{Metric::bandwidth, pass, a, b, r, "NIC 200 Mb/s", {}};
        for (int i = 0; i < 5; ++i) f.samples.push_back(kRate * factor(a, b, r) * d(rng));
        out.push_back(f);
      }
    }
  return out;
}

ClusterNames names(int n, int rails) {
  ClusterNames c;
  for (int h = 0; h < n; ++h) {
    c.hosts.push_back("host" + std::to_string(h));
    std::vector<std::string> nics;
    for (int r = 0; r < rails; ++r) nics.push_back("eth" + std::to_string(r + 1));
    c.nics.push_back(nics);
  }
  for (int r = 0; r < rails; ++r) c.rails.push_back("eth" + std::to_string(r + 1));
  return c;
}

int flags(const std::vector<Judged>& js) {
  int n = 0;
  for (const auto& j : js) n += j.flagged ? 1 : 0;
  return n;
}

TEST(SurveyOutliers, HealthyNoisySurveysFlagNothing) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const auto js = judge(synthetic(8, 2, [](int, int, int) { return 1.0; }, 0.02, seed), {});
    EXPECT_EQ(flags(js), 0) << seed;
    const Verdict v = decide(js, names(8, 2), {});
    EXPECT_EQ(v.links, 56);
    EXPECT_EQ(v.slow_links, 0);
    EXPECT_TRUE(v.findings.empty());
    EXPECT_EQ(v.headline.rfind("0 of 56 links slow", 0), 0u) << v.headline;
  }
}

TEST(SurveyOutliers, OneDirectionAtHalfIsTheOnlyFlagAndNamedWithItsRatio) {
  const auto js = judge(synthetic(8, 2, [](int a, int b, int r) { return a == 3 && b == 5 && r == 1 ? 0.5 : 1.0; }), {});
  ASSERT_EQ(flags(js), 1);
  for (const auto& j : js)
    if (j.flagged) {
      EXPECT_EQ(j.figure.from, 3);
      EXPECT_EQ(j.figure.to, 5);
      EXPECT_NEAR(j.ratio, 0.5, 0.02);
      EXPECT_LE(j.ratio_lo, j.ratio);
      EXPECT_GE(j.ratio_hi, j.ratio);
    }
  const Verdict v = decide(js, names(8, 2), {});
  EXPECT_EQ(v.slow_links, 1);
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].kind, "link");
  EXPECT_NE(v.headline.find("1 of 56 links slow: host3 eth2 <-> host5 eth2 at 50 % of its class"), std::string::npos)
      << v.headline;
  EXPECT_NE(v.headline.find("host3 -> host5 only"), std::string::npos) << v.headline;
}

TEST(SurveyOutliers, FourPercentSlowIsUnderTheThresholdAndSixIsFound) {
  const auto at = [](double f) {
    return judge(synthetic(8, 2, [f](int a, int b, int r) { return a == 1 && b == 2 && r == 0 ? f : 1.0; }, 0.002), {});
  };
  EXPECT_EQ(flags(at(0.96)), 0);
  EXPECT_EQ(flags(at(0.94)), 1);
}

// 16 shaped namespace hosts on the 16-core machine: most links sit at the line rate round
// after round, so the class's interval is a hair wide, and a healthy link whose rounds
// swing (measured: 18.4-25.0 MB/s) has a median 8 % under it with an interval that ends
// 0.3 % under it. The median alone met the 5 % threshold and both intervals were apart:
// the old rule flagged it (5 of 20 healthy device surveys). The whole interval must be
// beyond the threshold; a link at 80 % that swings alike is still found.
TEST(SurveyOutliers, AHealthyLinkWhoseRoundsSwingIsNotFlaggedAndOneAt80PercentIs) {
  std::vector<Figure> figs = synthetic(16, 2, [](int, int, int) { return 1.0; }, 0.001, 7);
  const std::vector<double> swinging = {18.4e6, 19.5e6, 21.0e6, 22.0e6, 22.9e6, 23.5e6, 24.0e6, 24.9e6, 25.0e6};
  for (Figure& f : figs) {
    if (f.from == 0 && f.to == 3 && f.rail == 0) f.samples = swinging;
    if (f.from == 5 && f.to == 9 && f.rail == 1) {
      f.samples.clear();
      for (double v : swinging) f.samples.push_back(0.8 * v);
    }
  }
  const auto js = judge(figs, {});
  const Judged* healthy = nullptr;
  const Judged* slow = nullptr;
  for (const Judged& j : js) {
    if (j.figure.from == 0 && j.figure.to == 3 && j.figure.rail == 0) healthy = &j;
    if (j.figure.from == 5 && j.figure.to == 9 && j.figure.rail == 1) slow = &j;
  }
  ASSERT_TRUE(healthy && slow);
  EXPECT_LT(healthy->ratio, 0.95);              // the median is 8 % under the class ...
  EXPECT_LT(healthy->hi, healthy->class_lo);    // ... and the intervals are apart ...
  EXPECT_FALSE(healthy->flagged) << healthy->why;  // ... but its best round-set is not 5 % slower
  EXPECT_NE(healthy->why.find("its rounds swung"), std::string::npos) << healthy->why;
  EXPECT_TRUE(slow->flagged) << slow->why;
  EXPECT_EQ(flags(js), 1);
}

TEST(SurveyOutliers, NoiseWiderThanTheGapRaisesNoFlag) {
  // 10 % slower, but one link's rounds spread by +-30 %: its interval meets the class's.
  auto figs = synthetic(8, 2, [](int, int, int) { return 1.0; });
  for (auto& f : figs)
    if (f.from == 2 && f.to == 6 && f.rail == 0) f.samples = {0.6 * kRate, 1.2 * kRate, 0.9 * kRate, 0.85 * kRate, 1.25 * kRate};
  const auto js = judge(figs, {});
  EXPECT_EQ(flags(js), 0);
}

TEST(SurveyOutliers, ABusyHostIsOneHostFindingNotFourteenLinks) {
  const auto js = judge(synthetic(8, 2, [](int a, int b, int) { return a == 4 || b == 4 ? 0.6 : 1.0; }), {});
  EXPECT_EQ(flags(js), 28);  // 7 partners x 2 rails x 2 directions
  const Verdict v = decide(js, names(8, 2), {});
  EXPECT_EQ(v.slow_links, 14);
  ASSERT_EQ(v.findings.size(), 1u) << v.headline;
  EXPECT_EQ(v.findings[0].kind, "host");
  EXPECT_EQ(v.findings[0].host, 4);
  EXPECT_NE(v.headline.find("host4 slow: 14 of its 14 links"), std::string::npos) << v.headline;
}

TEST(SurveyOutliers, ASlowNicIsTheNicWhenTheOtherRailIsNormal) {
  const auto js = judge(synthetic(8, 2, [](int a, int b, int r) { return (a == 2 || b == 2) && r == 1 ? 0.5 : 1.0; }), {});
  const Verdict v = decide(js, names(8, 2), {});
  ASSERT_EQ(v.findings.size(), 1u) << v.headline;
  EXPECT_EQ(v.findings[0].kind, "nic");
  EXPECT_EQ(v.findings[0].host, 2);
  EXPECT_EQ(v.findings[0].rail, 1);
  EXPECT_NE(v.headline.find("host2 eth2 slow"), std::string::npos) << v.headline;
}

TEST(SurveyOutliers, TheSecondPassTellsTheLinkFromASlowEnd) {
  auto first = synthetic(8, 2, [](int a, int b, int r) { return a == 3 && b == 5 && r == 1 ? 0.5 : 1.0; });
  // Pass 2: host3 and host5 each against a good partner on both rails.
  const auto recheck = [&](double f3) {
    std::vector<Figure> figs = first;
    auto add = [&](int a, int b, double f) {
      for (int r = 0; r < 2; ++r)
        for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
          figs.push_back({Metric::bandwidth, 2, x, y, r, "NIC 200 Mb/s", std::vector<double>(5, kRate * (r == 1 ? f : 1.0))});
    };
    add(3, 0, f3);
    add(5, 1, 1.0);
    return decide(judge(figs, {}), names(8, 2), {});
  };
  const Verdict link = recheck(1.0);
  ASSERT_EQ(link.findings.size(), 1u);
  EXPECT_NE(link.findings[0].text.find("each normal against a good partner: the link or its switch port"),
            std::string::npos)
      << link.findings[0].text;
  const Verdict nic = recheck(0.5);
  ASSERT_EQ(nic.findings.size(), 1u);
  EXPECT_NE(nic.findings[0].text.find("host3 also slow against a good partner: its NIC eth2"), std::string::npos)
      << nic.findings[0].text;
}

TEST(SurveyOutliers, AFlagTheLinkDoesNotRepeatWhenMeasuredAgainIsDropped) {
  auto figs = synthetic(8, 2, [](int a, int b, int r) { return a == 3 && b == 5 && r == 1 ? 0.9 : 1.0; });
  const auto again = [&](double f) {
    std::vector<Figure> all = figs;
    all.push_back({Metric::bandwidth, 2, 3, 5, 1, "NIC 200 Mb/s", std::vector<double>(5, kRate * f)});
    all.push_back({Metric::bandwidth, 2, 5, 3, 1, "NIC 200 Mb/s", std::vector<double>(5, kRate)});
    return decide(judge(all, {}), names(8, 2), {});
  };
  const Verdict transient = again(1.0);
  EXPECT_EQ(transient.slow_links, 0) << transient.headline;
  EXPECT_EQ(transient.bandwidth_unrepeated, 1);
  EXPECT_TRUE(transient.findings.empty()) << transient.headline;
  const Verdict real = again(0.9);
  EXPECT_EQ(real.slow_links, 1) << real.headline;
  EXPECT_EQ(real.bandwidth_unrepeated, 0);
}

TEST(SurveyOutliers, AGoneHostIsNamedAndTheRestJudged) {
  auto figs = synthetic(4, 1, [](int, int, int) { return 1.0; });
  std::erase_if(figs, [](const Figure& f) { return f.from == 3 || f.to == 3; });
  std::vector<std::string> gone(4);
  gone[3] = "rank 3 stopped answering in the bandwidth step of round 2 (pass 1)";
  const Verdict v = decide(judge(figs, {}), names(4, 1), gone);
  EXPECT_EQ(v.links, 3);
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].kind, "gone");
  EXPECT_NE(v.headline.find("host3 dropped out"), std::string::npos) << v.headline;
}

TEST(SurveyOutliers, LatencyFlagsNeedTheirOwnThreshold) {
  std::vector<Figure> figs;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b) {
      const double base = (a == 1 && b == 4) ? 33e3 : 20e3;  // +64 %: over the 50 % threshold, under 70
      Figure f{Metric::latency, 1, a, b, 0, "NIC 200 Mb/s", {}};
      for (int i = 0; i < 200; ++i) f.samples.push_back(base + (i % 7) * 100);
      figs.push_back(f);
    }
  OutlierOptions o;
  EXPECT_EQ(flags(judge(figs, o)), 1);
  o.latency_threshold_pct = 70;
  EXPECT_EQ(flags(judge(figs, o)), 0);
}

TEST(SurveyOutliers, SmallClassesAreNotJudged) {
  std::vector<Figure> figs{{Metric::bandwidth, 1, 0, 1, 0, "c", {1, 1, 1}}, {Metric::bandwidth, 1, 1, 0, 0, "c", {0.1, 0.1, 0.1}}};
  const auto js = judge(figs, {});
  EXPECT_EQ(flags(js), 0);
  EXPECT_NE(js[0].why.find("not judged"), std::string::npos);
}

}  // namespace
}  // namespace p2pscope::survey
