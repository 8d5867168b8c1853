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
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "p2pscope/profile.hpp"
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

// --processes 2 and Ctrl-C: the parent says "SIGINT received" once and forwards the signal;
// the child stops quietly (both used to print it), and the campaign exits 130.
TEST_F(ProfileCli, SigintToASplitCampaignIsAnnouncedOnce) {
  const auto out = dir_ / "camp";
  fs::create_directories(dir_);
  const auto err = dir_ / "err.txt";
  auto args = campaign_args(out);
  args.insert(args.end(), {"--processes", "2"});
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(P2PSCOPE_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (!freopen("/dev/null", "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    execv(P2PSCOPE_BINARY, argv.data());
    _exit(127);
  }
  ASSERT_TRUE(wait_rows(pid, out / "execution_log.csv", 10));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  const std::string text = p2pscope::test::slurp(err);
  std::size_t n = 0;
  for (std::size_t at = text.find("SIGINT received"); at != std::string::npos; at = text.find("SIGINT received", at + 1))
    ++n;
  EXPECT_EQ(n, 1u) << text;
}

TEST_F(ProfileCli, BadInputExits2BeforeMeasuring) {
  const auto out = dir_ / "bad";
  EXPECT_EQ(wait_exit(spawn({"profile", "--backend", "host", "--gpus", "0,64", "--out", out.string()})), 2);
  EXPECT_EQ(wait_exit(spawn({"profile", "--backend", "host", "--sizes", "1XB", "--out", out.string()})), 2);
  EXPECT_EQ(wait_exit(spawn({"profile", "--resume", dir_.string() + "/missing"})), 2);
  EXPECT_EQ(wait_exit(spawn({"profile", "--backend", "host", "--thermal-warmup", "warm", "--out", out.string()})), 2);
  EXPECT_FALSE(fs::exists(out / "execution_log.csv"));
}

namespace {

std::vector<std::string> split_args(const fs::path& out, const std::string& processes) {
  return {"profile", "--backend", "host", "--gpus", "0-1", "--sizes", "1K,64K", "--reps", "7", "--warmup", "1",
          "--drift", "0", "--temp-interval", "0", "--thermal-warmup", "off", "--processes", processes, "--out", out.string()};
}

nlohmann::json metadata_of(const fs::path& dir) {
  std::ifstream in(dir / "metadata.json");
  return nlohmann::json::parse(in);
}

}  // namespace

// --processes 3: three child processes, one after the other, each measured its own block
// of repetitions (2, 2 and 3 of 7) and nothing else, into the one log.
TEST_F(ProfileCli, ProcessesEachRanTheirShareOfTheRepetitions) {
  const auto out = dir_ / "k3";
  ASSERT_EQ(wait_exit(spawn(split_args(out, "3"))), 0);
  const auto meta = metadata_of(out);
  EXPECT_EQ(meta["status"], "complete");
  EXPECT_EQ(meta["settings"]["processes"], 3);
  ASSERT_EQ(meta["sessions"].size(), 3u);
  std::set<int> pids;
  for (int i = 0; i < 3; ++i) {
    const auto& s = meta["sessions"][static_cast<std::size_t>(i)];
    EXPECT_EQ(s["process"]["share"], i);
    EXPECT_EQ(s["process"]["of"], 3);
    const auto [a, b] = share_repetitions(7, 3, i);
    EXPECT_EQ(s["process"]["repetitions"], nlohmann::json({a, b}));
    EXPECT_EQ(s["ops_this_session"], 4 * (b - a)) << "4 configs x its repetitions";
    pids.insert(s["process"]["pid"].get<int>());
  }
  EXPECT_EQ(pids.size(), 3u) << "each share in a process of its own";
  // In the log's order: share 0's rows, then share 1's, then share 2's; each op once.
  int last = 0;
  std::set<std::pair<int, int>> seen;
  const auto rows = read_log((out / "execution_log.csv").string()).rows;
  for (const auto& r : rows) {
    const int share = process_of_repetition(r.repetition, 7, 3);
    EXPECT_GE(share, last) << "rep " << r.repetition << " logged after a later share's";
    last = share;
    EXPECT_TRUE(seen.insert({r.config_id, r.repetition}).second);
  }
  EXPECT_EQ(rows.size(), 28u);
}

// A resume of a split campaign runs only the share that misses rows, in its own process,
// and keeps the campaign's K; another K is refused.
TEST_F(ProfileCli, ResumeOfASplitCampaignRunsOnlyTheMissingShare) {
  const auto out = dir_ / "k3";
  ASSERT_EQ(wait_exit(spawn(split_args(out, "3"))), 0);
  // drop share 1's rows (repetitions 2 and 3), as if its process had been killed
  const auto log = out / "execution_log.csv";
  std::string kept = std::string(kLogHeader) + "\n";
  for (const auto& r : read_log(log.string()).rows)
    if (process_of_repetition(r.repetition, 7, 3) != 1) kept += format_log_row(r) + "\n";
  std::ofstream(log, std::ios::trunc) << kept;
  EXPECT_EQ(wait_exit(spawn({"profile", "--resume", out.string(), "--processes", "1"})), 2);
  ASSERT_EQ(wait_exit(spawn({"profile", "--resume", out.string(), "--temp-interval", "0"})), 0);
  const auto meta = metadata_of(out);
  ASSERT_EQ(meta["sessions"].size(), 4u);
  EXPECT_EQ(meta["sessions"][3]["process"]["share"], 1);
  EXPECT_EQ(meta["sessions"][3]["ops_this_session"], 8);
  EXPECT_EQ(meta["status"], "complete");
  EXPECT_EQ(read_log(log.string()).rows.size(), 28u);
}

TEST_F(ProfileCli, ProcessesBadInputExits2) {
  const auto out = dir_ / "bad";
  auto args = split_args(out, "8");  // 8 processes for 7 repetitions
  EXPECT_EQ(wait_exit(spawn(args)), 2);
  EXPECT_EQ(wait_exit(spawn(split_args(out, "-1"))), 2);
  EXPECT_FALSE(fs::exists(out / "execution_log.csv"));
}
