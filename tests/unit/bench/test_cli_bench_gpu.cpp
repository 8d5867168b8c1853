// `p2pscope bench gpu` end to end with the host backend (no GPU needed): JSON with
// metadata and topology, the matrix for one size, the rows of a sweep, every pattern
// with data checks, --out DIR, and exit 2 with a reason on bad input. Plus the sweep
// library pieces (pairs, modes, tables) directly.
#include <algorithm>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/sweep.hpp"
#include "p2pscope/error.hpp"
#include "support/run_binary.hpp"

using namespace p2pscope;
using namespace p2pscope::bench;

namespace {

using CliRun = p2pscope::test::SplitResult;
using p2pscope::test::run_binary_split;

// stdout and stderr apart, so JSON on stdout parses.
CliRun run(const std::string& args, const std::string& env = "") { return run_binary_split(args, env); }

class BenchGpuCli : public ::testing::Test {
  void SetUp() override {
    if (!std::filesystem::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (make build)";
  }
};

const char* kHost = "bench gpu --backend host --warmup 1 --iters 3";

}  // namespace

TEST_F(BenchGpuCli, UnidirectionalJsonHasSamplesChecksMetadataAndTopology) {
  const CliRun r = run(std::string(kHost) + " --pairs 0:1,1:0 --sizes 1M --format json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["backend"], "host");
  EXPECT_EQ(j["pattern"], "unidirectional");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_TRUE(j["data_ok"].get<bool>());
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["size_bytes"], 1u << 20);
    EXPECT_EQ(row["check"], "ok");
    EXPECT_EQ(row["samples_ns"].size(), 3u);
    EXPECT_EQ(row["time_ns"]["n"], 3);
    const double median = row["time_ns"]["median"];
    EXPECT_GT(median, 0);
    EXPECT_NEAR(row["algbw_GBps"].get<double>(), (1 << 20) / median, 1e-9);
    EXPECT_LE(row["time_ns"]["p5"].get<double>(), median);
  }
  EXPECT_EQ(j["rows"][0]["src"], 0);
  EXPECT_EQ(j["rows"][1]["src"], 1);
  EXPECT_TRUE(j["metadata"].contains("argv"));
  EXPECT_TRUE(j["metadata"].contains("versions"));
  EXPECT_TRUE(j["topology"].is_object());
  EXPECT_EQ(j["matrix"]["size_bytes"], 1u << 20);
  EXPECT_EQ(j["matrix"]["unit"], "GB/s");
}

