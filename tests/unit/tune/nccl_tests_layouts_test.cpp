// nccl-tests' layouts read right, on real output of nccl-tests 2.19.1 on the H200 device
// (tests/fixtures/nccl-tests/h200-2.19/README.md): the default table, -I's per-iteration
// columns, -C's CPU time with -S's timestamp, N/A checks, four ranks, one rank, the -J
// JSON beside the text of the same run, several runs in one file, a cut table, #wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "p2pscope/error.hpp"
#include "p2pscope/tune.hpp"

namespace p2pscope::tune {
namespace {
namespace fs = std::filesystem;

std::string path(const std::string& name) {
  return (fs::path(P2PSCOPE_FIXTURES_DIR) / "nccl-tests/h200-2.19" / name).string();
}
std::string slurp(const std::string& name) {
  std::ifstream in(path(name));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
std::vector<PerfRun> runs_of(const std::string& name) { return read_nccl_log_file(path(name)).perf; }
const Finding* find(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

TEST(NcclTestsLayouts, TheDefaultTableOf219WithItsRanksVersionAndGpu) {
  const auto runs = runs_of("01_all_reduce_plain.txt");
  ASSERT_EQ(runs.size(), 1u);
  const PerfRun& r = runs[0];
  EXPECT_EQ(r.op, "all_reduce");
  EXPECT_EQ(r.version, "2.19.1");
  EXPECT_EQ(r.nranks, 2);
  EXPECT_EQ(r.gpu, "NVIDIA H200");
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.cpu_time);
  EXPECT_FALSE(r.per_iteration);
  ASSERT_EQ(r.rows.size(), 24u);  // 8 B .. 64 MiB by 2
  // "8 2 float sum -1 4392.21 0.00 0.00 0 4511.56 0.00 0.00 0"
  EXPECT_EQ(r.rows[0].size_bytes, 8u);
  EXPECT_DOUBLE_EQ(r.rows[0].oop_time_us, 4392.21);
  EXPECT_DOUBLE_EQ(r.rows[0].ip_time_us, 4511.56);
  EXPECT_EQ(r.rows[0].oop_wrong, 0);
  // "67108864 16777216 float sum -1 36217.9 1.85 1.85 0 36103.6 1.86 1.86 0"
  EXPECT_EQ(r.rows.back().size_bytes, 67108864u);
  EXPECT_DOUBLE_EQ(r.rows.back().oop_busbw, 1.85e9);
  EXPECT_DOUBLE_EQ(r.rows.back().ip_busbw, 1.86e9);
  EXPECT_DOUBLE_EQ(r.avg_busbw, 0.380495e9);
  // The same run with NCCL_DEBUG=INFO lines between its own: the same table.
  const auto debug = runs_of("02_all_reduce_debug.txt");
  ASSERT_EQ(debug.size(), 1u);
  EXPECT_EQ(debug[0].rows.size(), 24u);
  EXPECT_EQ(debug[0].nranks, 2);
}

TEST(NcclTestsLayouts, PerIterationColumnsAreReadByTheirTitlesNotTakenForTheInPlaceHalf) {
  const auto runs = runs_of("05_all_reduce_periter.txt");
  ASSERT_EQ(runs.size(), 1u);
  const PerfRun& r = runs[0];
  EXPECT_TRUE(r.per_iteration);
  ASSERT_EQ(r.rows.size(), 22u);
  // "8 2 float sum -1 4511.84 0.00 0.00 0 4497.25 4524.29 4524.29 0.13 4512.39 0.00 0.00 0 4497.54 ..."
  // By position, the in-place time would be i_min (4497.25) and its busbw i_p99 (4524 GB/s).
  EXPECT_DOUBLE_EQ(r.rows[0].oop_time_us, 4511.84);
  EXPECT_DOUBLE_EQ(r.rows[0].oop_cv_pct, 0.13);
  EXPECT_DOUBLE_EQ(r.rows[0].ip_time_us, 4512.39);
  EXPECT_DOUBLE_EQ(r.rows[0].ip_busbw, 0);
  EXPECT_EQ(r.rows[0].ip_wrong, 0);
  EXPECT_DOUBLE_EQ(r.rows.back().ip_busbw, 1.85e9);
  EXPECT_LT(r.peak_busbw(), 2e9);  // sockets between two ranks of one GPU: no 4524 GB/s
}

TEST(NcclTestsLayouts, ACpuTimeTableWithATimestampIsReadAndSaidToBeCpuTime) {
  const auto l = read_nccl_log_file(path("06_all_reduce_cputime_ts.txt"));
  ASSERT_EQ(l.perf.size(), 1u);
  const PerfRun& r = l.perf[0];
  EXPECT_TRUE(r.cpu_time);
  ASSERT_EQ(r.rows.size(), 22u);  // the two-word timestamp after the last #wrong
  EXPECT_DOUBLE_EQ(r.rows[0].oop_time_us, 13.48);
  EXPECT_EQ(r.rows[0].ip_wrong, 0);
  const auto findings = log_findings(l);  // find() points into it
  const Finding* f = find(findings, "perf.cpu_time");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("not the operation's"), std::string::npos) << f->title;
}

TEST(NcclTestsLayouts, AnUncheckedHalfIsNotAWrongRow) {
  const auto sendrecv = runs_of("03_sendrecv.txt");
  ASSERT_EQ(sendrecv.size(), 1u);
  EXPECT_EQ(sendrecv[0].op, "sendrecv");
  EXPECT_EQ(sendrecv[0].rows[0].oop_wrong, 0);
  EXPECT_EQ(sendrecv[0].rows[0].ip_wrong, -1);  // N/A: sendrecv's in-place half is not checked
  EXPECT_EQ(sendrecv[0].wrong_rows(), 0u);
  const auto unchecked = runs_of("06_all_reduce_c0.txt");
  ASSERT_EQ(unchecked.size(), 1u);
  for (const auto& row : unchecked[0].rows) EXPECT_TRUE(row.oop_wrong == -1 && row.ip_wrong == -1) << row.size_bytes;
}

TEST(NcclTestsLayouts, EveryCollectiveAtTwoAndFourRanksAndOneRank) {
  for (const std::string op : {"all_gather", "reduce_scatter", "alltoall", "broadcast"}) {
    const auto two = runs_of("04_" + op + ".txt");
    ASSERT_EQ(two.size(), 1u) << op;
    EXPECT_EQ(two[0].op, op);
    EXPECT_EQ(two[0].nranks, 2) << op;
    EXPECT_EQ(two[0].rows.size(), 15u) << op;
    EXPECT_TRUE(two[0].complete) << op;
  }
  for (const std::string op : {"all_reduce", "sendrecv", "all_gather", "reduce_scatter", "alltoall", "broadcast"}) {
    const auto four = runs_of("08_" + op + "_np4.txt");
    ASSERT_EQ(four.size(), 1u) << op;
    EXPECT_EQ(four[0].op, op);
    EXPECT_EQ(four[0].nranks, 4) << op;
    EXPECT_EQ(four[0].rows.size(), 9u) << op;  // 1K .. 64M by 4
  }
  const auto one = runs_of("07_all_reduce_1proc.txt");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].nranks, 1);
}

