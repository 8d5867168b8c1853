// predict --measured on real nccl-tests 2.19.1 output (tests/fixtures/nccl-tests/h200-2.19):
// one reader for text and -J JSON, each run of a file with its own rank count, #wrong rows
// and CPU-time tables no figures, a cut table's complete rows used and said.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "p2pscope/error.hpp"
#include "simulate/predict_nccl_parts.hpp"
#include "support/run_binary.hpp"
#include "simulate_support.hpp"

namespace p2pscope::simulate::nccl_predict {
namespace {
namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return (fs::path(P2PSCOPE_FIXTURES_DIR) / "nccl-tests/h200-2.19" / name).string();
}
std::string slurp(const std::string& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
// A file made of real output (two runs appended, a cut, an edited check), in a temp dir.
std::string made(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("p2pscope-measured-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}
std::size_t cells_at(const Measured& m, int ranks) {
  std::size_t n = 0;
  for (const auto& [key, cell] : m) n += std::get<1>(key) == ranks;
  return n;
}

TEST(MeasuredNcclTests, TwoRunsInOneFileEachKeepTheirOwnRankCount) {
  Measured m;
  read_measured(made("two.txt", slurp(fixture("08_all_reduce_np4.txt")) + slurp(fixture("01_all_reduce_plain.txt"))),
                m, "");
  EXPECT_EQ(cells_at(m, 4), 9u);
  EXPECT_EQ(cells_at(m, 2), 24u);
  EXPECT_EQ(cells_at(m, 6), 0u) << "the two runs' rank lines counted together";
}

TEST(MeasuredNcclTests, TheJsonOfARunGivesTheCellsOfItsText) {
  Measured text, json;
  read_measured(fixture("05_all_reduce_json.txt"), text, "");
  read_measured(fixture("ar_plain.json"), json, "");
  ASSERT_EQ(json.size(), text.size());
  ASSERT_EQ(json.size(), 22u);
  for (const auto& [key, cell] : text) {
    ASSERT_TRUE(json.count(key)) << std::get<0>(key) << " " << std::get<2>(key);
    EXPECT_NEAR(json.at(key).ns, cell.ns, std::max(6.0, cell.ns * 6e-4)) << std::get<2>(key);  // the text's digits
  }
}

TEST(MeasuredNcclTests, ACpuTimeTableIsRefusedAndAnotherGpuToo) {
  Measured m;
  try {
    read_measured(fixture("06_all_reduce_cputime_ts.txt"), m, "");
    FAIL() << "a -C 1 table was read as the operation's time";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-C 1"), std::string::npos) << e.what();
  }
  try {
    read_measured(fixture("01_all_reduce_plain.txt"), m, "GPU 0 (NVIDIA H100 80GB HBM3)");
    FAIL() << "an H200 run set against an H100 campaign";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("nccl-tests ran on NVIDIA H200"), std::string::npos) << e.what();
  }
}

TEST(MeasuredNcclTests, AWrongRowIsNoCellAndACutTableIsSaid) {
  std::string text = slurp(fixture("01_all_reduce_plain.txt"));
  // The 1 MiB row's out-of-place check, as a run with bad results prints it.
  const std::string row = "     1048576        262144     float     sum      -1";
  const auto at = text.find(row);
  ASSERT_NE(at, std::string::npos);
  const auto eol = text.find('\n', at);
  std::string line = text.substr(at, eol - at);
  const auto zero = line.find("       0  ");
  ASSERT_NE(zero, std::string::npos) << line;
  line.replace(zero, 10, "       3  ");
  text.replace(at, eol - at, line);
  Measured m;
  std::vector<std::string> notes;
  read_measured(made("wrong.txt", text), m, "", &notes);
  EXPECT_EQ(m.size(), 23u);
  for (const auto& [key, cell] : m) EXPECT_NE(std::get<2>(key), 1048576u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("1 row of all_reduce with #wrong > 0 not used"), std::string::npos) << notes[0];

  const std::string whole = slurp(fixture("01_all_reduce_plain.txt"));
  Measured cut;
  notes.clear();
  read_measured(made("cut.txt", whole.substr(0, whole.find(row) + 40)), cut, "", &notes);
  EXPECT_EQ(cut.size(), 17u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("was cut after 524288 B"), std::string::npos) << notes[0];
}

}  // namespace
}  // namespace p2pscope::simulate::nccl_predict

// predict --calibration from nccl-tests files a user already has: allreduce and sendrecv
// at 2 and 4 ranks fit the model, the other ops are predicted and set against their own
// runs; every row says which it is.
namespace p2pscope::simulate {
namespace {
TEST(PredictCalibration, AllreduceAndSendrecvAtTwoAndFourRanksFitTheOtherOpsArePredicted) {
  namespace fs = std::filesystem;
  const auto f = [](const char* n) { return (fs::path(P2PSCOPE_FIXTURES_DIR) / "nccl-tests/h200-2.19" / n).string(); };
  const auto out = test::temp_dir("predict-calibration");
  const std::string campaign = (fs::path(P2PSCOPE_FIXTURES_DIR) / "campaigns/h200x2").string();
  const auto r = test::run_binary(
      "predict " + campaign + " --algo nccl --ranks 2,4 --sizes 64K,1M,16M --ops allreduce,sendrecv,allgather,reducescatter"
      " --calibration " + f("01_all_reduce_plain.txt") + " " + f("03_sendrecv.txt") + " " + f("08_all_reduce_np4.txt") +
      " " + f("08_sendrecv_np4.txt") + " --measured " + f("04_all_gather.txt") + " " + f("04_reduce_scatter.txt") + " " +
      f("08_all_gather_np4.txt") + " " + f("08_reduce_scatter_np4.txt") + " --format json --out " + (out / "p.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(out / "p.json");
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["rows"].size(), 4u * 2 * 3);
  std::size_t predicted_measured = 0;
  for (const auto& row : j["rows"]) {
    const bool fitted = row["op"] == "allreduce" || row["op"] == "sendrecv";
    EXPECT_EQ(row["role"], fitted ? "calibration" : "predicted") << row.dump();
    if (!fitted && !row["measured_us"].is_null()) ++predicted_measured;
  }
  // allgather and reducescatter at 2 ranks (1K..16M by 2: 64K, 1M, 16M) and at 4 ranks
  // (1K..64M by 4: 64K, 1M, 16M): every predicted cell has its run.
  EXPECT_EQ(predicted_measured, 2u * 2 * 3);
  // The model says what calibrated it: the four curves of the files.
  ASSERT_EQ(j["calibrated_by"].size(), 4u) << j["calibrated_by"].dump();
  EXPECT_NE(j["calibrated_by"].dump().find("sendrecv at 4 ranks: 9 sizes"), std::string::npos) << j["calibrated_by"].dump();
}
}  // namespace
}  // namespace p2pscope::simulate
