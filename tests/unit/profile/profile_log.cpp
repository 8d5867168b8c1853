// execution_log.csv round trip, torn lines, drift fit, trace naming.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "p2pscope/error.hpp"
#include "profile/drift.hpp"
#include "profile/execution_log.hpp"
#include "profile/trace.hpp"
#include "support/files.hpp"

using namespace p2pscope;
using namespace p2pscope::profile;
namespace fs = std::filesystem;

namespace {
fs::path temp_dir(const std::string& name) { return test::fresh_temp_dir("p2pscope-test", name); }
using test::slurp;
}  // namespace

TEST(ProfileLog, RoundTripsRowsWithAndWithoutDeviceTimes) {
  const auto dir = temp_dir("log");
  const std::string path = (dir / "execution_log.csv").string();
  {
    LogWriter w(path, 0);
    w.append({3, 0, 1, 1024, 0, "host", 100, 250, 150, NAN, -1, -1});
    w.append({7, 1, 0, 1u << 30, 2, "ce", 1000, 3000, 2000, 1875.5, 1700000000000000000LL, 1700000000000001875LL});
  }
  const std::string text = slurp(path);
  EXPECT_EQ(text.substr(0, text.find('\n')), kLogHeader);
  // The checksum of the rest of the row comes last (profile_log_checks.cpp tests it).
  EXPECT_NE(text.find("\n3,0,1,1024,0,host,100,250,150,,,,1,single,150.00,"), std::string::npos) << text;
  const auto back = read_log(path);
  ASSERT_EQ(back.rows.size(), 2u);
  EXPECT_FALSE(back.torn_tail);
  EXPECT_TRUE(std::isnan(back.rows[0].gpu_duration_ns));
  EXPECT_EQ(back.rows[0].gpu_ts_start_ns, -1);
  EXPECT_EQ(back.rows[1].size_bytes, 1u << 30);
  EXPECT_DOUBLE_EQ(back.rows[1].gpu_duration_ns, 1875.5);
  EXPECT_EQ(back.rows[1].gpu_ts_end_ns, 1700000000000001875LL);
  fs::remove_all(dir);
}

TEST(ProfileLog, ABatchedRowKeepsItsBatchAndPerTransferTime) {
  const auto dir = temp_dir("batch");
  const std::string path = (dir / "execution_log.csv").string();
  {
    LogWriter w(path, 0);
    w.append({4, 1, 0, 8, 1, "staged", 1000, 60000, 59000, 50000, 10, 50010, 25, "batch"});
  }
  const std::string text = slurp(path);
  EXPECT_NE(text.find(",25,batch,2000.00,"), std::string::npos) << text;  // 50000 ns of GPU time / 25
  const auto back = read_log(path);
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_FALSE(back.legacy);
  EXPECT_EQ(back.rows[0].batch, 25);
  EXPECT_EQ(back.rows[0].timing, "batch");
  EXPECT_DOUBLE_EQ(back.rows[0].per_transfer_ns(), 2000.0);
  fs::remove_all(dir);
}

TEST(ProfileLog, ALogOfBeforeBatchTimingIsReadAsSingleOps) {
  const auto dir = temp_dir("legacy");
  const auto path = dir / "execution_log.csv";
  std::ofstream(path) << kLogHeaderV1 << "\n0,0,1,8,0,ce,100,300,200,150.0,,\n";
  const auto back = read_log(path.string());
  EXPECT_TRUE(back.legacy);
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_EQ(back.rows[0].batch, 1);
  EXPECT_DOUBLE_EQ(back.rows[0].per_transfer_ns(), 150.0);
  // A row of the new width under the old header is garbage, not a row.
  std::ofstream(path, std::ios::app) << "1,0,1,8,0,ce,100,300,200,150.0,,,3,batch,50.00\n";
  EXPECT_EQ(read_log(path.string()).rows.size(), 1u);
  fs::remove_all(dir);
}

TEST(ProfileLog, TornLastLineIsDroppedAndAppendStartsClean) {
  const auto dir = temp_dir("torn");
  const std::string path = (dir / "execution_log.csv").string();
  {
    LogWriter w(path, 0);
    w.append({0, 0, 1, 8, 0, "host", 1, 2, 1, NAN, -1, -1});
  }
  { std::ofstream(path, std::ios::app) << "1,0,1,16,0,ho"; }  // killed mid-write
  auto back = read_log(path);
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_TRUE(back.torn_tail);
  {
    LogWriter w(path, back.good_bytes);
    w.append({1, 0, 1, 16, 0, "host", 3, 5, 2, NAN, -1, -1});
  }
  back = read_log(path);
  ASSERT_EQ(back.rows.size(), 2u);
  EXPECT_FALSE(back.torn_tail);
  EXPECT_EQ(back.rows[1].config_id, 1);
  EXPECT_EQ(back.rows[1].duration_ns, 2);
  fs::remove_all(dir);
}