// The text and the -J JSON that one run wrote give the same figures, to the text's digits.
void expect_same_run(const PerfRun& text, const PerfRun& json) {
  EXPECT_EQ(json.op, text.op);
  EXPECT_EQ(json.nranks, text.nranks);
  EXPECT_EQ(json.gpu, text.gpu);
  EXPECT_EQ(json.per_iteration, text.per_iteration);
  EXPECT_NEAR(json.avg_busbw, text.avg_busbw, 1e3);
  ASSERT_EQ(json.rows.size(), text.rows.size());
  for (std::size_t i = 0; i < text.rows.size(); ++i) {
    const PerfRow &t = text.rows[i], &j = json.rows[i];
    EXPECT_EQ(j.size_bytes, t.size_bytes);
    EXPECT_NEAR(j.oop_time_us, t.oop_time_us, std::max(0.006, t.oop_time_us * 6e-4)) << t.size_bytes;  // "36217.9"
    EXPECT_NEAR(j.ip_time_us, t.ip_time_us, std::max(0.006, t.ip_time_us * 6e-4)) << t.size_bytes;
    EXPECT_NEAR(j.oop_busbw, t.oop_busbw, 0.006e9) << t.size_bytes;
    EXPECT_EQ(j.oop_wrong, t.oop_wrong);
    if (text.per_iteration) {
      EXPECT_NEAR(j.oop_cv_pct, t.oop_cv_pct, 0.006) << t.size_bytes;
    }
  }
}