TEST_F(BenchGpuCli, OneSizeGivesAMatrixWithEveryPairMeasured) {
  const CliRun r = run(std::string(kHost) + " --sizes 256K");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("row = source, column = destination"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("src\\dst"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("BAD"), std::string::npos) << r.out;
  // Every directed pair of the (at least 2) host devices has a row with a check.
  std::size_t oks = 0;
  for (std::size_t p = r.out.find(" ok"); p != std::string::npos; p = r.out.find(" ok", p + 1)) ++oks;
  EXPECT_GE(oks, 2u) << r.out;
}

TEST_F(BenchGpuCli, SweepCsvHasOneRowPerSizeInOrder) {
  const CliRun r = run(std::string(kHost) + " --pairs 1:0 --sizes 4K:64K --format csv");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::istringstream s(r.out);
  std::string line;
  std::getline(s, line);
  EXPECT_NE(line.find("algbw_GBps"), std::string::npos) << line;
  EXPECT_NE(line.find("p95_us"), std::string::npos) << line;
  std::vector<std::string> lines;
  while (std::getline(s, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << r.out;  // 4K 8K 16K 32K 64K
  EXPECT_EQ(lines[0].rfind("1,0,4K,4096,", 0), 0u) << lines[0];
  EXPECT_EQ(lines[4].rfind("1,0,64K,65536,", 0), 0u) << lines[4];
  for (const auto& l : lines) EXPECT_EQ(l.substr(l.size() - 2), "ok") << l;
}

TEST_F(BenchGpuCli, BidirectionalTotalIsNeverFasterThanEitherDirection) {
  const CliRun r = run(std::string(kHost) + " --pattern bidir --pairs 0:1 --sizes 2M --format json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  EXPECT_EQ(row["check"], "ok");
  const double fwd = row["time_ns"]["median"], rev = row["reverse_time_ns"]["median"], tot = row["total_time_ns"]["median"];
  EXPECT_GE(tot, fwd);
  EXPECT_GE(tot, rev);
  EXPECT_NEAR(row["total_GBps"].get<double>(), 2.0 * (2 << 20) / tot, 1e-9);
}

TEST_F(BenchGpuCli, LatencyAndBlockingPatternsRunWithChecks) {
  CliRun r = run(std::string(kHost) + " --pattern latency --pairs 0:1 --format json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto row = nlohmann::json::parse(r.out)["rows"][0];
  EXPECT_EQ(row["size_bytes"], 8) << "latency defaults to 8 bytes";
  EXPECT_GT(row["one_way_us"].get<double>(), 0);
  EXPECT_LT(row["one_way_us"].get<double>(), 1e5);
  EXPECT_EQ(row["check"], "ok");
  r = run(std::string(kHost) + " --pattern blocking --pairs 1:0 --sizes 1,64K --format json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_GT(j["rows"][1]["host_us"].get<double>(), 0);
  EXPECT_EQ(j["rows"][1]["check"], "ok");
  EXPECT_TRUE(j["rows"][1]["device_time_ns"].is_null()) << "the host backend has no device clock";
}

TEST_F(BenchGpuCli, OutDirectoryGetsADatedFile) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("p2pscope_out_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const CliRun r = run(std::string(kHost) + " --pairs 0:1 --sizes 64K --format json --out " + dir.string() + "/");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".json");
    EXPECT_EQ(e.path().filename().string().rfind("bench_gpu_host_unidirectional_", 0), 0u) << e.path();
    std::ifstream f(e.path());
    EXPECT_EQ(nlohmann::json::parse(f)["rows"][0]["check"], "ok");
  }
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

TEST_F(BenchGpuCli, MonitorWritesItsCsvBesideTheOutputAndASummaryIntoTheJson) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("p2pscope_mon_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const CliRun ok = run(std::string(kHost) + " --pairs 0:1 --sizes 64K --format json --monitor --monitor-interval 50ms --out " +
                        (dir / "run.json").string());
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "monitor.csv"));
  std::ifstream f(dir / "run.json");
  const auto j = nlohmann::json::parse(f);
  ASSERT_TRUE(j.contains("monitor")) << j.dump();
  EXPECT_EQ(j["monitor"]["csv"], (dir / "monitor.csv").string());
  EXPECT_NE(ok.err.find("monitor:"), std::string::npos) << ok.err;
  EXPECT_EQ(run(std::string(kHost) + " --monitor --monitor-interval 1us").code, 2);
  std::filesystem::remove_all(dir);
}

TEST_F(BenchGpuCli, BadInputExitsTwoAndSaysWhatWasWrong) {
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"--pairs 0:99", "does not exist"},
      {"--pairs 0-1", "SRC:DST"},
      {"--pairs 0:", "SRC:DST"},
      {"--sizes 1XB", "1XB"},
      {"--sizes 1T", "choose smaller --sizes"},
      {"--pattern sideways", "unknown pattern"},
      {"--format xml", "--format"},
      {"--iters 0", "--iters"},
  };
  for (const auto& c : cases) {
    const CliRun r = run(std::string(kHost) + " " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
  // The list of devices there are comes with an unknown one.
  EXPECT_NE(run(std::string(kHost) + " --pairs 7:0").err.find("NUMA node"), std::string::npos);
  const CliRun b = run("bench gpu --backend warp-drive --sizes 1K");
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.err.find("built-in backends are host"), std::string::npos) << b.err;
}

// Variants are checked before any GPU is looked for, so CI (no GPU) sees the same
// message as a GPU machine; a build without CUDA says that instead.
TEST_F(BenchGpuCli, BackendVariantsAreCheckedBeforeLookingForAGpu) {
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"--backend ce --variant sideways", "use push (the source's copy engine)"},
      {"--backend ce-both --variant pull", "disagree"},
      {"--backend ce@0", "1-16"},
      {"--backend ce@x", "after @"},
      {"--backend sm --variant push@64", "1-32"},
      {"--backend staged --variant @2", "no variants"},
  };
  for (const auto& c : cases) {
    const CliRun r = run("bench gpu --pairs 0:0 --sizes 1M " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.out << r.err;
    const bool said = r.err.find(c.expect) != std::string::npos || r.err.find("not built in") != std::string::npos;
    EXPECT_TRUE(said) << c.args << ": " << r.err;
  }
}

// A world size without a rank is a launch gone wrong: say which variable is missing
// instead of waiting for peers (the two-rank launch itself: tests/unit/cli/launch_test.cpp).
TEST_F(BenchGpuCli, ALaunchWithoutARankIsRefusedNamingTheVariable) {
  const CliRun r = run("bench gpu --backend nccl --sizes 1K", "OMPI_COMM_WORLD_SIZE=2");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("OMPI_COMM_WORLD_SIZE=2 but no OMPI_COMM_WORLD_RANK"), std::string::npos) << r.err;
}

