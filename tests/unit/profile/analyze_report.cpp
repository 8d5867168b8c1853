// analyze end to end on fixture campaigns (tests/fixtures/campaigns, made by
// tools/make-synthetic-campaign): every output file, the findings the fixture was
// built to trigger, the report's charts, bad input, and the CLI.
#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analyze/campaign.hpp"
#include "p2pscope/analyze.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/error.hpp"
#include "support/files.hpp"
#include "support/shell.hpp"

namespace fs = std::filesystem;
namespace p2pscope::analyze {
namespace {

using p2pscope::test::slurp;

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// A writable copy of a fixture campaign.
fs::path copy_fixture(const std::string& name) {
  const fs::path dst = fs::temp_directory_path() / ("p2pscope-analyze-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dst);
  fs::copy(fs::path(P2PSCOPE_FIXTURES_DIR) / "campaigns" / name, dst, fs::copy_options::recursive);
  return dst;
}

TEST(AnalyzeCampaign, MixedFixtureWritesEveryFileAndFindings) {
  const fs::path dir = copy_fixture("mixed4");
  const Result r = analyze(dir.string());
  EXPECT_EQ(r.rows_read, 12u * 31 * 3);
  EXPECT_EQ(r.rows_skipped, 3u);
  EXPECT_EQ(r.configs, 372u);
  EXPECT_EQ(r.links, 12u);
  for (const char* f : {"summary.csv", "summary.json", "links.json", "findings.json", "report.html"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_FALSE(fs::exists(dir / "comparison.csv"));

  const auto links = nlohmann::json::parse(slurp(dir / "links.json"));
  ASSERT_EQ(links["links"].size(), 12u);
  const auto truth = nlohmann::json::parse(slurp(dir / "metadata.json"))["truth"];
  for (const auto& l : links["links"]) {
    const auto& t = truth[std::to_string(l["src"].get<int>()) + "->" + std::to_string(l["dst"].get<int>())];
    EXPECT_EQ(l["link_class"], t["class"]);
    // 3 reps, 1% noise, asymmetric 1->0 (15% slower), and --cooling makes every op
    // 15% -> 0% slower over the run, so a config's median (its middle rep) is ~7.5%
    // slower: the fit lands near truth times those factors.
    const double slow = ((l["src"] == 1 && l["dst"] == 0) ? 1.15 : 1.0) * 1.075;
    EXPECT_NEAR(l["alpha_beta"]["alpha_ns"].get<double>() / (t["alpha_ns"].get<double>() * slow), 1, 0.05) << l.dump();
    EXPECT_NEAR(l["alpha_beta"]["beta_bytes_per_s"].get<double>() * slow / t["beta_bytes_per_s"].get<double>(), 1, 0.05);
  }

  const auto findings = nlohmann::json::parse(slurp(dir / "findings.json"))["findings"];
  auto has = [&](const std::string& kind, const std::string& subject_part) {
    for (const auto& f : findings)
      if (f["kind"] == kind && f["subject"].get<std::string>().find(subject_part) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("asymmetry", "0<->1"));
  EXPECT_FALSE(has("asymmetry", "2<->3"));
  EXPECT_TRUE(has("throttling", "GPU 1"));
  EXPECT_FALSE(has("throttling", "GPU 0")) << "gpu_idle is not throttling";
  EXPECT_TRUE(has("throttling", "gpu1 (monitor.csv)")) << "mask 0x20 (sw_thermal) in monitor.csv";
  EXPECT_FALSE(has("throttling", "gpu0 (monitor.csv)"));
  EXPECT_TRUE(has("drift", "GPU 0"));
  EXPECT_TRUE(has("data", "execution_log.csv"));
  EXPECT_TRUE(has("class_outlier", "1->0")) << "1->0 is 15% slower than the other NV4 links";
  // Durations follow the cooling GPUs: a strong correlation at bandwidth-bound sizes.
  bool temp_warning = false;
  for (const auto& f : findings) temp_warning |= f["kind"] == "temperature" && f["severity"] == "warning";
  EXPECT_TRUE(temp_warning);

  const std::string csv = slurp(dir / "summary.csv");
  EXPECT_EQ(csv.rfind("config_id,backend,src,dst,size_bytes,time_source,n,n_raw,outliers_removed,outlier_rule,median_ns", 0), 0u);
  EXPECT_EQ(count(csv, "\n"), 373u);
  fs::remove_all(dir);
}

TEST(AnalyzeCampaign, ReportHasTheChartsAndNothingFromElsewhere) {
  const fs::path dir = copy_fixture("mixed4");
  const Result r = analyze(dir.string());
  const std::string html = slurp(r.report_path);
  EXPECT_NE(html.find("Bandwidth vs message size"), std::string::npos);
  EXPECT_NE(html.find("Latency vs message size"), std::string::npos);
  EXPECT_NE(html.find("Coefficient of variation"), std::string::npos);
  EXPECT_NE(html.find("GPU temperature"), std::string::npos);
  EXPECT_NE(html.find("SM clock"), std::string::npos);
  EXPECT_NE(html.find("Monitor timelines"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"chart heatmap\""), 2u);  // bandwidth and latency matrices
  // curves (2) + CV (1) + 12 fitted-model charts + temperature and power (2; the SM and
  // memory clocks never moved: said in a line) + GPU against host clock (1) + monitor
  // (6: nic rx and tx, cpu busy/softirq/system/user; notes and throttle_reasons are not
  // drawn, nor the GPU temperatures, which never moved in monitor.csv: said in a line)
  EXPECT_EQ(count(html, "class=\"chart line-chart\""), 2u + 1 + 12 + 2 + 1 + 6);
  EXPECT_NE(html.find("SM clock: GPU 0 at 1980, GPU 1 at 1980"), std::string::npos);
  EXPECT_NE(html.find("gpu temperature_c: gpu0 at 50, gpu1 at 51, gpu2 at 52, gpu3 at 53 throughout"), std::string::npos);
  EXPECT_NE(html.find("GPU clock against host clock"), std::string::npos);
  EXPECT_NE(html.find("drift changed by 1.50 ppm"), std::string::npos);  // the drift table
  EXPECT_NE(html.find("nic rx_bytes_per_s"), std::string::npos);
  EXPECT_NE(html.find("cpu busy_pct"), std::string::npos);
  EXPECT_EQ(html.find("counter went backwards"), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  EXPECT_NE(html.find("NV4"), std::string::npos);
  EXPECT_NE(html.find("SYS"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("nan"), std::string::npos) << "a NaN leaked into the page";
  fs::remove_all(dir);
}

// A real campaign: `p2pscope profile` on nvidia-h200-x2 (two H200 joined by 18
// NVLinks), 2 pairs x 31 sizes x 10 reps, GPU-timed copy engine.
TEST(AnalyzeCampaign, RealH200PairGivesNvlinkModel) {
  const fs::path dir = copy_fixture("h200x2");
  const Result r = analyze(dir.string());
  EXPECT_EQ(r.rows_read, 620u);
  EXPECT_EQ(r.rows_skipped, 0u);
  EXPECT_EQ(r.links, 2u);
  const auto links = nlohmann::json::parse(slurp(dir / "links.json"));
  EXPECT_EQ(links["time_source"], "gpu");
  for (const auto& l : links["links"]) {
    SCOPED_TRACE(l["src"].dump() + "->" + l["dst"].dump());
    EXPECT_EQ(l["link_class"], "NV18");
    // The copy engine over NV18 reaches ~394 GB/s at 256 MiB-1 GiB and costs ~10 us.
    EXPECT_GT(l["asymptotic_bytes_per_s"].get<double>(), 380e9);
    EXPECT_LT(l["asymptotic_bytes_per_s"].get<double>(), 450e9);
    EXPECT_GT(l["latency_floor_ns"].get<double>(), 1e3);
    EXPECT_LT(l["latency_floor_ns"].get<double>(), 30e3);
    const auto& ab = l["alpha_beta"];
    EXPECT_NEAR(ab["beta_bytes_per_s"].get<double>() / l["asymptotic_bytes_per_s"].get<double>(), 1, 0.05);
    EXPECT_GT(ab["r2_log"].get<double>(), 0.99);
    // n-half = alpha * beta for an alpha-beta link: the measured one is near it.
    const double nhalf_model = ab["alpha_ns"].get<double>() * 1e-9 * ab["beta_bytes_per_s"].get<double>();
    EXPECT_NEAR(std::log2(l["n_half_bytes"].get<double>() / nhalf_model), 0, 1);
  }
  const std::string html = slurp(r.report_path);
  EXPECT_NE(html.find("GPU clock against host clock"), std::string::npos);
  EXPECT_NE(html.find("NVIDIA H200"), std::string::npos);
  fs::remove_all(dir);
}

// A real one-GPU campaign (nvidia-h200, `p2pscope run`): the staged backend pairs GPU 0
// with host memory, whose temperatures.csv rows are -1 (nothing to read).
TEST(AnalyzeCampaign, OneGpuStagedCampaignFromTheDevice) {
  const fs::path dir = copy_fixture("h200-staged");
  const Result r = analyze(dir.string());
  EXPECT_EQ(r.rows_read, 186u);
  EXPECT_EQ(r.links, 2u);
  const auto links = nlohmann::json::parse(slurp(dir / "links.json"));
  for (const auto& l : links["links"]) {
    SCOPED_TRACE(l["src"].dump() + "->" + l["dst"].dump());
    EXPECT_EQ(l["link_class"], "host-PCIe");
    // PCIe Gen5 x16 host<->GPU copies: 55.4 GB/s (nvbandwidth's anchor).
    EXPECT_NEAR(l["asymptotic_bytes_per_s"].get<double>(), 55.4e9, 2e9);
  }
  // The host's -1 "temperatures" are missing values, not readings below zero.
  const auto findings = nlohmann::json::parse(slurp(dir / "findings.json"));
  for (const auto& f : findings["findings"])
    if (f["kind"] == "temperature") {
      EXPECT_EQ(f["message"].get<std::string>().find("-1"), std::string::npos) << f;
    }
  fs::remove_all(dir);
}

TEST(AnalyzeCampaign, HostCampaignWithoutOptionalFiles) {
  const fs::path dir = copy_fixture("host2");
  const Result r = analyze(dir.string());
  EXPECT_EQ(r.links, 2u);
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("temperatures.csv absent") != std::string::npos;
  EXPECT_TRUE(noted);
  const auto links = nlohmann::json::parse(slurp(dir / "links.json"));
  EXPECT_EQ(links["links"][0]["link_class"], "host");
  EXPECT_EQ(links["time_source"], "host");
  const std::string html = slurp(r.report_path);
  EXPECT_EQ(html.find("GPU temperature"), std::string::npos);
  EXPECT_NE(html.find("No temperature samples"), std::string::npos);
  fs::remove_all(dir);
}

TEST(AnalyzeCampaign, PredictionsWrittenAndNoMatchIsReportedNotFatal) {
  const fs::path dir = copy_fixture("host2");
  const fs::path pred = dir / "pred.csv";
  {
    std::ofstream(pred) << "src,dst,size_bytes,predicted_ns\n0,1,1,9000\n0,1,1048576,50000\n5,6,1,1\n";
  }
  Options o;
  o.predictions_path = pred.string();
  Result r = analyze(dir.string(), o);
  EXPECT_EQ(r.predictions_matched, 2u);
  EXPECT_EQ(r.predictions_unmatched, 1u);
  EXPECT_FALSE(r.predictions_failed);
  const std::string cmp = slurp(dir / "comparison.csv");
  EXPECT_EQ(cmp.rfind("config_id,backend,src,dst,size_bytes,regime,measured_ns,predicted_ns,error_pct,abs_error_rank\n", 0), 0u);
  EXPECT_NE(cmp.find("# mape_pct,latency,"), std::string::npos);
  ASSERT_EQ(r.worst_predictions.size(), 2u);
  EXPECT_NE(cmp.find("# mape_pct,bandwidth,"), std::string::npos);
  EXPECT_NE(slurp(r.report_path).find("Simulator predictions"), std::string::npos);

  fs::remove(dir / "comparison.csv");
  {
    std::ofstream(pred) << "src,dst,size_bytes,predicted_ns\n7,8,1,9000\n";
  }
  r = analyze(dir.string(), o);
  EXPECT_TRUE(r.predictions_failed);
  EXPECT_FALSE(fs::exists(dir / "comparison.csv"));
  EXPECT_TRUE(fs::exists(dir / "links.json"));
  EXPECT_TRUE(fs::exists(r.report_path));
  o.predictions_path = (dir / "missing.csv").string();
  r = analyze(dir.string(), o);
  EXPECT_TRUE(r.predictions_failed);
  EXPECT_TRUE(fs::exists(r.report_path));
  // A directory given for the file is said as one (it read "empty predictions file").
  o.predictions_path = dir.string();
  r = analyze(dir.string(), o);
  EXPECT_TRUE(r.predictions_failed);
  const std::string report = slurp(r.report_path);
  EXPECT_NE(report.find("a directory"), std::string::npos);
  EXPECT_EQ(report.find("no header line"), std::string::npos);
  fs::remove_all(dir);
}

TEST(AnalyzeCampaign, NotACampaignIsAClearUsageError) {
  const fs::path dir = fs::temp_directory_path() / ("p2pscope-analyze-empty-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  try {
    analyze(dir.string());
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no execution_log.csv"), std::string::npos) << e.what();
  }
  EXPECT_THROW(analyze((dir / "nope").string()), UsageError);
  fs::remove_all(dir);
}

TEST(Charts, LineChartAndHeatmapBasics) {
  charts::LineChart c{"t<&>", {"x", true, charts::Format::size_bytes}, {"y", true, charts::Format::duration_ns}, {}, 600, 400, true};
  c.series.push_back({"a", "", {1, 1024, 1 << 20}, {1000, 2000, 1e6}, true, true, false});
  c.series.push_back({"b", "#123456", {1, 2}, {NAN, -5}, true, true, false});  // nothing drawable on log axes
  const std::string svg = charts::render_line_chart(c);
  EXPECT_NE(svg.find("t&lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 3u);
  EXPECT_NE(svg.find("1 KiB"), std::string::npos);
  const std::string h = charts::render_heatmap({"m", "src", "dst", {"0", "1"}, {"0", "1"}, {{NAN, 5e9}, {2e9, NAN}},
                                                charts::Format::bytes_per_s, true, 60});
  EXPECT_EQ(count(h, "<rect x="), 4u);
  EXPECT_NE(h.find("5 GB/s"), std::string::npos);
  EXPECT_EQ(charts::format_value(1536, charts::Format::size_bytes), "1.5 KiB");
  EXPECT_EQ(charts::format_value(1980, charts::Format::number), "1980");  // MHz, not 1.98e+03
  EXPECT_EQ(charts::format_value(2.5e7, charts::Format::number), "2.5e+07");
  EXPECT_EQ(charts::format_value(394e9, charts::Format::bytes_per_s), "394 GB/s");
}

// Runs `cmd` (stderr merged), returns its exit status and output.
int run(const std::string& cmd, std::string* out) {
  const p2pscope::test::ShellResult r = p2pscope::test::run_shell(cmd + " 2>&1");
  *out += r.out;
  return r.code;
}

// The CLI through the built binary: exit 0 and the report path; MAPE printed with
// --predictions; exit 1 (everything else still written) when no prediction matches;
// exit 2 with the reason for a directory that is not a campaign or a log without
// the required columns.
TEST(AnalyzeCli, EndToEnd) {
  if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built: " << P2PSCOPE_BINARY;
  const std::string bin = P2PSCOPE_BINARY;
  const fs::path dir = copy_fixture("host2");
  std::string out;
  EXPECT_EQ(run(bin + " analyze " + dir.string(), &out), 0) << out;
  EXPECT_NE(out.find("report: " + (dir / "report.html").string()), std::string::npos) << out;
  EXPECT_NE(out.find("analyzed 126 ops"), std::string::npos) << out;

  {
    std::ofstream(dir / "pred.csv") << "config_id,predicted_ns\n0,5000\n1,5000\n";
  }
  out.clear();
  EXPECT_EQ(run(bin + " analyze " + dir.string() + " --predictions " + (dir / "pred.csv").string(), &out), 0) << out;
  EXPECT_NE(out.find("MAPE all"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "comparison.csv"));

  {
    std::ofstream(dir / "pred.csv") << "src,dst,size_bytes,predicted_ns\n9,9,3,5000\n";
  }
  fs::remove(dir / "report.html");
  out.clear();
  EXPECT_EQ(run(bin + " analyze " + dir.string() + " --predictions " + (dir / "pred.csv").string(), &out), 1) << out;
  EXPECT_NE(out.find("no prediction matches"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "report.html")) << "the rest of the analysis still comes out";

  out.clear();
  EXPECT_EQ(run(bin + " analyze " + (dir / "nope").string(), &out), 2) << out;
  EXPECT_NE(out.find("not a directory"), std::string::npos) << out;
  {
    std::ofstream(dir / "execution_log.csv") << "config_id,src,size_bytes\n1,0,8\n";
  }
  out.clear();
  EXPECT_EQ(run(bin + " analyze " + dir.string(), &out), 2) << out;
  EXPECT_NE(out.find("missing required column(s) dst, duration_ns"), std::string::npos) << out;
  fs::remove_all(dir);
}

// The real pipeline: `p2pscope profile` on the host backend writes a campaign and
// `analyze` reads it, so a change of the log format on either side fails here.
TEST(AnalyzeCli, AnalyzesWhatProfileWrites) {
  if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built: " << P2PSCOPE_BINARY;
  const std::string bin = P2PSCOPE_BINARY;
  const fs::path dir = fs::temp_directory_path() / ("p2pscope-analyze-real-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string out;
  ASSERT_EQ(run(bin + " profile --backend host --gpus 0,1 --sizes 1:64K --reps 3 --warmup 1 --drift 0 "
                      "--thermal-warmup off --out " + dir.string(), &out), 0) << out;
  out.clear();
  ASSERT_EQ(run(bin + " analyze " + dir.string(), &out), 0) << out;
  EXPECT_NE(out.find("analyzed 102 ops (0 garbled rows skipped): 34 configs, 2 links"), std::string::npos) << out;
  const auto links = nlohmann::json::parse(slurp(dir / "links.json"));
  ASSERT_EQ(links["links"].size(), 2u);
  for (const auto& l : links["links"]) {
    EXPECT_EQ(l["link_class"], "host");
    EXPECT_EQ(l["points"].size(), 17u);
    EXPECT_GT(l["latency_floor_ns"].get<double>(), 0);
    EXPECT_TRUE(l["alpha_beta"].is_object());
  }
  const auto summary = nlohmann::json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(summary["configs"].size(), 34u);
  for (const auto& c : summary["configs"]) EXPECT_EQ(c["n_raw"], 3);
  EXPECT_TRUE(fs::exists(dir / "report.html"));
  fs::remove_all(dir);
}

TEST(AnalyzeReport, ShowsContentionRunsSavedBesideTheCampaign) {
  const fs::path dir = copy_fixture("host2");
  fs::create_directories(dir / "fan-in");
  const nlohmann::json j = {
      {"kind", "p2pscope_contention"}, {"pattern", "fan-in"}, {"backend", "host"},
      {"summary",
       {{{"size_bytes", 1 << 20}, {"src", 1}, {"dst", 0}, {"flows", 2}, {"alone_bytes_per_s", 20e9},
         {"together_bytes_per_s", 10e9}, {"aggregate_bytes_per_s", 19e9}},
        {{"size_bytes", 1 << 20}, {"src", 2}, {"dst", 0}, {"flows", 2}, {"alone_bytes_per_s", 18e9},
         {"together_bytes_per_s", 9e9}, {"aggregate_bytes_per_s", 19e9}},
        {{"size_bytes", 4096}, {"src", 1}, {"dst", 0}, {"flows", 1}, {"alone_bytes_per_s", 2e9},
         {"together_bytes_per_s", nullptr}, {"aggregate_bytes_per_s", nullptr}}}}};
  std::ofstream(dir / "fan-in" / "contention.json") << j.dump(1);
  std::ofstream(dir / "contention.json") << "{ torn";  // a garbled one is named, not fatal
  analyze(dir.string());
  const std::string html = slurp(dir / "report.html");
  EXPECT_NE(html.find("Contention (profile --pattern)"), std::string::npos);
  EXPECT_NE(html.find("fan-in on host: bandwidth per flow"), std::string::npos);
  EXPECT_NE(html.find("1-&gt;0 together"), std::string::npos) << "the contended series is drawn";
  EXPECT_NE(html.find("<td>0.50</td>"), std::string::npos) << "together / alone per flow and size";
  EXPECT_NE(html.find("not readable JSON, left out"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace p2pscope::analyze

namespace p2pscope::analyze {
namespace {

// report.html opens with its conclusions: the links' bandwidth spread as links.json has
// it, before the campaign's metadata table and every chart.
TEST(AnalyzeReport, OpensWithConclusionsThatMatchLinksJson) {
  const fs::path dir = fs::temp_directory_path() / ("p2pscope-analyze-conclusions-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(fs::path(P2PSCOPE_FIXTURES_DIR) / "campaigns" / "mixed4", dir, fs::copy_options::recursive);
  analyze(dir.string());
  const std::string html = p2pscope::test::slurp(dir / "report.html");
  const auto box = html.find("id=\"conclusions\"");
  ASSERT_NE(box, std::string::npos);
  EXPECT_LT(box, html.find("<h2>This campaign</h2>"));
  EXPECT_LT(box, html.find("<svg"));
  const auto links = nlohmann::json::parse(p2pscope::test::slurp(dir / "links.json"));
  std::map<std::string, std::vector<double>> bw;
  for (const auto& l : links["links"]) bw[l["backend"].get<std::string>()].push_back(l["asymptotic_bytes_per_s"].get<double>() / 1e9);
  ASSERT_FALSE(bw.empty());
  for (auto& [backend, v] : bw) {
    std::sort(v.begin(), v.end());
    const std::string shown = v.size() == 1 ? fmt::format("{:.1f} GB/s", v[0])
                                            : fmt::format("min {:.1f} / ", v.front());
    EXPECT_NE(html.find(shown, box), std::string::npos) << backend << ": " << shown;
    if (v.size() > 1) {
      EXPECT_NE(html.find(fmt::format("max {:.1f} GB/s", v.back()), box), std::string::npos) << backend;
    }
  }
  EXPECT_NE(html.find("id=\"matrices\""), std::string::npos);
  EXPECT_NE(html.find("id=\"findings\""), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace p2pscope::analyze