TEST(NcclTestsLayouts, TheJsonOfARunGivesTheFiguresOfItsText) {
  const auto plain = nlohmann::json::parse(slurp("ar_plain.json"));
  ASSERT_TRUE(is_nccl_tests_json(plain));
  const auto text = runs_of("05_all_reduce_json.txt");
  ASSERT_EQ(text.size(), 1u);
  expect_same_run(text[0], perf_from_nccl_tests_json(plain, "ar_plain.json"));
  const auto periter = runs_of("05_all_reduce_periter_z2_json.txt");
  ASSERT_EQ(periter.size(), 1u);
  expect_same_run(periter[0], perf_from_nccl_tests_json(nlohmann::json::parse(slurp("ar_periter.json")), "ar_periter.json"));
  const auto four = runs_of("08_all_reduce_np4_json.txt");
  ASSERT_EQ(four.size(), 1u);
  expect_same_run(four[0], perf_from_nccl_tests_json(nlohmann::json::parse(slurp("ar_np4.json")), "ar_np4.json"));
}

TEST(NcclTestsLayouts, AJsonFigureThatIsNoMeasurementIsRefusedByName) {
  auto j = nlohmann::json::parse(slurp("ar_plain.json"));
  j["results"][3]["out_of_place"]["time"] = -5;
  try {
    (void)perf_from_nccl_tests_json(j, "bad.json");
    FAIL() << "a negative time was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'bad.json', result 4: out_of_place.time is -5"), std::string::npos) << e.what();
  }
  j = nlohmann::json::parse(slurp("ar_plain.json"));
  j["results"][0]["size"] = "big";
  EXPECT_THROW((void)perf_from_nccl_tests_json(j, "bad.json"), UsageError);
  EXPECT_FALSE(is_nccl_tests_json(nlohmann::json::parse(R"({"rows": []})")));  // bench nccl's
}

TEST(NcclTestsLayouts, TwoRunsInOneFileAreTwoRunsEachWithItsOwnRankCount) {
  // A user who appends a 2-rank run to a 4-rank run's file.
  const auto l = parse_nccl_log(slurp("08_all_reduce_np4.txt") + slurp("01_all_reduce_plain.txt"), "two.txt");
  ASSERT_EQ(l.perf.size(), 2u);
  EXPECT_EQ(l.perf[0].nranks, 4);
  EXPECT_EQ(l.perf[1].nranks, 2);
  EXPECT_EQ(l.perf[0].rows.size(), 9u);
  EXPECT_EQ(l.perf[1].rows.size(), 24u);
}

TEST(NcclTestsLayouts, ACutTableKeepsItsCompleteRowsAndIsSaidToBeCut) {
  // The file ends inside the 1 MiB row: the run killed, or the file truncated.
  const std::string whole = slurp("01_all_reduce_plain.txt");
  const std::string cut = whole.substr(0, whole.find("     1048576        262144") + 40);
  const auto l = parse_nccl_log(cut, "cut.txt");
  ASSERT_EQ(l.perf.size(), 1u);
  EXPECT_FALSE(l.perf[0].complete);
  ASSERT_EQ(l.perf[0].rows.size(), 17u);  // 8 B .. 512 KiB; the half-written row is no row
  EXPECT_EQ(l.perf[0].rows.back().size_bytes, 524288u);
  const auto findings = log_findings(l);  // find() points into it
  const Finding* f = find(findings, "perf.cut");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("ends after 17 rows (last 524288 B)"), std::string::npos) << f->title;
  const auto whole_findings = log_findings(parse_nccl_log(whole, "whole.txt"));
  EXPECT_EQ(find(whole_findings, "perf.cut"), nullptr);
}

}  // namespace
}  // namespace p2pscope::tune
