// MonitorSession, the RAII `--monitor` of every command: it writes monitor.csv into
// the run's directory, hands back the summary and verdicts, and a monitor that
// cannot run never throws into the run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/monitor.hpp"

using namespace p2pscope;
namespace fs = std::filesystem;

TEST(MonitorSession, WritesCsvAndReturnsSummary) {
  const auto dir = fs::temp_directory_path() / ("p2ps-mon-session-" + std::to_string(getpid())) / "run";
  fs::remove_all(dir.parent_path());
  auto open_fds = [] { return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator()); };
  monitor::SessionResult r;
  {
    const auto fds_before = open_fds();
    monitor::MonitorSession s(dir.string(), 0.05);  // creates the directory
    EXPECT_EQ(s.csv_path(), (dir / "monitor.csv").string());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_GT(open_fds(), fds_before);  // the CSV and the /proc, sysfs files kept open
    r = s.stop();
    EXPECT_EQ(s.stop().json, r.json);  // idempotent
    EXPECT_EQ(open_fds(), fds_before);  // all released by stop(), not only at destruction
  }
  ASSERT_TRUE(r.ok) << r.json.dump();
  EXPECT_GE(r.json["samples"].get<int>(), 3);  // start, >= 1 in between, end
  EXPECT_EQ(r.json["csv"], (dir / "monitor.csv").string());
  EXPECT_TRUE(r.json.contains("busiest_cpus"));
  ASSERT_FALSE(r.lines().empty());
  EXPECT_NE(r.lines().back().find("wrote " + (dir / "monitor.csv").string()), std::string::npos) << r.lines().back();
  std::ifstream in(dir / "monitor.csv");
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "time_ns,source,key,value");
  fs::remove_all(dir.parent_path());
}

TEST(MonitorSession, FailureToStartIsAResultNotAnException) {
  // A regular file where the directory should be: create_directories fails.
  const auto file = fs::temp_directory_path() / ("p2ps-mon-notadir-" + std::to_string(getpid()));
  std::ofstream(file) << "x";
  monitor::SessionResult r;
  EXPECT_NO_THROW({
    monitor::MonitorSession s((file / "sub").string(), 1.0);
    r = s.stop();
  });
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.csv_path.empty());
  EXPECT_NE(r.json.value("error", std::string()).find("cannot create"), std::string::npos) << r.json.dump();
  ASSERT_EQ(r.lines().size(), 1u);
  EXPECT_EQ(r.lines()[0].rfind("monitor: not run: cannot create", 0), 0u) << r.lines()[0];
  // A bad interval from a caller that skipped parse_monitor_interval: noted too.
  monitor::MonitorSession bad(fs::temp_directory_path().string(), 0.0);
  EXPECT_FALSE(bad.stop().ok);
  fs::remove(file);
}

TEST(MonitorSession, DestructorStopsWithoutStop) {
  const auto dir = fs::temp_directory_path() / ("p2ps-mon-dtor-" + std::to_string(getpid()));
  const auto t0 = std::chrono::steady_clock::now();
  {
    monitor::MonitorSession s(dir.string(), 10.0);  // a long interval must not delay the end
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // a few USER_HZ ticks to diff
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  std::ifstream in(dir / "monitor.csv");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find(",cpu0,idle_pct,"), std::string::npos);  // the end sample was written
  fs::remove_all(dir);
}

TEST(MonitorSession, IntervalParsing) {
  EXPECT_DOUBLE_EQ(monitor::parse_monitor_interval("1s"), 1.0);
  EXPECT_DOUBLE_EQ(monitor::parse_monitor_interval("250ms"), 0.25);
  EXPECT_THROW(monitor::parse_monitor_interval("5ms"), UsageError);
  EXPECT_THROW(monitor::parse_monitor_interval("soon"), UsageError);
  EXPECT_THROW(monitor::parse_monitor_interval("2h"), UsageError);
  EXPECT_THROW(monitor::parse_monitor_interval("1e300s"), UsageError);
  try {
    monitor::parse_monitor_interval("0", "--monitor-interval");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--monitor-interval '0'"), std::string::npos) << e.what();
  }
}
