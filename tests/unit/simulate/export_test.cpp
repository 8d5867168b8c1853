// export: the JSON parses and round-trips every link's model, the CSV holds the model
// times at full precision, the ASTRA-sim file converts units as ASTRA-sim reads them and
// says what it could not hold; end to end, export -> analyze --predictions within 1 %.
#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "p2pscope/analyze.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/simulate.hpp"
#include "support/run_binary.hpp"
#include "simulate_support.hpp"

namespace p2pscope::simulate {
namespace {

using test::fs::path;
namespace fs = std::filesystem;

path uniform4() { return path(P2PSCOPE_FIXTURES_DIR) / "links" / "uniform4"; }

bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// The model time analyze reported per measured size: links.json's points[].model_ns.
std::map<std::tuple<std::string, int, int, std::uint64_t>, double> model_ns(const path& dir) {
  std::map<std::tuple<std::string, int, int, std::uint64_t>, double> out;
  const auto j = nlohmann::json::parse(test::slurp(dir / "links.json"));
  for (const auto& l : j["links"])
    for (const auto& p : l["points"])
      if (p.contains("model_ns") && p["model_ns"].is_number())
        out[{l["backend"], l["src"], l["dst"], static_cast<std::uint64_t>(p["size_bytes"].get<double>())}] = p["model_ns"];
  return out;
}

TEST(Export, JsonParsesAndRoundTripsEveryLink) {
  const auto e = export_campaign(uniform4().string(), ExportFormat::json);
  EXPECT_EQ(e.file_name, "links_export.json");
  const auto j = nlohmann::json::parse(e.text);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["kind"], "p2pscope_link_export");
  ASSERT_EQ(j["links"].size(), 12u);
  const auto want = model_ns(uniform4());
  std::size_t checked = 0;
  for (const auto& l : j["links"]) {
    EXPECT_EQ(l["class"], "NV18");
    EXPECT_EQ(l["model"], "alpha_beta");
    for (const auto& p : l["points"]) {
      // Rebuilt from the exported parameters alone, as a simulator would.
      const double n = p["size_bytes"].get<double>();
      const double t = l["alpha_ns"].get<double>() + n / l["beta_bytes_per_s"].get<double>() * 1e9;
      const auto key = std::make_tuple(l["backend"].get<std::string>(), l["src"].get<int>(), l["dst"].get<int>(),
                                       static_cast<std::uint64_t>(n));
      ASSERT_TRUE(want.count(key));
      EXPECT_DOUBLE_EQ(t, want.at(key));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12u * 31u);
}

TEST(Export, CsvIsWhatAnalyzePredictionsReads) {
  const auto e = export_campaign(uniform4().string(), ExportFormat::csv);
  std::istringstream in(e.text);
  std::string line;
  std::size_t rows = 0;
  bool header = false;
  const auto want = model_ns(uniform4());
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (!header) {
      EXPECT_EQ(line, "backend,src,dst,size_bytes,predicted_ns");
      header = true;
      continue;
    }
    char b[16];
    int s = 0, d = 0;
    unsigned long long n = 0;
    double t = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%15[^,],%d,%d,%llu,%lf", b, &s, &d, &n, &t), 5) << line;
    EXPECT_DOUBLE_EQ(t, want.at({b, s, d, n})) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 12u * 31u);
  ExportOptions o;
  o.sizes = {4096};
  const std::string text = export_campaign(uniform4().string(), ExportFormat::csv, o).text;
  const auto at = text.find("\nce,3,2,4096,");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_DOUBLE_EQ(std::stod(text.substr(at + 13)), 2000 + 4096 / 1e11 * 1e9);
}

TEST(Export, AstraSimOneSwitchDimensionInItsUnits) {
  const auto e = export_campaign(uniform4().string(), ExportFormat::astra_sim);
  EXPECT_EQ(e.file_name, "network.yml");
  EXPECT_TRUE(has(e.text, "\ntopology: [ Switch ]\n")) << e.text;  // NV18: NVSwitch
  EXPECT_TRUE(has(e.text, "\nnpus_count: [ 4 ]\n"));
  // 1e11 B/s in ASTRA-sim's GB/s (2^30 B/s); alpha 2000 ns over a Switch's 2 hops.
  EXPECT_TRUE(has(e.text, "\nbandwidth: [ 93.132257 ]")) << e.text;
  EXPECT_TRUE(has(e.text, "\nlatency: [ 1000.000 ]"));
  EXPECT_TRUE(has(e.text, "its links agree"));
  EXPECT_TRUE(e.notes.empty() || !has(e.notes.back(), "differ"));
}

TEST(Export, AstraSimTwoDimensionsFromTwoClasses) {
  test::SyntheticLinks s;  // 0-1 and 2-3 over 4 NVLinks, the rest across sockets
  s.cls = [](int a, int b) { return a / 2 == b / 2 ? std::string("NV4") : std::string("SYS"); };
  s.beta = [](int a, int b) { return a / 2 == b / 2 ? 1e11 : 2e10; };
  s.alpha = [](int a, int b) { return a / 2 == b / 2 ? 2000.0 : 8000.0; };
  const auto e = export_campaign(test::write_links(s).string(), ExportFormat::astra_sim);
  EXPECT_TRUE(has(e.text, "\ntopology: [ FullyConnected, Switch ]\n")) << e.text;
  EXPECT_TRUE(has(e.text, "\nnpus_count: [ 2, 2 ]\n"));
  EXPECT_TRUE(has(e.text, "\nlatency: [ 2000.000, 4000.000 ]"));
  EXPECT_TRUE(has(e.text, "\nbandwidth: [ 93.132257, 18.626451 ]"));
}

TEST(Export, AstraSimSaysWhenLinksOfAClassDifferAndWhatItFlattened) {
  test::SyntheticLinks slow;
  slow.beta = [](int a, int b) { return a == 1 && b == 2 ? 5e10 : 1e11; };
  auto e = export_campaign(test::write_links(slow).string(), ExportFormat::astra_sim);
  EXPECT_TRUE(has(e.text, "# WARNING: links of class NV18 differ")) << e.text;
  EXPECT_TRUE(has(e.text, "slowest 1->2"));
  bool noted = false;
  for (const auto& n : e.notes) noted = noted || has(n, "cannot hold the faster pairs");
  EXPECT_TRUE(noted);

  test::SyntheticLinks three;  // three classes: no grid
  three.cls = [](int a, int b) { return a + b == 1 ? std::string("NV4") : a + b == 5 ? std::string("PIX") : std::string("SYS"); };
  three.beta = [](int a, int b) { return a + b == 1 ? 1e11 : a + b == 5 ? 3e10 : 2e10; };
  e = export_campaign(test::write_links(three).string(), ExportFormat::astra_sim);
  EXPECT_TRUE(has(e.text, "# FLATTENED:")) << e.text;
  EXPECT_TRUE(has(e.text, "slowest class, SYS"));
  EXPECT_TRUE(has(e.text, "\nbandwidth: [ 18.626451 ]"));  // SYS's 2e10: claims no pair faster than measured
}

TEST(Export, BadInput) {
  try {
    parse_export_format("ns3");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "astra-sim, json, csv")) << e.what();
  }
  const auto campaign = test::copy_fixture("campaigns/host2");  // profiled, not analyzed
  try {
    export_campaign(campaign.string(), ExportFormat::json);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "run `p2pscope analyze")) << e.what();
  }
  const auto bad = test::temp_dir("bad");
  std::ofstream(bad / "links.json") << "{\"kind\": \"something else\"}";
  EXPECT_THROW(export_campaign(bad.string(), ExportFormat::csv), UsageError);
  test::SyntheticLinks one;
  one.p = 2;
  one.keep = [](int a, int b) { return a == 0 && b == 1; };
  EXPECT_NO_THROW(export_campaign(test::write_links(one).string(), ExportFormat::astra_sim));
}