TEST_F(BenchGpuCli, BenchNcclRejectsUnknownOpsAndRunsOrExplainsWhyNot) {
  CliRun r = run("bench nccl --op broadcastish");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown NCCL op"), std::string::npos) << r.err;
  r = run("bench nccl --op allreduce --sizes 1M --iters 2 --warmup 1");
  if (r.code == 0) {  // a machine with NCCL and a GPU
    EXPECT_NE(r.out.find("busbw"), std::string::npos) << r.out;
  } else {
    EXPECT_TRUE(r.err.find("not built in") != std::string::npos || r.err.find("no GPU") != std::string::npos) << r.err;
  }
}

// ---- the library pieces ---------------------------------------------------------------

TEST(BenchSweep, PairsParseAndRejectJunk) {
  const auto p = parse_pairs("0:1,1:0,3:2");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[2], (std::pair<int, int>{3, 2}));
  EXPECT_EQ(parse_pairs("host:0,0:h", 4), (std::vector<std::pair<int, int>>{{4, 0}, {0, 4}}));
  EXPECT_THROW(parse_pairs("host:0"), UsageError) << "no host device outside staged";
  EXPECT_THROW(parse_pairs("0:1:2"), UsageError);
  EXPECT_THROW(parse_pairs("0:1,"), UsageError);
  EXPECT_THROW(parse_pairs("a:b"), UsageError);
  EXPECT_EQ(all_pairs(3).size(), 6u);
  EXPECT_TRUE(all_pairs(1).empty());
}

TEST(BenchSweep, ModesIncludeBlocking) {
  EXPECT_EQ(parse_mode("uni"), Mode::unidirectional);
  EXPECT_EQ(parse_mode("bidir"), Mode::bidirectional);
  EXPECT_EQ(parse_mode("latency"), Mode::latency);
  EXPECT_EQ(parse_mode("blocking"), Mode::blocking);
  EXPECT_THROW(parse_mode("sideways"), UsageError);
}

TEST(BenchSweep, MatrixShowsNaWithTheReasonAndMediansAsGBps) {
  SweepResult r;
  r.backend = "ce";
  r.device_names = {"GPU 0", "GPU 1", "GPU 2"};
  SweepRow a;
  a.src = 0, a.dst = 1, a.bytes = 1000;
  a.time_ns.n = 1, a.time_ns.median = 10;  // 1000 B in 10 ns = 100 GB/s
  SweepRow b;
  b.src = 2, b.dst = 0, b.bytes = 1000;
  b.support = {false, "no peer access"};
  r.rows = {a, b};
  const Table t = matrix_table(r, 1000).rendered();
  ASSERT_EQ(t.rows().size(), 3u);
  EXPECT_EQ(t.rows()[0][2], "100.00");
  EXPECT_EQ(t.rows()[2][1], "n/a (no peer access)");
  EXPECT_EQ(t.rows()[1][1], "-");
  const auto rows = rows_table(r).rendered();
  EXPECT_EQ(rows.rows()[1][4], "n/a (no peer access)");
  EXPECT_EQ(rows.headers()[5], "algbw_GBps");
  EXPECT_EQ(rows.rows()[0][5], "100.00") << "1000 B in 10 ns is 100 GB/s (1e9 B/s)";
  EXPECT_EQ(rows.rows()[0][4], "0.01") << "10 ns is 0.01 us";
  EXPECT_TRUE(r.data_ok());
  r.rows[0].first_bad = 4096;
  EXPECT_NE(r.first_failure().find("offset 4096"), std::string::npos) << r.first_failure();
}

