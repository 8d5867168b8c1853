// predict's three formats on fixture campaigns (issue 33): the same figures in text, csv
// and JSON, each in the unit its column names (us, GB/s = 1e9 B/s, %), pinned against the
// model and the fixtures' own files so that a unit slip (ns for us, 1e6 for 1e9) fails;
// JSON opens with schema_version and the run's metadata; the NCCL page names its model.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "p2pscope/collective.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/simulate.hpp"
#include "p2pscope/table.hpp"
#include "simulate_support.hpp"
#include "support/run_binary.hpp"

namespace p2pscope::simulate {
namespace {

using test::fs::path;
using Rows = std::vector<std::vector<std::string>>;

path uniform4() { return path(P2PSCOPE_FIXTURES_DIR) / "links" / "uniform4"; }
path h100x4() { return path(P2PSCOPE_FIXTURES_DIR) / "nccl-calibration" / "h100x4"; }

std::string run_ok(const std::string& args) {
  const auto r = test::run_binary_split(args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  return r.out;
}

// The fixtures' cells hold no quotes or commas: a plain split reads them.
Rows csv_rows(const std::string& text) {
  Rows rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream l(line);
    for (std::string c; std::getline(l, c, ',');) cells.push_back(c);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    rows.push_back(cells);
  }
  return rows;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream in(s);
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// The text table's rows, as words: the lines after the dashed rule.
std::vector<std::vector<std::string>> text_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  bool body = false;
  for (std::string line; std::getline(in, line);) {
    if (body) rows.push_back(words(line));
    body = body || line.rfind("-----", 0) == 0;
  }
  return rows;
}

// Text shows what csv holds, cell for cell (a cell with spaces is several words).
void expect_text_matches_csv(const std::string& text, const Rows& csv) {
  const auto t = text_rows(text);
  ASSERT_EQ(t.size() + 1, csv.size()) << text;
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::vector<std::string> want;
    for (const auto& c : csv[i + 1])
      for (const auto& w : words(c)) want.push_back(w);
    EXPECT_EQ(t[i], want) << "row " << i;
  }
}

// schema_version first, then the run's metadata block, then the command's keys.
void expect_json_head(const std::string& out) {
  const auto j = nlohmann::ordered_json::parse(out);
  ASSERT_TRUE(j.is_object());
  auto it = j.begin();
  EXPECT_EQ(it.key(), "schema_version");
  EXPECT_EQ(it.value(), kSchemaVersion);
  ++it;
  ASSERT_NE(it, j.end());
  EXPECT_EQ(it.key(), "metadata");
  for (const char* k : {"tool", "argv", "env", "hostname", "start_time"})
    EXPECT_TRUE(it.value().contains(k)) << k << " in the metadata block";
}

double num(const std::string& s) { return std::stod(s); }

TEST(PredictFormats, RingFiguresInTheirUnitsAgreeAcrossFormats) {
  const std::string args =
      "predict " + uniform4().string() + " --algo ring --ops allreduce,allgather --sizes 1K,1M,1G --format ";
  const auto csv = csv_rows(run_ok(args + "csv"));
  ASSERT_EQ(csv.size(), 7u);
  EXPECT_EQ(csv[0], (std::vector<std::string>{"op", "algo", "size", "size_bytes", "steps", "predicted_us", "algbw_GBps",
                                              "busbw_GBps", "bottleneck", "extrapolated"}));
  const Predictor pr(uniform4().string());
  for (std::size_t i = 1; i < csv.size(); ++i) {
    const auto& row = csv[i];
    SCOPED_TRACE(row[0] + " " + row[2]);
    const Collective op = parse_collective(row[0]);
    const auto S = std::stoull(row[3]);
    EXPECT_EQ(row[2], S == 1024 ? "1K" : S == 1u << 20 ? "1M" : "1G");
    const auto p = pr.predict(op, Algorithm::ring, S);
    EXPECT_EQ(std::stoi(row[4]), p.steps);
    // us: ns / 1e3, three decimals.
    EXPECT_NEAR(num(row[5]), p.time_ns / 1e3, 0.0006);
    // GB/s = bytes per ns: S over the time in ns, and busbw its table factor over 4 ranks.
    const double t_ns = num(row[5]) * 1e3;
    EXPECT_NEAR(num(row[6]), static_cast<double>(S) / t_ns, 0.0006 + 1e-3 * num(row[6]));
    EXPECT_NEAR(num(row[7]), num(row[6]) * busbw_factor(op, 4), 0.0011 + 1e-3 * num(row[7]));
  }
  // JSON's rows are csv's cells, numbers as numbers.
  const auto out = run_ok(args + "json");
  expect_json_head(out);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["kind"], "p2pscope_predict");
  ASSERT_EQ(j["rows"].size(), csv.size() - 1);
  for (std::size_t i = 1; i < csv.size(); ++i)
    for (std::size_t c = 0; c < csv[0].size(); ++c) {
      const auto& v = j["rows"][i - 1][csv[0][c]];
      if (v.is_number()) EXPECT_DOUBLE_EQ(v.get<double>(), num(csv[i][c])) << csv[0][c];
      else EXPECT_EQ(v.get<std::string>(), csv[i][c]) << csv[0][c];
    }
  const auto text = run_ok(args + "text");
  EXPECT_EQ(text.rfind("# p2pscope predict: collectives predicted from ", 0), 0u) << text;
  EXPECT_NE(text.find("\n# assumes: "), std::string::npos);
  expect_text_matches_csv(text, csv);
}

