// The multi-process bootstrap: launcher detection from the environment, and the TCP
// rendezvous with ranks as threads over loopback (meeting, collectives, refusals,
// a rank that dies, a rank 0 that never comes).
#include <chrono>
#include <future>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "support/errors.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"
#include "support/loopback_port.hpp"
#include "transport/tcp/socket.hpp"

using namespace p2pscope;
using p2pscope::test::free_port;

namespace {

LaunchInfo launch_with(const std::map<std::string, std::string>& env) {
  return detect_launch(p2pscope::test::env_lookup(env));
}

using p2pscope::test::error_of;


// Runs `body(bootstrap)` on `size` rank threads meeting at a fresh loopback port.
template <class F>
void run_ranks(int size, F body, double timeout_s = 10) {
  const std::uint16_t port = free_port();
  std::vector<std::future<void>> ranks;
  for (int r = 0; r < size; ++r)
    ranks.push_back(std::async(std::launch::async, [=] {
      auto b = make_tcp_bootstrap(r, size, "127.0.0.1", port, timeout_s);
      body(*b);
    }));
  for (auto& f : ranks) f.get();  // rethrows a rank's failure
}

}  // namespace

TEST(Launch, NoLauncherIsOneProcess) {
  const LaunchInfo li = launch_with({});
  EXPECT_EQ(li.size, 1);
  EXPECT_EQ(li.launcher, "single");
  EXPECT_FALSE(li.multi_process());
}

TEST(Launch, OpenMpiVariablesGiveRanksAndALoopbackRendezvous) {
  const LaunchInfo li = launch_with({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                     {"OMPI_MCA_ess_base_jobid", "12345"}});
  EXPECT_EQ(li.launcher, "openmpi");
  EXPECT_EQ(li.rank, 3);
  EXPECT_EQ(li.size, 4);
  EXPECT_EQ(li.local_rank, 3);
  EXPECT_EQ(li.rendezvous_host, "127.0.0.1");
  EXPECT_GE(li.rendezvous_port, 29600);
  // Every rank of the job derives the same port; another job another one.
  const LaunchInfo other_rank = launch_with({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                            {"OMPI_MCA_ess_base_jobid", "12345"}});
  const LaunchInfo other_job = launch_with({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                           {"OMPI_MCA_ess_base_jobid", "12346"}});
  EXPECT_EQ(other_rank.rendezvous_port, li.rendezvous_port);
  EXPECT_NE(other_job.rendezvous_port, li.rendezvous_port);
}

TEST(Launch, TorchrunUsesMasterAddrButNotItsPortAndTheOverrideWins) {
  const std::map<std::string, std::string> torch = {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"},
                                                    {"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29500"}};
  LaunchInfo li = launch_with(torch);
  EXPECT_EQ(li.launcher, "torchrun");
  EXPECT_EQ(li.rendezvous_host, "10.1.2.3");
  EXPECT_NE(li.rendezvous_port, 29500);  // torchrun's own store is listening there
  EXPECT_GE(li.rendezvous_port, 29600);
  auto with_override = torch;
  with_override["P2PSCOPE_RENDEZVOUS"] = "node7:4000";
  li = launch_with(with_override);
  EXPECT_EQ(li.rendezvous_host, "node7");
  EXPECT_EQ(li.rendezvous_port, 4000);
}

TEST(Launch, InconsistentLauncherValuesAreUsageErrors) {
  EXPECT_THROW(launch_with({{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}}), UsageError);
  EXPECT_NE(error_of([] { launch_with({{"WORLD_SIZE", "4"}}); }).find("no RANK"), std::string::npos);
  // A Slurm batch script (the allocation's SLURM_NTASKS, no srun step) is one process.
  EXPECT_FALSE(launch_with({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}}).multi_process());
  EXPECT_EQ(launch_with({{"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_JOB_ID", "7"}}).rank, 3);
  EXPECT_NE(error_of([] { launch_with({{"SLURM_PROCID", "x1"}, {"SLURM_STEP_NUM_TASKS", "2"}}); }).find("SLURM_PROCID='x1'"),
            std::string::npos);
  // Two hosts (2 of 4 ranks here) and no address: say which variable to set.
  EXPECT_NE(error_of([] {
              launch_with({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                           {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
            }).find("P2PSCOPE_RENDEZVOUS"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              launch_with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"P2PSCOPE_RENDEZVOUS", "host:99999"}});
            }).find("1 to 65535"),
            std::string::npos);
  EXPECT_THROW(launch_with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"P2PSCOPE_RENDEZVOUS", "nohostport"}}), UsageError);
}

