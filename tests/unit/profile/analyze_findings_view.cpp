// group_findings: what the report and the CLI show first. A short campaign gives dozens
// of high-CV findings, one per config; they must not bury the rarer warnings.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyze/campaign.hpp"
#include "p2pscope/analyze.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;
namespace p2pscope::analyze {
namespace {

Finding cv(const std::string& link, const std::string& size, double v) {
  return {"high_cv", "warning", link + " @ " + size, "CV ...", v};
}

TEST(FindingsView, HighCvGroupedPerLinkAfterTheOtherWarnings) {
  const std::vector<Finding> f = {
      cv("ce 0->1", "1 B", 0.10),
      {"temperature", "info", "latency sizes", "Spearman ...", 0.1},
      cv("ce 1->0", "4 KiB", 0.07),
      cv("ce 0->1", "4 KiB", 0.80),
      cv("ce 0->1", "1 MiB", 0.06),
      {"drift", "warning", "GPU 0", "drift changed by 2 ppm", 2.0},
  };
  const auto g = group_findings(f);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].head.kind, "drift");  // the rarer warning first
  EXPECT_EQ(g[1].head.subject, "ce 0->1");
  EXPECT_EQ(g[1].members, 3u);
  EXPECT_NE(g[1].head.message.find("3 sizes (1 B, 4 KiB, 1 MiB)"), std::string::npos) << g[1].head.message;
  // Doubling neighbours read as a range.
  const auto r = group_findings({cv("sm 2->3", "1 KiB", 0.1), cv("sm 2->3", "2 KiB", 0.1), cv("sm 2->3", "4 KiB", 0.2),
                                 cv("sm 2->3", "1 MiB", 0.1), cv("sm 2->3", "2 MiB", 0.1), cv("sm 2->3", "odd", 0.1)});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].head.message.find("6 sizes (1 KiB-4 KiB, 1 MiB-2 MiB, odd)"), std::string::npos) << r[0].head.message;
  EXPECT_NE(g[1].head.message.find("worst 80.0% at 4 KiB"), std::string::npos) << g[1].head.message;
  EXPECT_DOUBLE_EQ(g[1].head.value, 0.80);
  // A link with one high-CV size keeps its finding as it is.
  EXPECT_EQ(g[2].head.subject, "ce 1->0 @ 4 KiB");
  EXPECT_EQ(g[2].members, 1u);
  EXPECT_EQ(g[3].head.severity, "info");
  std::size_t total = 0;
  for (const auto& x : g) total += x.members;
  EXPECT_EQ(total, f.size());
}

TEST(FindingsView, NothingToGroup) {
  EXPECT_TRUE(group_findings({}).empty());
  // A high_cv subject without " @ " (not one the checks write) is kept as a row.
  const auto g = group_findings({{"high_cv", "warning", "odd", "m", 0.2}});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].head.subject, "odd");
}

using p2pscope::test::slurp;

// The real one-GPU campaign (3 reps: 38 configs over 5% CV) shows the drift warning and
// one row per link in the report and the CLI's lines; findings.json keeps all of them.
TEST(FindingsView, RealCampaignReportAndTopLines) {
  const fs::path dir = fs::temp_directory_path() / ("p2pscope-findings-view-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(fs::path(P2PSCOPE_FIXTURES_DIR) / "campaigns" / "h200-staged", dir, fs::copy_options::recursive);
  const Result r = analyze(dir.string());
  const auto fj = nlohmann::json::parse(slurp(dir / "findings.json"));
  std::size_t high_cv = 0;
  for (const auto& f : fj["findings"]) {
    high_cv += f["kind"] == "high_cv";
    // Each says which side of the report it is on, as about_measurement does (run's
    // headline reads this instead of repeating the rule).
    if (f["kind"] == "high_cv") {
      EXPECT_EQ(f.value("about", ""), "measurement") << f.dump();
    }
    if (f["kind"] == "asymmetry") {
      EXPECT_EQ(f.value("about", ""), "hardware") << f.dump();
    }
  }
  ASSERT_GT(high_cv, 10u) << "the fixture was chosen for its many noisy configs";
  EXPECT_EQ(fj["findings"].size(), r.findings);
  ASSERT_FALSE(r.top_findings.empty());
  ASSERT_LE(r.top_findings.size(), 5u);
  std::size_t cv_lines = 0;
  for (const auto& l : r.top_findings) cv_lines += l.find("CV above 5% at") != std::string::npos;
  EXPECT_LE(cv_lines, 2u) << "one line per link, two links";
  const std::string html = slurp(r.report_path);
  // One row per kind, naming how many configs and which, under the measurement's
  // findings (noise), apart from those about the hardware.
  const auto row = html.find("<td>high_cv</td><td>" + std::to_string(high_cv) + ": ");
  EXPECT_NE(row, std::string::npos) << "the kind's row names how many configs it stands for";
  const auto noise = html.find("About the measurement");
  ASSERT_NE(noise, std::string::npos);
  EXPECT_GT(row, noise);
  EXPECT_LT(html.find("About the hardware"), noise);
  EXPECT_NE(html.find("Every finding (" + std::to_string(r.findings)), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace p2pscope::analyze
