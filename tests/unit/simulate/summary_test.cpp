// Uncertainty on the figures a simulator is judged against: the interval of each median
// (order statistics, known coverages), the fit's residual per size and the clock bound in
// summary.json / summary.csv, and the interval in the report.
#include <cmath>

#include <gtest/gtest.h>

#include "analyze/campaign.hpp"
#include "p2pscope/analyze.hpp"
#include "p2pscope/simulate.hpp"
#include "simulate_support.hpp"

namespace p2pscope::analyze {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> v;
  for (int i = n; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  return v;
}

TEST(MedianInterval, OrderStatisticsWithTheirBinomialCoverage) {
  // n = 9: [x(2), x(8)] covers with 1 - 2 (1 + 9) / 512 = 96.1 %; [x(3), x(7)] only 82 %.
  auto r = median_interval(one_to(9));
  EXPECT_EQ(r.lo_ns, 2);
  EXPECT_EQ(r.hi_ns, 8);
  EXPECT_NEAR(r.level, 1 - 2 * 10.0 / 512, 1e-12);
  // n = 5: no interval reaches 95 %; [min, max] covers 1 - 2 / 32 = 93.75 %.
  r = median_interval(one_to(5));
  EXPECT_EQ(r.lo_ns, 1);
  EXPECT_EQ(r.hi_ns, 5);
  EXPECT_NEAR(r.level, 0.9375, 1e-12);
  // n = 100: the textbook ranks 40 and 61 (coverage 96.5 %).
  r = median_interval(one_to(100));
  EXPECT_EQ(r.lo_ns, 40);
  EXPECT_EQ(r.hi_ns, 61);
  EXPECT_NEAR(r.level, 0.9648, 1e-4);
  // Large n: about median +- 1.96 sqrt(n) / 2 ranks.
  r = median_interval(one_to(10000));
  EXPECT_NEAR(r.lo_ns, 5000 - 98, 2);
  EXPECT_NEAR(r.hi_ns, 5001 + 98, 2);
  EXPECT_EQ(median_interval({}).level, 0);
  EXPECT_EQ(median_interval({7}).lo_ns, 7);
}

TEST(MedianInterval, SummaryAndReportCarryTheIntervalResidualAndClockBound) {
  const auto dir = test::copy_fixture("campaigns/h200x2");
  Options o;
  analyze(dir.string(), o);
  const auto sj = nlohmann::json::parse(test::slurp(dir / "summary.json"));
  const auto lj = nlohmann::json::parse(test::slurp(dir / "links.json"));
  ASSERT_TRUE(sj.contains("clock_bound"));
  ASSERT_FALSE(sj["configs"].empty());
  std::size_t checked = 0;
  for (const auto& c : sj["configs"]) {
    const double med = c["median_ns"], lo = c["median_ci"]["lo_ns"], hi = c["median_ci"]["hi_ns"];
    EXPECT_LE(lo, med);
    EXPECT_GE(hi, med);
    EXPECT_GE(lo, c["min_ns"].get<double>());
    EXPECT_LE(hi, c["max_ns"].get<double>());
    // The residual per size is links.json's, for the same link and size.
    for (const auto& l : lj["links"])
      if (l["src"] == c["src"] && l["dst"] == c["dst"])
        for (const auto& p : l["points"])
          if (p["size_bytes"].get<double>() == c["size_bytes"].get<double>()) {
            EXPECT_NEAR(c["model_rel_error"].get<double>(), p["rel_error"].get<double>(), 1e-9);
            ++checked;
          }
  }
  EXPECT_EQ(checked, sj["configs"].size());
  const std::string csv = test::slurp(dir / "summary.csv");
  EXPECT_NE(csv.find(",median_ci_lo_ns,median_ci_hi_ns,median_ci_level,model_ns,model_rel_error\n"), std::string::npos);
  EXPECT_NE(test::slurp(dir / "report.html").find("median interval"), std::string::npos);
  // export --to json carries each point's interval to the simulator.
  const auto ej = nlohmann::json::parse(simulate::export_campaign(dir.string(), simulate::ExportFormat::json).text);
  std::size_t with_ci = 0;
  for (const auto& l : ej["links"])
    for (const auto& p : l["points"]) {
      ASSERT_TRUE(p.contains("median_ci")) << p.dump();
      EXPECT_LE(p["median_ci"]["lo_ns"].get<double>(), p["median_ns"].get<double>());
      EXPECT_GE(p["median_ci"]["hi_ns"].get<double>(), p["median_ns"].get<double>());
      ++with_ci;
    }
  EXPECT_EQ(with_ci, sj["configs"].size());
}

}  // namespace
}  // namespace p2pscope::analyze
