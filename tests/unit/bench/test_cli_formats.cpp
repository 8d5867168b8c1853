// One measurement, every format: the figures bench gpu prints as text and CSV are the
// JSON's figures in the unit the column names (us from ns, GB/s = 1e9 bytes/s, % from
// a fraction), so a wrong factor in one printer fails here. And --format is refused
// with the words it always had, in every command that takes it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/table.hpp"
#include "support/csv_rows.hpp"
#include "support/run_binary.hpp"

using p2pscope::fixed;
using p2pscope::test::csv_rows;
using p2pscope::test::run_binary_split;

namespace {

class FormatsCli : public ::testing::Test {
  void SetUp() override {
    if (!std::filesystem::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (make build)";
  }
};

// The text rows table's data line for pair src:dst (after the table's rule).
std::vector<std::string> text_row(const std::string& text, const std::string& size) {
  std::istringstream s(text);
  std::vector<std::string> words;
  for (std::string line; std::getline(s, line);) {
    std::istringstream l(line);
    std::vector<std::string> w;
    for (std::string x; l >> x;) w.push_back(x);
    if (w.size() > 4 && w[0] == "0" && w[1] == "1" && w[2] == size) words = w;
  }
  return words;
}

}  // namespace

// The JSON's median time and the figures derived from it, as text and CSV show them.
// Three runs measure three times; each format is checked against its own JSON-free
// figures through the same identities (rate = bytes / time, us = ns / 1e3).
TEST_F(FormatsCli, BenchGpuFiguresAgreeAcrossFormatsInTheirUnits) {
  const std::string args = "bench gpu --backend host --warmup 1 --iters 3 --pairs 0:1 --sizes 1M";
  const auto csv = run_binary_split(args + " --format csv");
  ASSERT_EQ(csv.code, 0) << csv.err;
  const auto rows = csv_rows(csv.out);
  ASSERT_EQ(rows.size(), 1u) << csv.out;
  const auto& row = rows[0];
  // time_us and algbw_GBps are one median in two units: 1 MiB / (time_us * 1e3 ns) in GB/s.
  const double time_us = std::stod(row.at("time_us"));
  ASSERT_GT(time_us, 0);
  EXPECT_NEAR(std::stod(row.at("algbw_GBps")), 1048576.0 / (time_us * 1e3), 0.01 + 1048576.0 / (time_us * 1e3) * 0.01)
      << "algbw_GBps is bytes per ns (1e9 B/s) of the time_us shown";
  EXPECT_EQ(row.at("p50_us"), row.at("time_us")) << "time_us is the median";
  EXPECT_LE(std::stod(row.at("p5_us")), time_us);
  EXPECT_GE(std::stod(row.at("p95_us")), time_us);
  EXPECT_EQ(row.at("size"), "1M");
  EXPECT_EQ(row.at("size_bytes"), "1048576");

  const auto js = run_binary_split(args + " --format json");
  ASSERT_EQ(js.code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  const auto& jr = j["rows"][0];
  const double median_ns = jr["time_ns"]["median"];
  EXPECT_NEAR(jr["algbw_GBps"].get<double>(), 1048576.0 / median_ns, 1e-9) << "JSON: GB/s = bytes / ns";
  EXPECT_EQ(j["units"]["time"], "ns");
  // The matrix: its unit said, its cell the row's rate at two decimals.
  EXPECT_EQ(j["matrix"]["unit"], "GB/s");
  EXPECT_NEAR(j["matrix"]["rows"][0]["1"].get<double>(), jr["algbw_GBps"].get<double>(), 0.006);

  const auto tx = run_binary_split(args);
  ASSERT_EQ(tx.code, 0) << tx.err;
  EXPECT_NE(tx.out.find("unidirectional (GB/s, median) at 1 MiB"), std::string::npos) << tx.out;
  const auto w = text_row(tx.out, "1M");
  ASSERT_GE(w.size(), 11u) << tx.out;
  const double t_us = std::stod(w[4]);
  EXPECT_NEAR(std::stod(w[5]), 1048576.0 / (t_us * 1e3), 0.01 + 1048576.0 / (t_us * 1e3) * 0.01) << tx.out;
  EXPECT_EQ(w[10], "ok");
}

// Bidirectional: the total is 2 x size over the time until both directions are done,
// in every format.
TEST_F(FormatsCli, BenchGpuBidirectionalTotalCountsBothDirections) {
  const std::string args = "bench gpu --backend host --warmup 1 --iters 3 --pattern bidir --pairs 0:1 --sizes 1M";
  const auto js = run_binary_split(args + " --format json");
  ASSERT_EQ(js.code, 0) << js.err;
  const auto jr = nlohmann::json::parse(js.out)["rows"][0];
  EXPECT_NEAR(jr["total_GBps"].get<double>(), 2.0 * 1048576 / jr["total_time_ns"]["median"].get<double>(), 1e-9);
  const auto csv = run_binary_split(args + " --format csv");
  ASSERT_EQ(csv.code, 0) << csv.err;
  const auto row = csv_rows(csv.out).at(0);
  ASSERT_TRUE(row.count("total_GBps")) << csv.out;
  EXPECT_GT(std::stod(row.at("total_GBps")), 0);
  EXPECT_EQ(fixed(std::stod(row.at("total_GBps")), 2), row.at("total_GBps")) << "two decimals, as text";
}

// Latency: microseconds in text, CSV and the JSON's one_way_us; ns in the JSON's stats.
TEST_F(FormatsCli, BenchGpuLatencyIsMicrosecondsWhereTheColumnSaysUs) {
  const std::string args = "bench gpu --backend host --warmup 1 --iters 3 --pattern latency --pairs 0:1";
  const auto js = run_binary_split(args + " --format json");
  ASSERT_EQ(js.code, 0) << js.err;
  const auto jr = nlohmann::json::parse(js.out)["rows"][0];
  EXPECT_NEAR(jr["one_way_us"].get<double>(), jr["time_ns"]["median"].get<double>() / 1e3, 1e-9);
  const auto csv = run_binary_split(args + " --format csv");
  ASSERT_EQ(csv.code, 0) << csv.err;
  const auto row = csv_rows(csv.out).at(0);
  EXPECT_EQ(row.at("one_way_us"), row.at("p50_us"));
  EXPECT_TRUE(row.count("cv_pct"));
}

TEST_F(FormatsCli, OutDirGetsTheFormatsExtension) {
  const auto dir = std::filesystem::temp_directory_path() / ("p2pscope-formats-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  for (const std::string f : {"text", "csv", "json"}) {
    const auto r = run_binary_split("bench gpu --backend host --warmup 0 --iters 1 --pairs 0:1 --sizes 4K --format " +
                                    f + " --out " + dir.string() + "/");
    ASSERT_EQ(r.code, 0) << r.err;
  }
  std::vector<std::string> ext;
  for (const auto& e : std::filesystem::directory_iterator(dir)) ext.push_back(e.path().extension().string());
  std::sort(ext.begin(), ext.end());
  EXPECT_EQ(ext, (std::vector<std::string>{".csv", ".json", ".txt"}));
  std::filesystem::remove_all(dir);
}

// The refusals of a format a command does not take, word for word as before the printers
// (those CLI11 checks in p2pscope's words since issue 44 item 6, not CLI11's "not in {...}").
TEST_F(FormatsCli, AnUnofferedFormatIsRefusedAsBefore) {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"bench gpu --backend host --format xml", "--format 'xml': use text, csv or json"},
      {"bench nccl --op allreduce --format html", "--format 'html': use text, csv or json"},
      {"bench nccl --op allreduce,allgather --format csv", "--format csv takes one --op; use json or text for several"},
      {"compare a.json b.json --format csv", "--format 'csv': text, json or html"},
      {"topo --format csv", "--format: 'csv' is not one of text, json"},
      {"doctor --format csv", "--format: 'csv' is not one of text, json"},
      {"irq plan --format csv", "--format: 'csv' is not one of text, json"},
      {"irq diff --format html", "--format: 'html' is not one of text, json"},
  };
  for (const auto& c : cases) {
    const auto r = run_binary_split(c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
  }
}
