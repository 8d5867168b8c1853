// The figures `sweep tcp` prints, pinned: each run's GB/s against the bytes it moved and
// the sweep's wall time, the best's median in best.json, the text and sweep.csv, and the
// note that the best is not ahead of the next point when their repetitions overlap.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include "support/run_binary.hpp"

namespace fs = std::filesystem;
using p2pscope::test::run_binary;
using p2pscope::test::slurp;

namespace {

struct CsvRow {
  int channels = 0;
  double gbps = 0, server_rx = 0;
};

std::vector<CsvRow> read_sweep_csv(const fs::path& p) {
  std::istringstream in(slurp(p));
  std::string line;
  std::getline(in, line);  // header, checked by the caller
  std::vector<CsvRow> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
    rows.push_back({std::stoi(f.at(0)), std::stod(f.at(5)), std::stod(f.at(7))});
  }
  return rows;
}

}  // namespace

TEST(SweepFigures, RatesAreBytesOverTimeAndTheBestIsTheMedianShown) {
  if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built";
  const fs::path dir = p2pscope::test::fresh_temp_dir("p2pscope-sweep-figures", "t", false);
  constexpr double kSize = 8 << 20, kIters = 2;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_binary("sweep tcp --out " + dir.string() +
                            " --size 8M --iters 2 --reps 3 --channels-list 1,2 --chunk-list 1M --window-list 2");
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string header = slurp(dir / "sweep.csv").substr(0, slurp(dir / "sweep.csv").find('\n'));
  EXPECT_EQ(header, "channels,chunk_bytes,window,sockets_per_channel,rep,GBps,client_tx_GBps,server_rx_GBps,"
                    "client_rx_GBps,server_tx_GBps");
  const auto rows = read_sweep_csv(dir / "sweep.csv");
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& row : rows) {
    // A point's timed rounds took less than the whole sweep: its rate is at least the
    // bytes over the sweep's wall time (a GB/s a thousand times too small fails here)...
    EXPECT_GE(row.gbps * 1e9, kSize * kIters / wall_s) << "GBps " << row.gbps << ", wall " << wall_s << " s";
    // ... and no loopback copy reaches 200 GB/s (a thousand times too large fails here).
    EXPECT_LT(row.gbps, 200) << row.gbps;
    EXPECT_DOUBLE_EQ(row.gbps, row.server_rx) << "the one-way rate is what the receiver took in";
  }
  const auto best = nlohmann::json::parse(slurp(dir / "best.json"));
  const int ch = best["best"]["channels"].get<int>();
  std::vector<double> of_best;
  for (const auto& row : rows)
    if (row.channels == ch) of_best.push_back(row.gbps);
  std::sort(of_best.begin(), of_best.end());
  ASSERT_EQ(of_best.size(), 3u);
  const double median = best["best"]["GBps_median"].get<double>();
  EXPECT_NEAR(median, of_best[1], 1e-4) << "best.json's median is the CSV's (rounded to 4 digits there)";
  EXPECT_NEAR(best["best"]["GBps_min"].get<double>(), of_best.front(), 1e-4);
  EXPECT_NEAR(best["best"]["GBps_max"].get<double>(), of_best.back(), 1e-4);
  EXPECT_NE(r.out.find(fmt::format("-> {:.3f} GB/s", median)), std::string::npos) << r.out;
  // The next point and whether the best is ahead of it beyond the noise, said either way.
  ASSERT_TRUE(best.contains("next")) << best.dump(1);
  EXPECT_NE(best["next"]["channels"].get<int>(), ch);
  const bool separable = best["next"]["GBps_max"].get<double>() < best["best"]["GBps_min"].get<double>();
  EXPECT_EQ(best["separable_from_next"].get<bool>(), separable);
  EXPECT_EQ(r.out.find("not ahead of the next point beyond the noise") != std::string::npos, !separable) << r.out;
  fs::remove_all(dir);
}
