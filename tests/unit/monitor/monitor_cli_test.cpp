// `--monitor` on the commands, end to end through the built binary: a loopback
// `bench tcp --monitor` must show lo's counters moving by at least the bytes the
// engine reports sent, and the workers' CPU time as busy CPUs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include "support/shell.hpp"

namespace fs = std::filesystem;

namespace {
// Runs a shell command line; stdout captured (the tests send stderr to a file beside it).
using p2pscope::test::run_shell;

using p2pscope::test::slurp;

fs::path temp_dir(const std::string& tag) {
  const auto d = fs::temp_directory_path() / ("p2ps-moncli-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

class MonitorFlag : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (make build)";
    if (!fs::exists("/sys/class/net/lo/statistics/rx_bytes")) GTEST_SKIP() << "no /sys/class/net/lo here";
  }
};
}  // namespace

TEST_F(MonitorFlag, LoopbackBenchTcpShowsLoBytesAndBusyCpus) {
  const auto dir = temp_dir("bench");
  const p2pscope::test::ShellResult r = run_shell(std::string(P2PSCOPE_BINARY) +
                    " bench tcp --loopback --size 256M --iters 4 --warmup 1 --format json --monitor"
                    " --monitor-interval 50ms --monitor-dir " + dir.string() + " 2>" + (dir / "stderr").string());
  ASSERT_EQ(r.code, 0) << r.out << slurp(dir / "stderr");
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("monitor")) << r.out;
  const auto& m = j["monitor"];
  EXPECT_GE(m["samples"].get<int>(), 2);
  EXPECT_EQ(m["csv"], (dir / "monitor.csv").string());

  // Each round lasts ~0.1-0.3 s (256 MiB through ring buffers on loopback): a worker
  // thread lives through several 50 ms samples, so its CPU time is seen.
  // Bytes the client's channels sent in the timed rounds (warmup comes on top).
  std::uint64_t sent = 0;
  for (const auto& c : j["client"]["channels"])
    if (c["sent"].get<bool>()) sent += c["bytes"].get<std::uint64_t>();
  ASSERT_GE(sent, 4u * (256u << 20));
  bool saw_lo = false;
  for (const auto& n : m["nics"])
    if (n["name"] == "lo") {
      saw_lo = true;
      EXPECT_GE(n["totals"]["rx_bytes"].get<std::uint64_t>(), sent);
      EXPECT_GE(n["totals"]["tx_bytes"].get<std::uint64_t>(), sent);
    }
  EXPECT_TRUE(saw_lo) << m["nics"].dump();

  // The workers' CPU time shows as busy CPUs: the busiest CPUs' busy CPU-seconds
  // cover (most of) it. 10 ms ticks and the top-8 cut leave room, hence 0.5.
  double worker_cpu_s = 0;
  for (const char* side : {"client", "server"})
    for (const auto& w : j[side]["workers"]) worker_cpu_s += w["cpu_time_s"].get<double>();
  double busy_cpu_s = 0;
  ASSERT_FALSE(m["busiest_cpus"].empty());
  for (const auto& c : m["busiest_cpus"]) busy_cpu_s += c["busy_pct"].get<double>() / 100 * m["duration_s"].get<double>();
  EXPECT_GT(worker_cpu_s, 0);
  EXPECT_GE(busy_cpu_s, 0.5 * worker_cpu_s) << m["busiest_cpus"].dump();
  // The process's threads were sampled, with CPU time and where they last ran.
  double thread_cpu_s = 0;
  for (const auto& t : m["threads"]) {
    thread_cpu_s += t["cpu_s"].get<double>();
    EXPECT_GE(t["last_cpu"].get<int>(), 0);
  }
  EXPECT_GT(thread_cpu_s, 0);

  // The same summary lands beside monitor.csv; verdicts/tally go to stderr in json mode.
  const auto side = nlohmann::json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(side["monitor"]["samples"], m["samples"]);
  EXPECT_NE(slurp(dir / "stderr").find("monitor: "), std::string::npos);
  EXPECT_NE(slurp(dir / "monitor.csv").find(",nic:lo,rx_bytes_per_s,"), std::string::npos);
  fs::remove_all(dir);
}

TEST_F(MonitorFlag, TextOutputEndsWithMonitorLinesAndBadIntervalIsUsage) {
  const auto dir = temp_dir("text");
  const std::string bin = P2PSCOPE_BINARY;
  p2pscope::test::ShellResult r = run_shell(bin + " bench tcp --loopback --size 4M --iters 2 --monitor --monitor-interval 100ms --monitor-dir " +
              dir.string() + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("monitor: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples over"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir / "monitor.csv"));
  // A bad interval is refused before anything runs (exit 2), and no CSV appears.
  const auto dir2 = dir / "never";
  r = run_shell(bin + " bench tcp --loopback --monitor --monitor-interval 1ms --monitor-dir " + dir2.string() + " 2>&1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--monitor-interval"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir2));
  fs::remove_all(dir);
}

TEST_F(MonitorFlag, SweepTcpPutsMonitorInBestJson) {
  const auto dir = temp_dir("sweep");
  const p2pscope::test::ShellResult r = run_shell(std::string(P2PSCOPE_BINARY) +
                    " sweep tcp --channels-list 1 --chunk-list 1M --window-list 2 --reps 1 --size 8M --iters 2 --monitor"
                    " --monitor-interval 100ms --out " + dir.string() + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto best = nlohmann::json::parse(slurp(dir / "best.json"));
  ASSERT_TRUE(best.contains("monitor"));
  EXPECT_GE(best["monitor"]["samples"].get<int>(), 2);
  EXPECT_EQ(best["monitor"]["csv"], (dir / "monitor.csv").string());
  EXPECT_TRUE(fs::exists(dir / "monitor.csv"));
  EXPECT_NE(r.out.find("monitor: "), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST_F(MonitorFlag, ProfileHostCampaignMovesMonitorIntoItsDirectory) {
  const auto root = temp_dir("profile");
  const p2pscope::test::ShellResult r = run_shell(std::string(P2PSCOPE_BINARY) +
                    " profile --backend host --gpus 0-1 --sizes 4K,64K --reps 2 --warmup 1 --drift 0"
                    " --thermal-warmup off --temp-interval 0 --monitor --monitor-interval 100ms --out-root " +
                    root.string() + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  // The campaign directory is named by the campaign; the monitor moved into it.
  fs::path campaign;
  for (const auto& e : fs::directory_iterator(root))
    if (e.path().filename().string().rfind("profile-", 0) == 0) campaign = e.path();
  ASSERT_FALSE(campaign.empty()) << r.out;
  EXPECT_TRUE(fs::exists(campaign / "monitor.csv")) << r.out;
  const auto s = nlohmann::json::parse(slurp(campaign / "monitor_summary.json"));
  EXPECT_EQ(s["csv"], (campaign / "monitor.csv").string());
  for (const auto& e : fs::directory_iterator(root))  // the staging directory is gone
    EXPECT_NE(e.path().filename().string().rfind("monitor-", 0), 0u) << e.path();
  EXPECT_NE(r.out.find("monitor: "), std::string::npos) << r.out;
  fs::remove_all(root);
}
