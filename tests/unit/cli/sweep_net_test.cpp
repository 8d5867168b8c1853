// `p2pscope sweep net`: the sweep of sweep tcp over an NCCL net plugin (the project's
// reference plugin, built next to the binary in lib/), through the built binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_binary.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;
using p2pscope::test::run_binary;

namespace {

class SweepNetCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (" << P2PSCOPE_BINARY << ")";
    refnet_ = fs::path(P2PSCOPE_BINARY).parent_path() / "lib" / "libnccl-net-p2pscope.so";
    if (!fs::exists(refnet_)) GTEST_SKIP() << "reference plugin not built (" << refnet_ << ")";
    dir_ = p2pscope::test::fresh_temp_dir("p2pscope-sweep-net", "t", false);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path refnet_, dir_;
};

using p2pscope::test::slurp;

using p2pscope::test::run_binary_env;

}  // namespace

TEST_F(SweepNetCli, SweepsThePluginAndWritesWhatSweepTcpWrites) {
  const auto r = run_binary_env("P2PSCOPE_REFNET_IFS=lo", "sweep net --plugin " + refnet_.string() + " --out " +
                                                       dir_.string() + " --size 3M --reps 1 --channels-list 1,2 "
                                                       "--chunk-list 256K,1M --window-list 2 --verify --iters 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("loaded net plugin 'p2pscope-refnet' v11"), std::string::npos) << r.out;
  // 2 channel counts x 2 chunks x 1 window, one rep each, all measured.
  std::istringstream csv(slurp(dir_ / "sweep.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("channels,chunk_bytes,window,sockets_per_channel,rep,GBps", 0), 0u) << line;
  int rows = 0;
  while (std::getline(csv, line)) {
    if (line.empty()) continue;
    ++rows;
    const auto gbps = line.substr(line.find(",0,") + 3);  // after rep 0
    EXPECT_GT(std::stod(gbps), 0) << line;
  }
  EXPECT_EQ(rows, 4);
  EXPECT_TRUE(fs::exists(dir_ / "heatmap.svg"));
  const auto best = nlohmann::json::parse(slurp(dir_ / "best.json"));
  EXPECT_EQ(best["command"].get<std::string>().rfind("p2pscope bench net --plugin " + refnet_.string() + " --mode bw", 0),
            0u)
      << best.dump(2);
  EXPECT_EQ(best["params"]["transport"], "net plugin p2pscope-refnet v11");
  EXPECT_EQ(best["points"], 4);
}

// The points really go through the plugin: one that never accepts a request makes the
// first point fail at the --timeout with the engine's words, exit 1.
TEST_F(SweepNetCli, APluginThatTakesNoRequestFailsTheFirstPointAtTheTimeout) {
  const auto r = run_binary_env("P2PSCOPE_REFNET_IFS=lo P2PSCOPE_REFNET_NULL_REQUESTS=forever",
                         "sweep net --plugin " + refnet_.string() + " --out " + dir_.string() +
                             " --size 1M --reps 1 --channels-list 1 --chunk-list 256K --window-list 2 --timeout 1");
  EXPECT_EQ(r.code, 1) << r.out;
  // Both sides stall: the point names the client's own stall, or the server's when that
  // reaches the client first over the watched control connection (fa3cf1f).
  EXPECT_TRUE(r.out.find("no progress for 1.0 s while posting a send") != std::string::npos ||
              (r.out.find("the server failed the round") != std::string::npos &&
               r.out.find("no progress for 1.0 s while posting a receive") != std::string::npos))
      << r.out;
}

TEST_F(SweepNetCli, APluginThatIsNotAPluginIsNamed) {
  const fs::path bogus = fs::temp_directory_path() / ("p2pscope-not-a-plugin-" + std::to_string(getpid()) + ".so");
  std::ofstream(bogus) << "not an ELF file\n";
  const auto r = run_binary("sweep net --plugin " + bogus.string() + " --out " + dir_.string() + " --reps 1");
  fs::remove(bogus);
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(bogus.string()), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "sweep.csv")) << "nothing measured, nothing written";
}

TEST_F(SweepNetCli, SweepTcpHasNoPluginOption) {
  const auto r = run_binary("sweep tcp --plugin " + refnet_.string() + " --out " + dir_.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--plugin"), std::string::npos) << r.out;
}
