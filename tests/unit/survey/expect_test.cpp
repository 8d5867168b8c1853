// --expect: the rates and times it reads, and the one fault comparing peers cannot see (a
// whole class below what it should carry) found, while a class at its expected rate, or one
// whose interval reaches it, is not.
#include <gtest/gtest.h>

#include <random>

#include "p2pscope/error.hpp"
#include "survey/expect.hpp"

namespace p2pscope::survey {
namespace {

TEST(SurveyExpect, RatesInTheFormsToolsWriteThem) {
  EXPECT_DOUBLE_EQ(parse_rate("23MB/s", "x"), 23e6);
  EXPECT_DOUBLE_EQ(parse_rate("2.5GB/s", "x"), 2.5e9);
  EXPECT_DOUBLE_EQ(parse_rate("200mbit", "x"), 25e6);      // tc
  EXPECT_DOUBLE_EQ(parse_rate("10Gbit/s", "x"), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_rate("100Gb/s", "x"), 12.5e9);    // ethtool, vendors: bits
  EXPECT_DOUBLE_EQ(parse_rate("400Mbps", "x"), 50e6);
  EXPECT_DOUBLE_EQ(parse_rate("1GiB/s", "x"), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_rate("512B/s", "x"), 512);
  for (const char* bad : {"fast", "23", "-5MB/s", "23XB/s", "MB/s", "1e999GB/s", "0MB/s", "", "23Mb/sx"})
    EXPECT_THROW(parse_rate(bad, "--expect bw"), UsageError) << bad;
}

TEST(SurveyExpect, SpecPartsAndTheirErrors) {
  const Expectation e = parse_expect("bw=23MB/s,lat=50us,local=1GB/s");
  EXPECT_DOUBLE_EQ(e.bw_bytes_per_s, 23e6);
  EXPECT_DOUBLE_EQ(e.latency_ns, 50e3);
  EXPECT_DOUBLE_EQ(e.local_bytes_per_s, 1e9);
  EXPECT_TRUE(parse_expect("lat=1.5ms").any());
  try {
    parse_expect("bw=23MB/s,speed=9");
    FAIL() << "an unknown key must be refused";
  } catch (const UsageError& err) {
    EXPECT_NE(std::string(err.what()).find("'speed=9'"), std::string::npos) << err.what();
  }
  for (const char* bad : {"bw", "bw=", "lat=soon", "lat=-3us", ",", "bw=23MB/s,"})
    EXPECT_THROW(parse_expect(bad), UsageError) << bad;
}

// 8 hosts, all pairs both ways, every link at `factor` of 25 MB/s with 1 % noise.
std::vector<Judged> fleet_at(double factor, double noise = 0.01) {
  std::mt19937 rng(7);
  std::normal_distribution<double> d(1.0, noise);
  std::vector<Figure> fs;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      Figure f{Metric::bandwidth, 1, a, b, 0, "NIC 200 Mb/s", {}};
      for (int i = 0; i < 9; ++i) f.samples.push_back(25e6 * factor * d(rng));
      fs.push_back(f);
    }
  return judge(fs, {});
}

TEST(SurveyExpect, AWholeFleetAtHalfItsRateIsAFindingPeersCannotSee) {
  const auto js = fleet_at(0.5);
  Verdict v = decide(js, {}, {});
  ASSERT_TRUE(v.findings.empty()) << "every link is like its peers: the statistics alone see nothing";
  apply_expectation(v, js, parse_expect("bw=200mbit"), {});
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].kind, "expect");
  EXPECT_NEAR(v.findings[0].ratio, 0.5, 0.01);
  EXPECT_LT(v.findings[0].ratio_lo, 0.5);
  EXPECT_GT(v.findings[0].ratio_hi, 0.5);
  EXPECT_EQ(v.headline.rfind("below --expect: the whole class 'NIC 200 Mb/s' at 50 %", 0), 0u) << v.headline;
  EXPECT_NE(v.findings[0].text.find("56 of its 56 figures"), std::string::npos) << v.findings[0].text;
}

TEST(SurveyExpect, AFleetAtItsRateOrWithinTheThresholdIsNot) {
  for (double f : {1.0, 0.97}) {
    const auto js = fleet_at(f);
    Verdict v = decide(js, {}, {});
    apply_expectation(v, js, parse_expect("bw=25MB/s"), {});
    EXPECT_TRUE(v.findings.empty()) << f << ": " << v.headline;
  }
  // 8 % below, but so noisy that the class median's interval reaches 95 %: not a finding.
  const auto noisy = fleet_at(0.92, 0.6);
  Verdict v = decide(noisy, {}, {});
  v.findings.clear();
  apply_expectation(v, noisy, parse_expect("bw=25MB/s"), {});
  for (const Finding& f : v.findings) EXPECT_NE(f.kind, "expect") << f.text;
}

TEST(SurveyExpect, LatencyAboveItsExpectationByTheLatencyThreshold) {
  std::vector<Figure> fs;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b) fs.push_back({Metric::latency, 1, a, b, 0, "latency NIC 200 Mb/s", std::vector<double>(50, 80e3)});
  const auto js = judge(fs, {});
  Verdict v;
  apply_expectation(v, js, parse_expect("lat=50us"), {});  // 60 % above: past the 50 % threshold
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_NEAR(v.findings[0].ratio, 1.6, 1e-9);
  Verdict w;
  apply_expectation(w, js, parse_expect("lat=60us"), {});  // 33 % above: within it
  EXPECT_TRUE(w.findings.empty());
}

// A link's bandwidth and its latency carry the same class name ("NIC 200 Mb/s"): a fleet
// at half its rate with healthy latencies is one bandwidth finding, not a latency one.
TEST(SurveyExpect, BandwidthAndLatencyOfOneClassNameAreJudgedApart) {
  std::vector<Judged> js = fleet_at(0.5);
  std::vector<Figure> lat;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) lat.push_back({Metric::latency, 1, a, b, 0, "NIC 200 Mb/s", std::vector<double>(50, 40e3)});
  const auto lj = judge(lat, {});
  js.insert(js.begin(), lj.begin(), lj.end());  // latency first: it must not stand for the class
  Verdict v;
  apply_expectation(v, js, parse_expect("bw=200mbit,lat=50us"), {});
  ASSERT_EQ(v.findings.size(), 1u) << v.headline;
  EXPECT_NEAR(v.findings[0].ratio, 0.5, 0.01);
  EXPECT_NE(v.findings[0].text.find("of the expected 25.00 MB/s"), std::string::npos) << v.findings[0].text;
}

}  // namespace
}  // namespace p2pscope::survey
