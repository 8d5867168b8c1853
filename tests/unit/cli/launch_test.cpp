// `bench gpu` started by a launcher (the variables torchrun/mpirun set), as real
// processes: the ranks meet, and they all end with a result or the same clear error.
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <future>

#include <gtest/gtest.h>

#include "support/run_binary.hpp"
#include "support/loopback_port.hpp"

namespace {

// The binary with launcher variables in front of it, through sh; output and exit code.
p2pscope::test::Result run_with_env(const std::string& env, const std::string& args, const std::string& wrapper = "") {
  return p2pscope::test::run_shell("env " + env + " " + wrapper + " timeout 90 " + P2PSCOPE_BINARY + " " + args + " 2>&1");
}

p2pscope::test::Result run_rank(int rank, int size, int port, const std::string& args, const std::string& wrapper = "") {
  return run_with_env("RANK=" + std::to_string(rank) + " WORLD_SIZE=" + std::to_string(size) +
                          " P2PSCOPE_RENDEZVOUS=127.0.0.1:" + std::to_string(port),
                      args, wrapper);
}

// A port free now: a fixed range can collide with ephemeral ports (32768 and up).
int test_port() { return p2pscope::test::free_port(); }

// Starts two ranks of `args`; they must meet and end together: with a result that
// rank 0 alone reports (two GPUs and NCCL), else with the same reason on both.
void expect_two_ranks_end_together(const std::string& args, int port, const std::string& result_word) {
  auto r1 = std::async(std::launch::async, [&] { return run_rank(1, 2, port, args); });
  const auto r0 = run_rank(0, 2, port, args);
  const auto one = r1.get();
  ASSERT_NE(r0.code, 124) << "rank 0 hung:\n" << r0.out;
  ASSERT_NE(one.code, 124) << "rank 1 hung:\n" << one.out;
  if (r0.code == 0) {  // two GPUs and NCCL: rank 0 reports both ranks, rank 1 is silent
    EXPECT_EQ(one.code, 0) << one.out;
    EXPECT_NE(r0.out.find("rank 1 GPU"), std::string::npos) << r0.out;
    EXPECT_NE(r0.out.find(result_word), std::string::npos) << r0.out;
    EXPECT_EQ(one.out.find(result_word), std::string::npos) << one.out;
    return;
  }
  // No GPU, one GPU for both, or no NCCL: each rank says why, naming ranks, and the
  // failure is the same on both (they met and exchanged it).
  EXPECT_NE(one.code, 0);
  if (r0.out.find("not built in") != std::string::npos) {  // a build without NCCL says so on every rank
    EXPECT_NE(one.out.find("not built in"), std::string::npos) << one.out;
    return;
  }
  ASSERT_NE(r0.out.find("rank"), std::string::npos) << r0.out;
  ASSERT_NE(one.out.find("rank"), std::string::npos) << one.out;
  const auto reason = [](const std::string& s) { return s.substr(s.find("rank")); };
  EXPECT_EQ(reason(r0.out), reason(one.out));
}

// Why a rank cannot be bound to one CPU for the test while rank 0 has several; "" when it can.
std::string no_one_cpu_binding() {
  if (std::system("taskset -c 0 true >/dev/null 2>&1") != 0) return "taskset is not available here";
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) < 2)
    return "this test process may use fewer than 2 CPUs, so rank 0 would be warned about too";
  return "";
}

}  // namespace

TEST(Launch, TwoRanksMeetAndEndTogether) {
  expect_two_ranks_end_together("bench gpu --backend nccl --sizes 1M --iters 3 --warmup 1", test_port(), "GB/s");
}

TEST(Launch, TwoRanksRunACollectiveTogether) {
  expect_two_ranks_end_together("bench nccl --op allreduce --sizes 1M --iters 3 --warmup 1", test_port(), "busbw");
}

TEST(Launch, OnlyTheNcclBackendRunsAsOneProcessPerGpu) {
  const auto r = run_rank(0, 2, test_port(), "bench gpu --backend host --sizes 1M");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("only --backend nccl runs as one process per GPU"), std::string::npos) << r.out;
}

