// `sweep tcp` ended early keeps every point measured: sweep.csv (rewritten after each
// run), heatmap.svg and best.json (with `stopped`), for Ctrl-C (exit 130) and for a
// server that dies mid-sweep (exit 1, the error named). Real processes over loopback.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/child.hpp"
#include "support/loopback_port.hpp"

namespace fs = std::filesystem;
using p2pscope::test::spawn;
using p2pscope::test::data_lines;
using p2pscope::test::wait_exit;
using p2pscope::test::wait_rows;

namespace {

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

struct SweepStop : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("p2pscope-sweep-stop-" + std::to_string(::getpid()));
  void SetUp() override { fs::remove_all(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

}  // namespace

TEST_F(SweepStop, CtrlCWritesThePointsMeasuredAndExits130) {
  // 4 x 4 x 4 points x 2 reps of 4 MiB: far longer than the 2 runs waited for.
  const pid_t pid = spawn({"sweep", "tcp", "--out", dir.string(), "--size", "4M", "--reps", "2", "--channels-list",
                           "1,2,3,4", "--chunk-list", "64K,128K,256K,512K", "--window-list", "1,2,4,8"});
  ASSERT_TRUE(wait_rows(pid, dir / "sweep.csv", 2)) << "the sweep ended before it could be interrupted";
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  const auto best = read_json(dir / "best.json");
  EXPECT_EQ(best["points_planned"], 64);
  EXPECT_LT(best["points"].get<int>(), 64);
  EXPECT_EQ(best.value("stopped", "").rfind("interrupted before channels", 0), 0u) << best.dump();
  // Every run in the CSV belongs to a point best.json counted.
  EXPECT_GE(data_lines(dir / "sweep.csv"), 2u);
  EXPECT_LE(data_lines(dir / "sweep.csv"), 2u * best["points"].get<std::size_t>());
  EXPECT_TRUE(fs::exists(dir / "heatmap.svg"));
}

TEST_F(SweepStop, AServerThatDiesKeepsThePointsMeasuredAndNamesTheError) {
  const std::string port = std::to_string(p2pscope::test::free_port());
  const pid_t server = spawn({"bench", "tcp", "--server", "--bind", "127.0.0.1", "--port", port, "--sessions", "0"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // listening
  const pid_t sweep = spawn({"sweep", "tcp", "--client", "127.0.0.1", "--port", port, "--out", dir.string(), "--size",
                             "4M", "--reps", "2", "--channels-list", "1,2,3,4", "--chunk-list", "64K,128K,256K,512K",
                             "--window-list", "1,2,4,8", "--timeout", "3"});
  const bool measured = wait_rows(sweep, dir / "sweep.csv", 2);
  kill(server, SIGKILL);
  wait_exit(server);
  ASSERT_TRUE(measured) << "the sweep ended before the server was killed";
  EXPECT_EQ(wait_exit(sweep), 1);
  const auto best = read_json(dir / "best.json");
  EXPECT_EQ(best.value("stopped", "").rfind("stopped at channels", 0), 0u) << best.dump();
  EXPECT_GE(best["points"].get<int>(), 1);
}