// Every figure of the rows and the matrix from bytes and time, in its column's unit:
// GB/s = 1e9 bytes/s, us from ns, cv in percent, and the bidirectional total counts
// both directions' bytes over the time until both are done.
TEST(BenchSweep, RowsShowEachFigureFromBytesAndTimeInItsUnit) {
  SweepResult r;
  r.backend = "host";
  r.mode = Mode::bidirectional;
  r.device_names = {"a", "b"};
  SweepRow x;
  x.src = 0, x.dst = 1, x.bytes = 1000;
  x.time_ns.n = 1, x.time_ns.median = 10, x.time_ns.cv = 0.05;  // 1000 B in 10 ns: 100 GB/s one way
  x.reverse_time_ns.n = 1, x.reverse_time_ns.median = 20;       // 50 GB/s back
  x.total_time_ns.n = 1, x.total_time_ns.median = 25;           // 2000 B in 25 ns: 80 GB/s in all
  r.rows = {x};
  const Table t = rows_table(r).rendered();
  auto cell = [&](const std::string& head) {
    for (std::size_t i = 0; i < t.headers().size(); ++i)
      if (t.headers()[i] == head) return t.rows().at(0).at(i);
    ADD_FAILURE() << "no column " << head;
    return std::string();
  };
  EXPECT_EQ(cell("time_us"), "0.01");
  EXPECT_EQ(cell("algbw_GBps"), "100.00");
  EXPECT_EQ(cell("reverse_GBps"), "50.00");
  EXPECT_EQ(cell("total_GBps"), "80.00");
  EXPECT_EQ(cell("cv_pct"), "5.0");
  EXPECT_EQ(cell("size"), "1000");
  EXPECT_EQ(matrix_table(r, 1000).rendered().rows()[0][2], "80.00") << "the bidirectional matrix shows the total";
  r.mode = Mode::latency;
  r.rows[0].time_ns.median = 2500;
  const Table lat = rows_table(r).rendered();
  EXPECT_EQ(lat.headers()[4], "one_way_us");
  EXPECT_EQ(lat.rows()[0][4], "2.50") << "2500 ns one way is 2.50 us";
  EXPECT_EQ(matrix_table(r, 1000).rendered().rows()[0][2], "2.50");
}

TEST(BenchSweep, ABadCopyIsCaughtWithItsOffset) {
  // Verify after a partial copy through the host backend: the sweep's check names it.
  auto b = make_backend("host");
  SweepSpec s;
  s.pairs = {{0, 1}};
  s.sizes = {4096};
  s.iters = 2;
  s.warmup = 0;
  const auto r = run_sweep(*b, s);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_TRUE(r.rows[0].checked);
  EXPECT_EQ(r.rows[0].first_bad, -1);
  EXPECT_EQ(b->verify(0, 1, 4096), -1);
  EXPECT_EQ(b->verify(1, 1, 4096), 0) << "the wrong source's pattern fails at byte 0";
}

namespace {
// The host backend behind a test double: every call passes through, except what a
// double overrides (run_batch, below).
class WrapsHost : public Backend {
 public:
  WrapsHost() : inner_(make_backend("host")) {}
  BackendCaps capabilities() const override { return inner_->capabilities(); }
  int device_count() const override { return inner_->device_count(); }
  std::string device_name(int d) const override { return inner_->device_name(d); }
  PairSupport support(int s, int d) const override { return inner_->support(s, d); }
  void prepare(const std::vector<int>& devs, std::uint64_t bytes) override { inner_->prepare(devs, bytes); }
  BatchResult run_batch(const BatchSpec& s) override { return inner_->run_batch(s); }
  OpTiming run_blocking(int s, int d, std::uint64_t bytes) override { return inner_->run_blocking(s, d, bytes); }
  std::int64_t verify(int s, int d, std::uint64_t bytes) override { return inner_->verify(s, d, bytes); }