TEST(TcpBootstrap, AllgatherAndBroadcastDeliverEveryRanksData) {
  run_ranks(4, [](Bootstrap& b) {
    // Rank-specific sizes, one empty and one of 1 MiB, so framing errors show.
    const std::string mine = b.rank() == 1 ? std::string() : std::string(b.rank() == 2 ? 1u << 20 : 5, char('a' + b.rank()));
    const auto all = b.allgather(mine);
    ASSERT_EQ(all.size(), 4u);
    EXPECT_EQ(all[0], std::string(5, 'a'));
    EXPECT_EQ(all[1], "");
    EXPECT_EQ(all[2].size(), 1u << 20);
    EXPECT_EQ(all[3], std::string(5, 'd'));
    EXPECT_EQ(b.broadcast(2, b.rank() == 2 ? "from two" : "ignored"), "from two");
    EXPECT_EQ(b.broadcast(0, b.rank() == 0 ? "from zero" : ""), "from zero");
    for (int i = 0; i < 100; ++i) b.barrier();
    EXPECT_TRUE(b.peers_alive());
    b.barrier();  // nobody leaves (closing its socket) before everyone has looked
  });
}

TEST(TcpBootstrap, PeersThatStartBeforeRankZeroStillMeet) {
  const std::uint16_t port = free_port();
  auto peer = std::async(std::launch::async, [=] { return make_tcp_bootstrap(1, 2, "127.0.0.1", port, 10)->allgather("p"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto root = make_tcp_bootstrap(0, 2, "127.0.0.1", port, 10);
  EXPECT_EQ(root->allgather("r")[1], "p");
  EXPECT_EQ(peer.get()[0], "r");
}

TEST(TcpBootstrap, StrangersAndWrongWorldSizesAreRefusedWithoutStoppingTheRun) {
  const std::uint16_t port = free_port();
  auto root = std::async(std::launch::async, [=] { return make_tcp_bootstrap(0, 2, "127.0.0.1", port, 10)->allgather("r"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {  // another program speaking something else
    tcp::Socket s = tcp::Socket::connect_to("127.0.0.1", port, "", 2);
    const char http[] = "GET / HTTP/1.0\r\n\r\n";
    s.send_all(http, sizeof http - 1);
  }
  // A rank that believes the run has 3 processes is told so.
  const std::string why = error_of([=] { make_tcp_bootstrap(1, 3, "127.0.0.1", port, 5); });
  EXPECT_NE(why.find("3 processes but rank 0 says 2"), std::string::npos) << why;
  // The right rank 1 still gets in.
  EXPECT_EQ(make_tcp_bootstrap(1, 2, "127.0.0.1", port, 10)->allgather("p")[0], "r");
  EXPECT_EQ(root.get()[1], "p");
}

TEST(TcpBootstrap, ARankThatDiesIsNamedByTheOthersAtOnce) {
  const std::uint16_t port = free_port();
  std::promise<void> met;
  auto dying = std::async(std::launch::async, [&] {
    auto b = make_tcp_bootstrap(1, 2, "127.0.0.1", port, 30);
    b->barrier();
    met.set_value();
    // Leaves without taking part in the next collective: its socket closes.
  });
  auto root = make_tcp_bootstrap(0, 2, "127.0.0.1", port, 30);
  root->barrier();
  met.get_future().get();
  dying.get();
  EXPECT_FALSE(root->peers_alive());
  EXPECT_EQ(root->dead_peer(), 1);  // the watchdog's message names it (rank_comm.cpp)
  const auto t0 = std::chrono::steady_clock::now();
  const std::string why = error_of([&] { root->allgather("x"); });
  EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));  // not the 30 s timeout
}

TEST(TcpBootstrap, NoRankZeroIsAClearErrorAfterTheTimeout) {
  const std::uint16_t port = free_port();
  const std::string why = error_of([=] { make_tcp_bootstrap(1, 2, "127.0.0.1", port, 0.5); });
  EXPECT_NE(why.find("could not reach rank 0 at 127.0.0.1:" + std::to_string(port)), std::string::npos) << why;
}

TEST(TcpBootstrap, RankZeroNamesTheMissingRanks) {
  const std::uint16_t port = free_port();
  auto peer = std::async(std::launch::async, [=] { return error_of([=] { make_tcp_bootstrap(1, 3, "127.0.0.1", port, 1.5); }); });
  const std::string why = error_of([=] { make_tcp_bootstrap(0, 3, "127.0.0.1", port, 1); });
  EXPECT_NE(why.find("missing: 2"), std::string::npos) << why;
  peer.get();
}

TEST(SingleBootstrap, IsRankZeroOfOne) {
  auto b = make_bootstrap(LaunchInfo{});
  EXPECT_EQ(b->size(), 1);
  EXPECT_EQ(b->allgather("x"), std::vector<std::string>{"x"});
  EXPECT_THROW(b->broadcast(1, "x"), UsageError);
}