// A bench nccl JSON's row at (op, ranks, S).
nlohmann::json bench_row(const path& file, const std::string& op, int ranks, std::uint64_t S) {
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in);
  for (const auto& o : j.contains("ops") ? j["ops"] : nlohmann::json::array({j}))
    if (o["op"] == op && o["ranks"] == ranks)
      for (const auto& r : o["rows"])
        if (r["size_bytes"] == S) return r;
  throw std::runtime_error("no row " + op);
}

TEST(PredictFormats, NcclModelFiguresInTheirUnitsAgreeAcrossFormats) {
  const path measured = h100x4() / "measured-h100x4.json";
  const std::string args = "predict " + h100x4().string() + " --algo nccl --ops allreduce,allgather --ranks 2,4 " +
                           "--sizes 1M,1G --measured " + measured.string() + " --format ";
  const auto csv = csv_rows(run_ok(args + "csv"));
  ASSERT_EQ(csv.size(), 9u);
  const std::vector<std::string> head = {"op", "ranks", "size", "size_bytes", "algo", "proto", "channels", "role",
                                         "predicted_us", "gpu_us", "host_us", "measured_us", "error_pct", "spread_pct",
                                         "measured_gpu_us", "gpu_error_pct", "flags"};
  ASSERT_EQ(csv[0], head);
  // allreduce at 2 ranks, 1 MiB was timed by the calibration: its time is the file's,
  // in us; measured_us is the measured file's; the error their difference in %.
  const auto& cell = csv[1];
  ASSERT_EQ(cell[0] + cell[1] + cell[3], "allreduce21048576");
  EXPECT_EQ(cell[7], "calibration");
  const double cal_us = bench_row(h100x4() / "nccl-calibration" / "timed-n2.json", "allreduce", 2, 1 << 20)["time_us"];
  const double meas_us = bench_row(measured, "allreduce", 2, 1 << 20)["time_us"];
  EXPECT_EQ(cell[8], fixed(cal_us, 2));
  EXPECT_EQ(cell[11], fixed(meas_us, 2));
  EXPECT_EQ(cell[12], fixed((cal_us - meas_us) / meas_us * 100, 1));

  const auto out = run_ok(args + "json");
  expect_json_head(out);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["kind"], "p2pscope_predict_nccl");
  EXPECT_NEAR(j["rows"][0]["predicted_us"].get<double>(), cal_us, 1e-9);
  EXPECT_NEAR(j["rows"][0]["measured_us"].get<double>(), meas_us, 1e-9);
  // csv read back is the JSON, to the digits csv shows (2 for us, 1 for %); "-" is null.
  const std::map<std::string, std::pair<std::string, double>> numeric = {
      {"ranks", {"ranks", 0}},          {"size_bytes", {"size_bytes", 0}},         {"channels", {"channels", 0}},
      {"predicted_us", {"predicted_us", 0.005}}, {"gpu_us", {"gpu_us", 0.005}},    {"host_us", {"host_us", 0.005}},
      {"measured_us", {"measured_us", 0.005}},   {"error_pct", {"error_pct", 0.05}},
      {"spread_pct", {"measured_spread_pct", 0.05}}, {"measured_gpu_us", {"measured_gpu_us", 0.005}},
      {"gpu_error_pct", {"gpu_error_pct", 0.05}}};
  ASSERT_EQ(j["rows"].size(), csv.size() - 1);
  for (std::size_t i = 1; i < csv.size(); ++i) {
    const auto& row = j["rows"][i - 1];
    for (std::size_t c = 0; c < head.size(); ++c) {
      SCOPED_TRACE(head[c] + " row " + std::to_string(i));
      if (const auto it = numeric.find(head[c]); it != numeric.end()) {
        const auto& v = row[it->second.first];
        if (csv[i][c] == "-") EXPECT_TRUE(v.is_null() || v == 0) << v;
        else EXPECT_NEAR(num(csv[i][c]), v.get<double>(), it->second.second * 1.0001);
      } else if (head[c] == "op" || head[c] == "role") {
        EXPECT_EQ(row[head[c]].get<std::string>(), csv[i][c]);
      }
    }
  }
  const auto text = run_ok(args + "text");
  EXPECT_EQ(text.rfind("# p2pscope predict (NCCL model): " + j["headline"].get<std::string>() + "\n", 0), 0u) << text;
  expect_text_matches_csv(text, csv);
}

// The NCCL path's page names its model in the legend, as the link-model page does.
TEST(PredictFormats, NcclPageNamesTheModel) {
  const auto page = test::temp_dir("predict-nccl-html") / "p.html";
  run_ok("predict " + h100x4().string() + " --algo nccl --ops allgather --ranks 2,4 --sizes 1M,1G --measured " +
         (h100x4() / "measured-h100x4.json").string() + " --html " + page.string());
  const std::string html = test::slurp(page);
  EXPECT_NE(html.find("predicted (NCCL model)"), std::string::npos);
  EXPECT_EQ(html.find("predicted (predicted)"), std::string::npos);
  EXPECT_EQ(html.find("predicted (calibration)"), std::string::npos);
  EXPECT_NE(html.find("measured (NCCL)"), std::string::npos);
}

// --format is read once, before any work, on both paths: a bad one is usage (exit 2).
TEST(PredictFormats, AnUnknownFormatIsUsage) {
  for (const std::string algo : {"ring", "nccl"})
    for (const std::string f : {"xml", "html"}) {
      const auto r = test::run_binary("predict " + h100x4().string() + " --algo " + algo + " --format " + f);
      EXPECT_EQ(r.code, 2) << r.out;
      EXPECT_NE(r.out.find("--format '" + f + "': use text, json or csv"), std::string::npos) << r.out;
    }
}

}  // namespace
}  // namespace p2pscope::simulate
