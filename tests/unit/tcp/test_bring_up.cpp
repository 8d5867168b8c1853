// bring_up, the one launcher bring-up every command calls (issue 24): the launcher
// environment read first, the command's refusal before any rank waits, then the
// meeting, the same-arguments check and the ranks' CPUs. Ranks as threads over loopback.
#include <chrono>
#include <future>
#include <map>

#include <gtest/gtest.h>

#include "bootstrap/bring_up.hpp"
#include "p2pscope/error.hpp"
#include "support/errors.hpp"
#include "support/loopback_port.hpp"

using namespace p2pscope;
using p2pscope::test::error_of;

namespace {

std::map<std::string, std::string> rank_env(int rank, int size, std::uint16_t port) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(size)},
          {"P2PSCOPE_RENDEZVOUS", "127.0.0.1:" + std::to_string(port)}};
}

BringUpOptions options(const std::map<std::string, std::string>& env, std::vector<std::string> argv) {
  BringUpOptions o;
  o.env = p2pscope::test::env_lookup(env);
  o.argv = std::move(argv);
  o.timeout_s = 10;
  return o;
}

}  // namespace

TEST(BringUp, OneProcessMeetsNobodyAndAdmitsWithoutAsking) {
  const std::map<std::string, std::string> env;
  auto o = options(env, {"p2pscope", "sweep", "tcp"});
  bool asked = false;
  o.admit = [&](const LaunchInfo&) { asked = true; };
  const Launched l = bring_up(o);
  EXPECT_FALSE(l.multi_process());
  EXPECT_TRUE(l.reporter());
  EXPECT_EQ(l.boot, nullptr);
  EXPECT_TRUE(l.rank_cpus.empty());
  EXPECT_FALSE(asked);
}

TEST(BringUp, AHalfSetLauncherEnvironmentIsRefusedFirst) {
  const std::map<std::string, std::string> env = {{"OMPI_COMM_WORLD_SIZE", "2"}};
  auto o = options(env, {"p2pscope", "sweep", "tcp"});
  bool asked = false;
  o.admit = [&](const LaunchInfo&) { asked = true; };
  EXPECT_NE(error_of([&] { bring_up(o); }).find("OMPI_COMM_WORLD_SIZE=2 but no OMPI_COMM_WORLD_RANK"),
            std::string::npos);
  EXPECT_FALSE(asked);
}

TEST(BringUp, TheCommandsRefusalComesBeforeAnyRankWaits) {
  const auto env = rank_env(1, 2, p2pscope::test::free_port());  // rank 0 never comes
  auto o = options(env, {"p2pscope", "sweep", "tcp"});
  o.admit = one_process_only("sweep tcp");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { bring_up(o); });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << "it waited for rank 0";
  EXPECT_NE(e.find("this is rank 1 of 2 processes (torchrun)"), std::string::npos) << e;
  EXPECT_NE(e.find("`sweep tcp` runs as one process"), std::string::npos) << e;
}

TEST(BringUp, RanksMeetCheckTheirArgumentsAndGatherTheirCpus) {
  const std::uint16_t port = p2pscope::test::free_port();
  const auto e0 = rank_env(0, 2, port), e1 = rank_env(1, 2, port);
  auto r1 = std::async(std::launch::async, [&] {
    return bring_up(options(e1, {"/other/p2pscope", "profile", "--sizes", "1M"}));
  });
  const Launched l0 = bring_up(options(e0, {"p2pscope", "profile", "--sizes", "1M"}));  // argv[0] may differ
  const Launched l1 = r1.get();
  ASSERT_NE(l0.boot, nullptr);
  EXPECT_EQ(l0.boot->size(), 2);
  EXPECT_TRUE(l0.reporter());
  EXPECT_FALSE(l1.reporter());
  ASSERT_EQ(l0.rank_cpus.size(), 2u);
  EXPECT_EQ(l0.rank_cpus, l1.rank_cpus);
  EXPECT_FALSE(l0.rank_cpus[1].empty());
}

TEST(BringUp, RanksGivenOtherArgumentsAreRefusedTogether) {
  const std::uint16_t port = p2pscope::test::free_port();
  const auto e0 = rank_env(0, 2, port), e1 = rank_env(1, 2, port);
  auto r1 = std::async(std::launch::async, [&] {
    return error_of([&] { bring_up(options(e1, {"p2pscope", "profile", "--sizes", "2M"})); });
  });
  const std::string m0 = error_of([&] { bring_up(options(e0, {"p2pscope", "profile", "--sizes", "1M"})); });
  const std::string m1 = r1.get();
  EXPECT_EQ(m0, m1);
  EXPECT_NE(m0.find("rank 0 runs `profile --sizes 1M` but rank 1 runs `profile --sizes 2M`"), std::string::npos) << m0;
}