// Real campaigns: the GPU-timed staged one (an H200 and its host memory) separates the
// software overhead of a blocking copy and says how to charge it; a host-timed one cannot.
TEST(Export, AstraSimSoftwareOverheadOnlyWhereGpuTimed) {
  analyze::Options ao;
  ao.write_report = false;
  const auto staged = test::copy_fixture("campaigns/h200-staged");
  analyze::analyze(staged.string(), ao);
  auto e = export_campaign(staged.string(), ExportFormat::astra_sim);
  const std::string key = "software cost measured here is ";
  const auto at = e.text.find(key);
  ASSERT_NE(at, std::string::npos) << e.text;
  const double delay = std::stod(e.text.substr(at + key.size()));
  EXPECT_GT(delay, 1000);  // a blocking cudaMemcpy's host cost is microseconds
  EXPECT_LT(delay, 100000);
  EXPECT_TRUE(has(e.text, fmt::format("both with --endpoint-delay {:.0f}", delay))) << e.text;
  EXPECT_EQ(nlohmann::json::parse(e.system_text)["endpoint-delay"], 1);  // charged only when asked
  EXPECT_TRUE(has(e.text, "1: host pinned memory")) << e.text;
  EXPECT_TRUE(has(e.text, "class host-PCIe -> Switch"));

  const auto host = test::copy_fixture("campaigns/host2");
  analyze::analyze(host.string(), ao);
  e = export_campaign(host.string(), ExportFormat::astra_sim);
  EXPECT_TRUE(has(e.text, "alpha is HOST-timed")) << e.text;
  EXPECT_FALSE(has(e.text, key));
}

