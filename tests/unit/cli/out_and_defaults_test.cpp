// Commands that write take --out (analyze wrote only into the campaign directory and
// refused --out; doctor spelled it --report only), and `profile` without --backend
// says which backend it picked. Through the built binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/run_binary.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;
using p2pscope::test::run_binary;

namespace {

class OutCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (" << P2PSCOPE_BINARY << ")";
    dir_ = p2pscope::test::fresh_temp_dir("p2pscope-out-cli", "t");
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A writable copy of a fixture campaign.
  fs::path campaign(const std::string& name) {
    const fs::path to = dir_ / name;
    fs::copy(fs::path(P2PSCOPE_FIXTURES_DIR) / "campaigns" / name, to, fs::copy_options::recursive);
    return to;
  }
  fs::path dir_;
};

}  // namespace

TEST_F(OutCli, AnalyzeWritesItsOutputsIntoOut) {
  const fs::path camp = campaign("host2");
  const fs::path out = dir_ / "analysis" / "nested";  // created when missing
  const auto r = run_binary("analyze " + camp.string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("report: " + (out / "report.html").string()), std::string::npos) << r.out;
  for (const char* f : {"summary.csv", "summary.json", "links.json", "findings.json", "report.html"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
    EXPECT_FALSE(fs::exists(camp / f)) << f << " written into the campaign too";
  }
}

TEST_F(OutCli, AnalyzeOutThatCannotBeADirectoryIsAUsageError) {
  const fs::path camp = campaign("host2");
  const fs::path file = dir_ / "a-file";
  std::ofstream(file) << "not a directory\n";
  const auto r = run_binary("analyze " + camp.string() + " --out " + file.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--out " + file.string()), std::string::npos) << r.out;
}

TEST_F(OutCli, DoctorTakesOutForItsReport) {
  const fs::path report = dir_ / "nccl-report.md";
  const auto r = run_binary("doctor --root " + (fs::path(P2PSCOPE_FIXTURES_DIR) / "fsroot" / "h200x2").string() +
                            " --nccl-log " + (fs::path(P2PSCOPE_FIXTURES_DIR) / "nccl-logs" / "default-p2p.log").string() +
                            " --out " + report.string());
  EXPECT_NE(r.code, 2) << r.out;  // findings may set 1; a usage error would be 2
  EXPECT_TRUE(fs::exists(report)) << r.out;
  EXPECT_GT(fs::file_size(report), 0u);
}

// Without --backend, profile names the backend it chose (the one `run` picks: staged
// on a one-GPU host, host without a GPU) before it measures.
TEST_F(OutCli, ProfileSaysWhichBackendItPicked) {
  const fs::path out = dir_ / "camp";
  const auto r = run_binary("profile --sizes 1K --reps 1 --warmup 0 --drift 0 --temp-interval 0 "
                            "--thermal-warmup off --out " + out.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("profile: backend "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no --backend given"), std::string::npos) << r.out;
}