TEST(Launch, BenchNcclUnderALauncherRefusesAGpuList) {
  const auto c = run_rank(0, 2, test_port(), "bench nccl --op allreduce --gpus 0,1");
  if (c.out.find("not built in") != std::string::npos) GTEST_SKIP() << "built without NCCL: " << c.out;
  EXPECT_EQ(c.code, 2) << c.out;
  EXPECT_NE(c.out.find("rank 0 of 2"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << c.out;
}

TEST(Launch, AMalformedRendezvousIsAUsageError) {
  const auto r = run_with_env("RANK=0 WORLD_SIZE=2 P2PSCOPE_RENDEZVOUS=somehost", "bench gpu --backend nccl");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("expected HOST:PORT"), std::string::npos) << r.out;
}

// mpirun's default binds each rank to one core, where NCCL's proxy threads starve
// (measured 12x slower over NCCL sockets): rank 0 must say so, whatever happens next.
TEST(Launch, ARankBoundToOneCpuIsWarnedAbout) {
  if (const std::string why = no_one_cpu_binding(); !why.empty()) GTEST_SKIP() << why;
  const int port = test_port();
  const std::string args = "bench gpu --backend nccl --sizes 1M --iters 1 --warmup 1";
  auto r1 = std::async(std::launch::async, [&] { return run_rank(1, 2, port, args, "taskset -c 0"); });
  const auto r0 = run_rank(0, 2, port, args);
  const auto one = r1.get();
  EXPECT_NE(r0.out.find("warning: rank 1 may run only on CPU 0"), std::string::npos) << r0.out;
  EXPECT_EQ(r0.out.find("warning: rank 0 may run"), std::string::npos) << r0.out;  // rank 0 was not bound
  EXPECT_EQ(one.out.find("warning:"), std::string::npos) << "rank 0 alone warns:\n" << one.out;
}

// mpirun passes every rank the same arguments; a hand-made launch may not. Ranks given
// other sizes would wait on each other's NCCL calls until the watchdog: both are
// refused at once, with both command lines.
TEST(Launch, RanksGivenDifferentArgumentsAreRefusedTogether) {
  const int port = test_port();
  auto r1 = std::async(std::launch::async,
                       [&] { return run_rank(1, 2, port, "bench gpu --backend nccl --sizes 2M --iters 3"); });
  const auto r0 = run_rank(0, 2, port, "bench gpu --backend nccl --sizes 1M --iters 3");
  const auto one = r1.get();
  for (const auto* r : {&r0, &one}) {
    EXPECT_EQ(r->code, 2) << r->out;
    EXPECT_NE(r->out.find("different arguments"), std::string::npos) << r->out;
    EXPECT_NE(r->out.find("--sizes 1M"), std::string::npos) << r->out;
    EXPECT_NE(r->out.find("--sizes 2M"), std::string::npos) << r->out;
  }
}

// One bring-up for every command (issue 24): profile under a launcher used to skip the
// arguments check, so ranks given other sizes met and then waited on each other's
// NCCL calls (or failed each for its own reason). Now both are refused at once.
TEST(Launch, ProfileRanksGivenDifferentArgumentsAreRefusedTogether) {
  const int port = test_port();
  const std::string out = "/tmp/p2pscope-launch-profile-" + std::to_string(::getpid());
  auto r1 = std::async(std::launch::async,
                       [&] { return run_rank(1, 2, port, "profile --sizes 2M --reps 1 --out " + out); });
  const auto r0 = run_rank(0, 2, port, "profile --sizes 1M --reps 1 --out " + out);
  const auto one = r1.get();
  std::system(("rm -rf " + out).c_str());
  for (const auto* r : {&r0, &one}) {
    EXPECT_EQ(r->code, 2) << r->out;
    EXPECT_NE(r->out.find("different arguments"), std::string::npos) << r->out;
    EXPECT_NE(r->out.find("--sizes 2M"), std::string::npos) << r->out;
  }
}

// ... and profile's ranks are warned about a rank bound to one CPU, as the benches' are.
TEST(Launch, ProfileWarnsAboutARankBoundToOneCpu) {
  if (const std::string why = no_one_cpu_binding(); !why.empty()) GTEST_SKIP() << why;
  const int port = test_port();
  const std::string out = "/tmp/p2pscope-launch-profile-cpu-" + std::to_string(::getpid());
  const std::string args = "profile --sizes 1M --reps 1 --warmup 0 --out " + out;
  auto r1 = std::async(std::launch::async, [&] { return run_rank(1, 2, port, args, "taskset -c 0"); });
  const auto r0 = run_rank(0, 2, port, args);
  r1.get();
  std::system(("rm -rf " + out).c_str());
  EXPECT_NE(r0.out.find("warning: rank 1 may run only on CPU 0"), std::string::npos) << r0.out;
}

// Commands that drive everything from one process go through the same bring-up: a
// launcher environment set only in part is the same clear error there (it used to be
// ignored, and each of N ranks ran its own sweep into one directory), and a real
// launch of several ranks is refused, naming the command.
TEST(Launch, SweepTcpReadsTheLauncherEnvironmentLikeEveryCommand) {
  const std::string out = "/tmp/p2pscope-launch-sweep-" + std::to_string(::getpid());
  const std::string sweep = "sweep tcp --channels-list 1 --chunk-list 256K --window-list 2 --reps 1 --size 1M --out " + out;
  const auto partial = run_with_env("OMPI_COMM_WORLD_SIZE=2", sweep);
  EXPECT_EQ(partial.code, 2) << partial.out;
  EXPECT_NE(partial.out.find("OMPI_COMM_WORLD_SIZE=2 but no OMPI_COMM_WORLD_RANK"), std::string::npos) << partial.out;
  const auto ranks = run_rank(0, 2, test_port(), sweep);
  EXPECT_EQ(ranks.code, 2) << ranks.out;
  EXPECT_NE(ranks.out.find("`sweep tcp` runs as one process"), std::string::npos) << ranks.out;
  EXPECT_FALSE(std::filesystem::exists(out + "/sweep.csv")) << "refused before anything was measured";
  std::system(("rm -rf " + out).c_str());
}

// predict --measure runs NCCL over the campaign's GPUs from one process: N ranks would
// each run it on the same GPUs at once. Without --measure nothing runs, nothing is refused.
TEST(Launch, PredictMeasureUnderALauncherIsRefused) {
  const std::string dir = std::string(P2PSCOPE_FIXTURES_DIR) + "/links/uniform4";
  const auto measure = run_rank(0, 2, test_port(), "predict " + dir + " --ops allreduce --sizes 1M --measure");
  EXPECT_EQ(measure.code, 2) << measure.out;
  EXPECT_NE(measure.out.find("`predict --measure` runs as one process"), std::string::npos) << measure.out;
  const auto plain = run_rank(0, 2, test_port(), "predict " + dir + " --ops allreduce --sizes 1M");
  EXPECT_EQ(plain.code, 0) << plain.out;
}