// The CLI end to end on a fixture campaign: analyze, export csv, analyze --predictions:
// every prediction within 1 % of the model analyze fitted (here: equal to print precision).
TEST(ExportCli, CsvRoundTripsThroughAnalyzePredictions) {
  const auto dir = test::copy_fixture("campaigns/mixed4");
  const std::string d = dir.string();
  auto r = test::run_binary("analyze " + d + " --no-report");
  ASSERT_EQ(r.code, 0) << r.out;
  r = test::run_binary("export " + d + " --to csv --out " + d + "/pred.csv");
  ASSERT_EQ(r.code, 0) << r.out;
  r = test::run_binary("analyze " + d + " --no-report --predictions " + d + "/pred.csv");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "0 rows matched no config")) << r.out;
  const auto want = model_ns(dir);
  std::istringstream in(test::slurp(dir / "comparison.csv"));
  std::string line;
  std::getline(in, line);
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    char b[16], regime[16];
    int cfg = 0, s = 0, dd = 0;
    unsigned long long n = 0;
    double measured = 0, predicted = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%d,%15[^,],%d,%d,%llu,%15[^,],%lf,%lf", &cfg, b, &s, &dd, &n, regime, &measured,
                          &predicted), 8) << line;
    const double m = want.at({b, s, dd, n});
    EXPECT_LT(std::fabs(predicted - m) / m, 0.01) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 12u * 31u);
}

TEST(ExportCli, MessagesAndExitCodes) {
  auto r = test::run_binary("export " + uniform4().string() + " --to ns3");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "the formats are: astra-sim, json, csv")) << r.out;
  const auto campaign = test::copy_fixture("campaigns/host2");
  r = test::run_binary("export " + campaign.string() + " --to astra-sim");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "run `p2pscope analyze")) << r.out;
  r = test::run_binary("predict " + uniform4().string() + " --ops allreduce --sizes 1M --format csv");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "allreduce,ring,1M,1048576,6,")) << r.out;
  r = test::run_binary("predict " + uniform4().string() + " --ops allreduce --sizes 1M --measure");
#if !P2PSCOPE_HAVE_NCCL
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "built without NCCL")) << r.out;
  EXPECT_TRUE(has(r.out, "predictions only")) << r.out;
#endif
}

TEST(ExportCli, PredictDrawsAChartPerOp) {
  const auto page = test::temp_dir("predict-html") / "predict.html";
  const auto r = test::run_binary("predict " + uniform4().string() + " --ops allreduce,alltoall --sizes 1K,1M,1G --html " +
                                  page.string() + " --format csv");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string html = test::slurp(page);
  std::size_t svgs = 0;
  for (auto at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 2u) << "one chart per op (no error charts without --measure)";
  EXPECT_TRUE(has(html, "allreduce: time per size")) << html.substr(0, 400);
  EXPECT_TRUE(has(html, "predicted (link models)"));
  EXPECT_FALSE(has(html, "measured (NCCL)"));
  EXPECT_TRUE(has(html, "<table")) << "the table is on the page too";
}

TEST(ExportCli, ProfilePatternLogsEveryFlow) {
  const auto dir = test::temp_dir("pattern") / "c";
  auto r = test::run_binary("profile --pattern ring-shift --backend host --sizes 4K --warmup 0 --reps 2 --out " +
                            dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "together/alone")) << r.out;
  std::istringstream in(test::slurp(dir / "contention_log.csv"));
  std::string line;
  std::size_t alone = 0, together = 0;
  while (std::getline(in, line)) {
    alone += line.rfind("ring-shift,alone,", 0) == 0;
    together += line.rfind("ring-shift,together,", 0) == 0;
  }
  EXPECT_EQ(alone, 4u);     // 2 flows x 2 reps, each alone
  EXPECT_EQ(together, 4u);  // the same at once
  const auto j = nlohmann::json::parse(test::slurp(dir / "contention.json"));
  EXPECT_EQ(j["kind"], "p2pscope_contention");
  // A size whose flows did not overlap is named, in the JSON and on screen, and nothing else is.
  ASSERT_TRUE(j["not_concurrent_sizes"].is_array());
  for (const auto& size : j["not_concurrent_sizes"]) {
    EXPECT_EQ(size, "4K");
    EXPECT_TRUE(has(r.out, "at 4K the flows barely overlapped")) << r.out;
  }
  r = test::run_binary("profile --pattern fanin --backend host");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "fan-in, fan-out")) << r.out;
}

}  // namespace
}  // namespace p2pscope::simulate
