// The p2pscope binary as a child: SIGKILL mid-campaign then --resume, SIGINT -> 130,
// and bad input -> exit 2 before measuring. Skips when the binary is not built.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "profile/execution_log.hpp"
#include "support/child.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;
using namespace p2pscope::profile;
using p2pscope::test::spawn;
using p2pscope::test::data_lines;
using p2pscope::test::wait_exit;
using p2pscope::test::wait_rows;

namespace {

std::vector<std::string> campaign_args(const fs::path& out) {
  // 64 MiB copies keep each op long enough to be caught mid-campaign.
  return {"profile", "--backend", "host", "--gpus", "0-1", "--sizes", "1K,1M,64M", "--reps", "40",
          "--warmup", "1", "--drift", "0", "--temp-interval", "0", "--thermal-warmup", "off", "--out", out.string()};
}

class ProfileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (" << P2PSCOPE_BINARY << ")";
    dir_ = p2pscope::test::fresh_temp_dir("p2pscope-cli", "t", false);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

void expect_complete_once(const fs::path& dir) {
  std::map<std::pair<int, int>, int> c;
  for (const auto& r : read_log((dir / "execution_log.csv").string()).rows) ++c[{r.config_id, r.repetition}];
  EXPECT_EQ(c.size(), 6u * 40u);
  for (const auto& [k, n] : c) EXPECT_EQ(n, 1) << "config " << k.first << " rep " << k.second;
}

}  // namespace

TEST_F(ProfileCli, SigkillThenResumeLogsEveryOpExactlyOnce) {
  const auto out = dir_ / "camp";
  const pid_t pid = spawn(campaign_args(out));
  ASSERT_TRUE(wait_rows(pid, out / "execution_log.csv", 20)) << "campaign ended before it could be killed";
  kill(pid, SIGKILL);
  EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);
  const std::size_t before = data_lines(out / "execution_log.csv");
  ASSERT_LT(before, 240u);
  EXPECT_EQ(wait_exit(spawn({"profile", "--resume", out.string(), "--drift", "0", "--temp-interval", "0"})), 0);
  expect_complete_once(out);
}

TEST_F(ProfileCli, SigintFinishesTheOpSavesAndExits130) {
  const auto out = dir_ / "camp";
  const pid_t pid = spawn(campaign_args(out));
  ASSERT_TRUE(wait_rows(pid, out / "execution_log.csv", 10));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  std::ifstream in(out / "metadata.json");
  const auto meta = nlohmann::json::parse(in);
  EXPECT_EQ(meta["status"], "interrupted");
  EXPECT_FALSE(read_log((out / "execution_log.csv").string()).torn_tail);  // flushed whole lines
  EXPECT_TRUE(fs::exists(out / "trace.json"));
  EXPECT_EQ(wait_exit(spawn({"profile", "--resume", out.string(), "--drift", "0", "--temp-interval", "0"})), 0);
  expect_complete_once(out);
}

TEST_F(ProfileCli, BadInputExits2BeforeMeasuring) {
  const auto out = dir_ / "bad";
  EXPECT_EQ(wait_exit(spawn({"profile", "--backend", "host", "--gpus", "0,64", "--out", out.string()})), 2);
  EXPECT_EQ(wait_exit(spawn({"profile", "--backend", "host", "--sizes", "1XB", "--out", out.string()})), 2);
  EXPECT_EQ(wait_exit(spawn({"profile", "--resume", dir_.string() + "/missing"})), 2);
  EXPECT_EQ(wait_exit(spawn({"profile", "--backend", "host", "--thermal-warmup", "warm", "--out", out.string()})), 2);
  EXPECT_FALSE(fs::exists(out / "execution_log.csv"));
}