TEST(ProfileLog, AFileThatIsNotALogIsRefused) {
  const auto dir = temp_dir("notlog");
  const auto path = dir / "execution_log.csv";
  std::ofstream(path) << "a,b,c\n1,2,3\n";
  EXPECT_THROW(read_log(path.string()), Error);
  EXPECT_THROW(read_log((dir / "missing.csv").string()), Error);
  fs::remove_all(dir);
}

TEST(ProfileDrift, FitRecoversPpmAndOffset) {
  // Device runs 3 ppm fast and 5 ms ahead, at a GPU-global-timer-sized epoch.
  std::vector<TimerPoint> pts;
  const std::int64_t host0 = 1'000'000'000'000, dev0 = 1'700'000'000'000'000'000;
  for (int i = 0; i < 200; ++i) {
    const std::int64_t h = host0 + i * 50'000'000LL;  // 10 s
    const std::int64_t d = dev0 + 5'000'000 + static_cast<std::int64_t>(std::llround((h - host0) * (1 + 3e-6)));
    pts.push_back({h, d, 2000 + (i % 7) * 10});
  }
  pts.push_back({host0 + 123, dev0 + 999'999'999, 900'000});  // a preempted read: dropped
  const DriftFit f = fit_timer_points(pts);
  ASSERT_TRUE(f.ok);
  EXPECT_EQ(f.points, 200u);
  EXPECT_NEAR(f.ppm(), 3.0, 0.01);
  EXPECT_NEAR(f.host_of_device(dev0 + 5'000'000), static_cast<double>(host0), 2.0);
  EXPECT_LT(f.residual_max_ns, 2.0);
  const DriftFit o = fit_timer_points(pts, true);
  EXPECT_DOUBLE_EQ(o.slope, 1.0);
}

TEST(ProfileTrace, EventsNamedAndMappedOntoTracks) {
  const Plan plan = make_plan({"ce"}, {0, 1}, {8, 1024}, 42, 0, 1);
  std::vector<LogRow> rows = {
      {1, 0, 1, 1024, 0, "ce", 10'000, 12'000, 2'000, 1500, 500'000, 501'500},
      {2, 1, 0, 8, 0, "ce", 20'000, 21'000, 1'000, NAN, -1, -1},
  };
  DriftFit fit;  // device = host + 490000 exactly
  fit.ok = true;
  fit.host_ref_ns = 0;
  fit.device_ref_ns = 490'000;
  const auto t = make_trace(plan, rows, {{0, ClockMap::one_line(fit)}}, [](int src, int) { return src; }, {}, 3'000);
  int host = 0, gpu = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["tid"] == 0) {
      ++host;
    } else {
      ++gpu;
      EXPECT_EQ(e["name"], "p2p_cfg0001_s0d1_sz1024_r0");
      EXPECT_EQ(e["tid"], 1);
      EXPECT_NEAR(e["ts"].get<double>(), 0.0, 1e-9);  // 500000-490000 = 10000 = origin
      EXPECT_NEAR(e["dur"].get<double>(), 1.5, 1e-9);
      EXPECT_EQ(e["args"]["stamp_error_ns"], 3'000.0) << "a single-timing stamp says how far it may be off";
    }
  }
  EXPECT_EQ(host, 2);
  EXPECT_EQ(gpu, 1);
  EXPECT_EQ(t["otherData"]["host_origin_ns"], 10'000);
}

// A full disk is said as such, with the command that continues (it was blamed on a
// kill). /dev/full answers every write with ENOSPC.
TEST(ProfileLog, AFullDiskIsNamedWithTheResumeCommand) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full here";
  LogWriter w("/dev/full", 0);
  try {
    w.append({1, 0, 1, 16, 0, "host", 1, 2, 1, NAN, -1, -1});
    ADD_FAILURE() << "a write to a full disk succeeded";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the disk is full"), std::string::npos) << m;
    EXPECT_NE(m.find("p2pscope profile --resume"), std::string::npos) << m;
  }
}
