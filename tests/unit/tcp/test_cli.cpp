// The built binary end to end: `bench tcp --loopback` JSON, exit codes for bad input.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>
#include "support/shell.hpp"

namespace {

using CliRun = p2pscope::test::ShellResult;

CliRun run(const std::string& args) {
  return p2pscope::test::run_shell("timeout 60 " + std::string(P2PSCOPE_BINARY) + " " + args + " 2>&1");
}

class TcpCli : public ::testing::Test {
  void SetUp() override {
    if (!std::filesystem::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (make build)";
  }
};

}  // namespace

TEST_F(TcpCli, LoopbackJsonCarriesBothSidesAndMetadata) {
  const CliRun r = run("bench tcp --loopback --channels 2 --size 4M --chunk 512K --iters 2 --verify --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["params"]["channels"], 2);
  EXPECT_GT(j["server"]["rx_bytes_per_s"].get<double>(), 0);
  EXPECT_EQ(j["server"]["verified_bytes"].get<std::uint64_t>(), 3u * (4u << 20));
  EXPECT_TRUE(j["metadata"].contains("schema_version"));
}

TEST_F(TcpCli, BadInputExitsTwoWithTheReason) {
  CliRun r = run("bench tcp --loopback --channels 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--channels"), std::string::npos) << r.out;
  r = run("bench tcp --loopback --size 1M --chunk 4M");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("larger than --size"), std::string::npos) << r.out;
  r = run("bench tcp --loopback --nics nosuchnic7");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("NICs here"), std::string::npos) << r.out;
  r = run("bench tcp --loopback --tx-bind 'lo:0;eth9 3-4'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("'eth9 3-4'"), std::string::npos) << r.out;
  r = run("bench tcp --loopback --window 0");
  EXPECT_EQ(r.code, 2);
}

TEST_F(TcpCli, BindingsComeFromTheNcclVariableWhenNotGiven) {
  const CliRun r = run("bench tcp --loopback --size 1M --chunk 256K --iters 1 --format json");
  ASSERT_EQ(r.code, 0);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  int first = 0;
  while (!CPU_ISSET(first, &set)) ++first;  // CI may not allow CPU 0
  setenv("NCCL_GPUDIRECTTCPX_TX_BINDINGS", ("lo:" + std::to_string(first)).c_str(), 1);
  const CliRun b = run("bench tcp --loopback --size 1M --chunk 256K --iters 1 --format json");
  unsetenv("NCCL_GPUDIRECTTCPX_TX_BINDINGS");
  ASSERT_EQ(b.code, 0) << b.out;
  const auto j = nlohmann::json::parse(b.out);
  int tx = 0;
  for (const auto& w : j["client"]["workers"]) {
    if (w["role"] != "tx") continue;
    ++tx;
    EXPECT_EQ(w["expected_cpus"], nlohmann::json::array({first}));
    EXPECT_EQ(w["actual_cpus"], nlohmann::json::array({first}));
  }
  EXPECT_EQ(tx, 1);
}

TEST_F(TcpCli, SweepWritesCsvHeatmapAndBest) {
  const auto dir = std::filesystem::temp_directory_path() / ("p2pscope-sweep-" + std::to_string(getpid()));
  const CliRun r = run("sweep tcp --channels-list 1,2 --chunk-list 256K,512K --window-list 2 --reps 2 --size 2M --iters 2 --out " +
                    dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::FILE* f = std::fopen((dir / "sweep.csv").c_str(), "r");
  ASSERT_NE(f, nullptr);
  int lines = 0;
  for (int c; (c = std::fgetc(f)) != EOF;) lines += c == '\n';
  std::fclose(f);
  EXPECT_EQ(lines, 1 + 2 * 2 * 2);  // header + channels x chunks x reps
  EXPECT_TRUE(std::filesystem::exists(dir / "heatmap.svg"));
  EXPECT_TRUE(std::filesystem::exists(dir / "best.json"));
  std::filesystem::remove_all(dir);
}