 protected:
  std::unique_ptr<Backend> inner_;
};
}  // namespace

namespace {
// The host backend, except that run_batch fails from its `fail_at`-th call on, the
// way a backend whose peer died fails; or, given `signal`, that call raises it (as
// Ctrl-C would during that row) and completes.
class FailsPartway final : public WrapsHost {
 public:
  explicit FailsPartway(int fail_at, std::atomic<bool>* signal = nullptr)
      : left_(fail_at), signal_(signal) {}
  std::string name() const override { return "fails-partway"; }
  BatchResult run_batch(const BatchSpec& s) override {
    if (--left_ < 0 && signal_) signal_->store(true);
    else if (left_ < 0) throw Error("rank 1 stopped answering");
    return inner_->run_batch(s);
  }

 private:
  int left_;
  std::atomic<bool>* signal_;
};
}  // namespace

TEST(BenchSweep, AFailurePartwayKeepsTheRowsMeasuredAndSaysWhereItStopped) {
  SweepSpec s;
  s.pairs = {{0, 1}};
  s.sizes = {4096, 8192, 16384};
  s.iters = 2;
  s.warmup = 0;
  FailsPartway two_then_fail(2);
  const auto r = run_sweep(two_then_fail, s);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].bytes, 8192u);
  EXPECT_EQ(r.rows[1].first_bad, -1) << "the rows kept were measured and checked";
  EXPECT_NE(r.stopped.find("stopped at 0 -> 1, 16 KiB: rank 1 stopped answering"), std::string::npos) << r.stopped;
  EXPECT_EQ(to_json(r).value("stopped", ""), r.stopped);
  FailsPartway fails_at_once(0);  // nothing measured: the plain error, nothing to keep
  EXPECT_THROW(run_sweep(fails_at_once, s), Error);
}

namespace {
// A row cut short: its run_batch returns the samples it took (1 of the iters asked)
// after the signal arrived, as the host backend does.
class StopsMidRow final : public WrapsHost {
 public:
  explicit StopsMidRow(std::atomic<bool>* signal) : signal_(signal) {}
  std::string name() const override { return "stops-mid-row"; }
  BatchResult run_batch(const BatchSpec& s) override {
    BatchSpec one = s;
    if (++calls_ == 2) one.iters = 1;
    BatchResult r = inner_->run_batch(one);
    if (calls_ == 2) signal_->store(true);  // arrived during the row, after its first sample
    return r;
  }

 private:
  std::atomic<bool>* signal_;
  int calls_ = 0;
};
}  // namespace

TEST(BenchSweep, ARowCutShortKeepsItsSamplesUncheckedAndSaysHowMany) {
  SweepSpec s;
  s.pairs = {{0, 1}};
  s.sizes = {4096, 8192, 16384};
  s.iters = 5;
  s.warmup = 0;
  std::atomic<bool> stop{false};
  s.stop = &stop;
  StopsMidRow b(&stop);
  const auto r = run_sweep(b, s);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_TRUE(r.rows[0].checked);
  EXPECT_EQ(r.rows[1].samples_ns.size(), 1u);
  EXPECT_FALSE(r.rows[1].checked);
  EXPECT_EQ(r.rows[1].note.rfind("interrupted: 1 of 5 samples", 0), 0u) << r.rows[1].note;
  EXPECT_EQ(r.stopped, "interrupted in 0 -> 1, 8 KiB (its 1 of 5 samples kept, unchecked): 2 of 3 rows measured");
}

namespace {
// The signal arrives after a row's last sample, before its data check (CI under ASan
// once caught a row left unchecked with no word why).
class StopsAfterRow final : public WrapsHost {
 public:
  explicit StopsAfterRow(std::atomic<bool>* signal) : signal_(signal) {}
  std::string name() const override { return "stops-after-row"; }
  BatchResult run_batch(const BatchSpec& s) override {
    BatchResult r = inner_->run_batch(s);
    if (++calls_ == 2) signal_->store(true);
    return r;
  }

 private:
  std::atomic<bool>* signal_;
  int calls_ = 0;
};
}  // namespace

