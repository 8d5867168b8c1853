// `p2pscope compare` on nccl-tests output (issue 44 items 2 and 4), on real nccl-tests
// 2.19.1 runs of the H200 device (tests/fixtures/nccl-tests/h200-2.19): the text and the
// -J JSON of one run give the same points and no change; three runs a side against three
// made twice slower are flagged at their 75 % intervals; another rank count and a CPU-time
// table are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "p2pscope/compare.hpp"
#include "p2pscope/error.hpp"
#include "support/files.hpp"
#include "support/run_binary.hpp"

namespace fs = std::filesystem;
using namespace p2pscope;

namespace {

std::string nt(const std::string& name) {
  return (fs::path(P2PSCOPE_FIXTURES_DIR) / "nccl-tests" / "h200-2.19" / name).string();
}

// A real run with every out-of-place time multiplied by `factor` and its busbw divided by
// it: a run `factor` times slower, in nccl-tests' own layout.
std::string slowed(const std::string& name, double factor) {
  std::istringstream in(test::slurp(nt(name)));
  std::string line, out;
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::vector<std::string> t;
    for (std::string x; w >> x;) t.push_back(x);
    if (t.size() >= 13 && t[2] == "float" && std::isdigit(static_cast<unsigned char>(t[0][0]))) {
      t[5] = std::to_string(std::stod(t[5]) * factor);
      t[7] = std::to_string(std::stod(t[7]) / factor);
      line.clear();
      for (const auto& x : t) line += "  " + x;
    }
    out += line + "\n";
  }
  return out;
}

class CompareNcclTests : public ::testing::Test {
 protected:
  void SetUp() override { base_ = test::fresh_test_dir("p2pscope-compare-nccl-tests"); }
  void TearDown() override { fs::remove_all(base_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(base_ / name) << text;
    return (base_ / name).string();
  }
  fs::path base_;
};

}  // namespace

TEST_F(CompareNcclTests, TheTextAndTheJsonOfOneRunAreTheSamePointsAndNoChange) {
  const auto text = compare::load(nt("05_all_reduce_json.txt"));
  const auto json = compare::load(nt("ar_plain.json"));
  ASSERT_EQ(text.points.size(), 22u);
  ASSERT_EQ(json.points.size(), 22u);
  for (std::size_t i = 0; i < text.points.size(); ++i) {
    EXPECT_EQ(json.points[i].size_bytes, text.points[i].size_bytes);
    EXPECT_NEAR(json.points[i].median, text.points[i].median, std::max(6.0, text.points[i].median * 6e-4));
  }
  const auto c = compare::compare(text, json);
  for (const auto& r : c.rows) EXPECT_NE(r.verdict, "slower") << r.size_bytes;
  EXPECT_NE(text.description.find("nccl-tests, allreduce of float over 2 ranks"), std::string::npos)
      << text.description;
}

TEST_F(CompareNcclTests, ThreeRunsTwiceSlowerAreFlaggedAtTheir75PercentIntervals) {
  const auto a = compare::load_side({nt("01_all_reduce_plain.txt"), nt("02_all_reduce_debug.txt"),
                                     nt("06_all_reduce_quick.txt")});
  const auto b = compare::load_side({write("s1.txt", slowed("01_all_reduce_plain.txt", 2.0)),
                                     write("s2.txt", slowed("02_all_reduce_debug.txt", 2.02)),
                                     write("s3.txt", slowed("06_all_reduce_quick.txt", 1.98))});
  const auto c = compare::compare(a, b);
  ASSERT_EQ(c.rows.size(), 24u);
  for (const auto& r : c.rows) {
    EXPECT_EQ(r.verdict, "slower") << r.size_bytes;
    EXPECT_NEAR(r.delta_pct, 100, 6) << r.size_bytes;
  }
  EXPECT_EQ(c.levels, "75 %");
  const auto cmd = test::run_binary_split("compare " + nt("01_all_reduce_plain.txt") + " " + nt("02_all_reduce_debug.txt") +
                                          " " + nt("06_all_reduce_quick.txt") + " vs " + (base_ / "s1.txt").string() +
                                          " " + (base_ / "s2.txt").string() + " " + (base_ / "s3.txt").string() +
                                          " --fail-on-change");
  EXPECT_EQ(cmd.code, 1) << cmd.out << cmd.err;
  EXPECT_NE(cmd.out.find("allreduce slower at every size (24)"), std::string::npos) << cmd.out;
}

TEST_F(CompareNcclTests, AnotherRankCountAndACpuTimeTableAreRefusedByName) {
  const auto two_four = test::run_binary_split("compare " + nt("01_all_reduce_plain.txt") + " " + nt("08_all_reduce_np4.txt"));
  EXPECT_EQ(two_four.code, 2) << two_four.out << two_four.err;
  EXPECT_NE(two_four.err.find("over 2 ranks"), std::string::npos) << two_four.err;
  EXPECT_NE(two_four.err.find("over 4 ranks"), std::string::npos) << two_four.err;
  try {
    (void)compare::load(nt("06_all_reduce_cputime_ts.txt"));
    FAIL() << "a -C 1 table was compared as the operation's time";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-C 1"), std::string::npos) << e.what();
  }
}