TEST(BenchSweep, ARowWhoseCheckTheSignalSkippedSaysSo) {
  SweepSpec s;
  s.pairs = {{0, 1}};
  s.sizes = {4096, 8192, 16384};
  s.iters = 3;
  s.warmup = 0;
  std::atomic<bool> stop{false};
  s.stop = &stop;
  StopsAfterRow b(&stop);
  const auto r = run_sweep(b, s);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_TRUE(r.rows[0].checked);
  EXPECT_EQ(r.rows[1].samples_ns.size(), 3u);
  EXPECT_FALSE(r.rows[1].checked);
  EXPECT_EQ(r.rows[1].note.rfind("interrupted: all 3 samples taken, the data check skipped", 0), 0u) << r.rows[1].note;
}

// Ctrl-C stops the row in progress between samples (the backend sees the flag through
// BatchSpec::stop): a row with no sample yet is left out and said to be; every row
// before it is kept, checked.
TEST(BenchSweep, CtrlCStopsTheRowInProgressKeepingEveryRowBefore) {
  SweepSpec s;
  s.pairs = {{0, 1}, {1, 0}};
  s.sizes = {4096, 8192, 16384};
  s.iters = 2;
  s.warmup = 0;
  std::atomic<bool> stop{false};
  s.stop = &stop;
  FailsPartway interrupted_in_row_two(1, &stop);
  const auto r = run_sweep(interrupted_in_row_two, s);
  ASSERT_EQ(r.rows.size(), 1u) << "the row the signal arrived in had no sample: left out";
  EXPECT_EQ(r.rows[0].first_bad, -1) << "the row before it was checked";
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.stopped, "interrupted in 0 -> 1, 8 KiB (no sample yet, row left out): 1 of 6 rows measured");
  EXPECT_TRUE(r.data_ok());
  const auto j = to_json(r);
  EXPECT_TRUE(j.value("interrupted", false));
  EXPECT_EQ(j["rows"].size(), 1u);
  // A signal before the first row: nothing measured, still a result, not an exception.
  FailsPartway never(100);
  const auto none = run_sweep(never, s);
  EXPECT_TRUE(none.rows.empty());
  EXPECT_TRUE(none.interrupted);
}

namespace {
// The host backend's bidirectional batch with its times replaced: each direction alone
// `one_way` ns, both together `both` ns.
class FixedBidir final : public WrapsHost {
 public:
  FixedBidir(double one_way, double both) : one_way_(one_way), both_(both) {}
  std::string name() const override { return "fixed-bidir"; }
  BatchResult run_batch(const BatchSpec& s) override {
    BatchResult r = inner_->run_batch(s);
    std::fill(r.elapsed_ns.begin(), r.elapsed_ns.end(), one_way_);
    std::fill(r.reverse_elapsed_ns.begin(), r.reverse_elapsed_ns.end(), one_way_);
    std::fill(r.total_elapsed_ns.begin(), r.total_elapsed_ns.end(), both_);
    return r;
  }

 private:
  double one_way_, both_;
};
}  // namespace

// Both ways together slower per byte than one way alone means the directions ran one
// after the other: the row says so beside total_GBps. Overlapped directions say nothing.
TEST(BenchSweep, BidirDirectionsThatDidNotOverlapAreSaidBesideTheTotal) {
  SweepSpec s;
  s.mode = Mode::bidirectional;
  s.pairs = {{0, 1}};
  s.sizes = {1 << 20};
  s.iters = 3;
  s.warmup = 0;
  FixedBidir serial(20000, 41000);  // 20 us each way alone, 41 us both: one after the other
  const auto r = run_sweep(serial, s);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_NE(r.rows[0].note.find("did not overlap"), std::string::npos) << r.rows[0].note;
  const auto j = to_json(r)["rows"][0];
  EXPECT_NEAR(j["total_GBps"].get<double>(), 2.0 * (1 << 20) / 41000, 1e-9);  // the figure stays, explained
  EXPECT_NEAR(j["algbw_GBps"].get<double>(), (1 << 20) / 20000.0, 1e-9);
  FixedBidir overlapped(20000, 24000);
  const auto o = run_sweep(overlapped, s);
  EXPECT_EQ(o.rows[0].note.find("did not overlap"), std::string::npos) << o.rows[0].note;
}
