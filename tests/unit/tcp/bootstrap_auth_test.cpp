// The rendezvous's shared secret and job id (issue 21 item 4): ranks with the same
// secret and job meet; a wrong or missing secret, another job's rank, a stranger who
// speaks the protocol but cannot prove the secret, a hello past its deadline and a fake
// rank 0 are refused with messages that say what to do, and rank 0 logs each refusal
// and carries on. Ranks are threads; hostile peers are real sockets over 127.0.0.1.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "support/errors.hpp"
#include "bootstrap/wire.hpp"
#include "p2pscope/auth.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"
#include "support/loopback_port.hpp"
#include "support/tcp_session.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/tcp/socket.hpp"
#include "support/timing.hpp"

using namespace p2pscope;
using Clock = std::chrono::steady_clock;
using p2pscope::test::connect_when_up, p2pscope::test::error_of, p2pscope::test::free_port,
    p2pscope::test::seconds_since;

namespace {

// Rank 0's log, readable from the test thread.
struct Log {
  std::mutex m;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& l) {
      std::lock_guard g(m);
      lines.push_back(l);
    };
  }
  bool has(const std::string& text) {
    std::lock_guard g(m);
    for (const auto& l : lines)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
};

RendezvousOptions opts(std::optional<std::string> token, std::string job = "job-1", Log* log = nullptr) {
  RendezvousOptions o;
  o.token = std::move(token);
  o.job_id = std::move(job);
  if (log) o.log = log->sink();
  return o;
}

std::future<std::vector<std::string>> start(std::uint16_t port, int rank, int size, RendezvousOptions o,
                                            double timeout_s = 10) {
  return std::async(std::launch::async, [=] {
    auto b = make_tcp_bootstrap(rank, size, "127.0.0.1", port, timeout_s, o);
    return b->allgather("r" + std::to_string(rank));
  });
}

// A stranger that speaks version 2 by hand: intro, challenge, then a hello with the
// proof it chooses. Returns rank 0's answer frame.
std::string hand_hello(tcp::Socket& s, const std::string& proof, std::uint32_t rank, std::uint32_t size,
                       const std::string& job = "job-1", std::string* challenge_out = nullptr) {
  s.set_timeout(5);
  s.send_all(rdv::intro_bytes().data(), rdv::kIntroBytes);
  const std::string challenge = rdv::recv_frame(s, rdv::kMaxMeetingFrame);
  if (challenge_out) *challenge_out = challenge;
  rdv::Hello h{std::string(32, 'a'), proof, rdv::job_digest(job), rank, size};
  const std::string bytes = rdv::hello_bytes(h);
  s.send_all(bytes.data(), bytes.size());
  return rdv::recv_frame(s, rdv::kMaxMeetingFrame);
}

}  // namespace

TEST(RendezvousAuth, RanksWithTheSameSecretMeetAndAWrongOrMissingOneIsRefusedWithTheFix) {
  const std::uint16_t port = free_port();
  Log log;
  auto root = start(port, 0, 2, opts("s3cret", "job-1", &log));
  const std::string wrong = error_of([=] { make_tcp_bootstrap(1, 2, "127.0.0.1", port, 5, opts("other")); });
  EXPECT_NE(wrong.find("wrong shared secret"), std::string::npos) << wrong;
  const std::string none = error_of([=] { make_tcp_bootstrap(1, 2, "127.0.0.1", port, 5, opts(std::nullopt)); });
  EXPECT_NE(none.find("requires the shared secret and this rank has none: set P2PSCOPE_TOKEN"), std::string::npos)
      << none;
  auto r1 = start(port, 1, 2, opts("s3cret"));
  EXPECT_EQ(r1.get(), (std::vector<std::string>{"r0", "r1"}));
  EXPECT_EQ(root.get(), (std::vector<std::string>{"r0", "r1"}));
  EXPECT_TRUE(log.has("wrong shared secret"));
}

TEST(RendezvousAuth, ARankWithASecretRefusesARankZeroWithout) {
  const std::uint16_t port = free_port();
  auto root = std::async(std::launch::async, [=] {
    return error_of([=] { make_tcp_bootstrap(0, 2, "127.0.0.1", port, 1.5, opts(std::nullopt)); });
  });
  const std::string why = error_of([=] { make_tcp_bootstrap(1, 2, "127.0.0.1", port, 5, opts("s3cret")); });
  EXPECT_NE(why.find("has none: set the same secret for every rank"), std::string::npos) << why;
  EXPECT_NE(root.get().find("missing: 1"), std::string::npos);
}

TEST(RendezvousAuth, AStrangerWhoKnowsTheProtocolButNotTheSecretTakesNoPlace) {
  const std::uint16_t port = free_port();
  Log log;
  auto root = start(port, 0, 2, opts("s3cret", "job-1", &log));
  tcp::Socket s = connect_when_up(port);
  std::string challenge;
  const std::string answer = hand_hello(s, std::string(64, '0'), 1, 2, "job-1", &challenge);
  EXPECT_EQ(challenge.substr(0, 2), "CT");  // a secret is required, and nothing else is said
  EXPECT_EQ(challenge.size(), 2 + rdv::kNonceHexBytes);
  EXPECT_EQ(answer.rfind("Rrefused: wrong shared secret", 0), 0u) << answer;
  // A proof replayed from another connection's challenge does not pass either.
  tcp::Socket s2 = connect_when_up(port);
  const std::string replayed = auth::proof("s3cret", rdv::kRankRole, challenge.substr(2), std::string(32, 'a'));
  EXPECT_EQ(hand_hello(s2, replayed, 1, 2).rfind("Rrefused: wrong shared secret", 0), 0u);
  auto r1 = start(port, 1, 2, opts("s3cret"));
  EXPECT_EQ(r1.get()[0], "r0");
  EXPECT_EQ(root.get()[1], "r1");
}

TEST(RendezvousAuth, ARankOfAnotherJobIsRefusedAndTheRightOneGetsIn) {
  const std::uint16_t port = free_port();
  auto root = start(port, 0, 2, opts("s3cret", "slurm:100.0"));
  const std::string why =
      error_of([=] { make_tcp_bootstrap(1, 2, "127.0.0.1", port, 5, opts("s3cret", "slurm:101.0")); });
  EXPECT_NE(why.find("another job"), std::string::npos) << why;
  EXPECT_NE(why.find("P2PSCOPE_RENDEZVOUS"), std::string::npos) << why;
  EXPECT_EQ(why.find("slurm:100"), std::string::npos) << "rank 0's job id is not told: " << why;
  EXPECT_EQ(start(port, 1, 2, opts("s3cret", "slurm:100.0")).get()[0], "r0");
  EXPECT_EQ(root.get()[1], "r1");
}

TEST(RendezvousAuth, AHelloPastItsDeadlineIsRefusedWhileTheRealRankWaitsNothing) {
  const std::uint16_t port = free_port();
  Log log;
  RendezvousOptions o = opts(std::nullopt, "job-1", &log);
  o.hello_timeout_s = 1;
  auto root = start(port, 0, 2, o);
  tcp::Socket slow = connect_when_up(port);
  const auto t0 = Clock::now();
  slow.send_all("P2P", 3);  // and then nothing more
  pollfd p{slow.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 4000), 1) << "rank 0 never closed the slow hello";
  const double closed_after_s = seconds_since(t0);
  EXPECT_GT(closed_after_s, 0.8);
  EXPECT_LT(closed_after_s, 2.5);
  EXPECT_TRUE(log.has("no complete hello within 1.0 s"));
  EXPECT_EQ(start(port, 1, 2, opts(std::nullopt)).get()[0], "r0");
  EXPECT_EQ(root.get()[1], "r1");
}

TEST(RendezvousAuth, APlaceWhoseHolderLeftBeforeTheStartIsFreeAgain) {
  // Without a secret a stranger who knows the protocol can claim a rank; once it goes,
  // the real rank takes the place instead of being refused as a duplicate.
  const std::uint16_t port = free_port();
  Log log;
  auto root = start(port, 0, 3, opts(std::nullopt, "job-1", &log));
  {
    tcp::Socket s = connect_when_up(port);
    EXPECT_EQ(hand_hello(s, std::string(64, '-'), 1, 3), "A");
  }  // closes
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto r1 = start(port, 1, 3, opts(std::nullopt));
  auto r2 = start(port, 2, 3, opts(std::nullopt));
  EXPECT_EQ(r1.get()[1], "r1");
  EXPECT_EQ(r2.get()[2], "r2");
  EXPECT_EQ(root.get().size(), 3u);
  EXPECT_TRUE(log.has("place is free again"));
}

TEST(RendezvousAuth, RankZeroGivingUpSummarisesWhatItRefused) {
  const std::uint16_t port = free_port();
  auto root = std::async(std::launch::async, [=] {
    return error_of([=] { make_tcp_bootstrap(0, 2, "127.0.0.1", port, 1.5, opts("s3cret")); });
  });
  {
    tcp::Socket s = connect_when_up(port);
    s.send_all("GET / HTTP/1.0\r\n\r\n", 18);
  }
  tcp::Socket s = connect_when_up(port);
  hand_hello(s, std::string(64, '0'), 1, 2);
  const std::string why = root.get();
  EXPECT_NE(why.find("missing: 1"), std::string::npos) << why;
  EXPECT_NE(why.find("1 not p2pscope"), std::string::npos) << why;
  EXPECT_NE(why.find("1 wrong secret"), std::string::npos) << why;
}

TEST(RendezvousAuth, AFakeRankZeroIsNamedNotTrusted) {
  // Something else listens at the rendezvous: one that announces a 4 GiB answer, one that
  // asks for a secret but cannot prove it knows it.
  for (int variant : {0, 1}) {
    const std::uint16_t port = free_port();
    tcp::Listener l({"127.0.0.1"}, port);
    auto fake = std::async(std::launch::async, [&] {
      tcp::Socket c = l.accept(5);
      c.set_timeout(5);
      char intro[rdv::kIntroBytes];
      c.recv_all(intro, sizeof intro);
      if (variant == 0) {
        const std::uint32_t huge = 0xfffffff0u;
        c.send_all(&huge, 4);
      } else {
        rdv::send_frame(c, "CT" + std::string(32, 'b'));
        char hello[rdv::kHelloBytes];
        c.recv_all(hello, sizeof hello);
        rdv::send_frame(c, "A" + std::string(64, 'c'));
      }
      char sink[16];
      try {
        c.recv_all(sink, sizeof sink);  // until the rank hangs up
      } catch (const Error&) {
      }
    });
    const auto t0 = Clock::now();
    const std::string why = error_of([=] { make_tcp_bootstrap(1, 2, "127.0.0.1", port, 10, opts("s3cret")); });
    EXPECT_LT(seconds_since(t0), 3.0);
    EXPECT_NE(why.find(variant == 0 ? "not a p2pscope rank 0" : "did not prove the shared secret"), std::string::npos)
        << why;
    fake.get();
  }
}

TEST(RendezvousAuth, LaunchersJobIdsTellJobsApartAndReachTheRendezvous) {
  const auto launch_with = [](std::map<std::string, std::string> env) {
    return detect_launch([&](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  // Slurm's step id is "0" in every job: alone it told no jobs apart.
  const LaunchInfo a = launch_with(
      {{"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_JOB_ID", "100"}, {"SLURM_STEP_ID", "0"}});
  const LaunchInfo b = launch_with(
      {{"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_JOB_ID", "101"}, {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(a.job_id, "slurm:100.0");
  EXPECT_NE(a.job_id, b.job_id);
  EXPECT_NE(a.rendezvous_port, b.rendezvous_port);
  // torchrun's default run id is "none": its store's address qualifies it.
  const std::map<std::string, std::string> t = {{"RANK", "1"},
                                                {"WORLD_SIZE", "2"},
                                                {"TORCHELASTIC_RUN_ID", "none"},
                                                {"MASTER_ADDR", "10.0.0.1"},
                                                {"MASTER_PORT", "29500"}};
  auto t2 = t;
  t2["MASTER_PORT"] = "29501";
  EXPECT_EQ(launch_with(t).job_id, "torchrun:none@10.0.0.1:29500");
  EXPECT_NE(launch_with(t).job_id, launch_with(t2).job_id);
  EXPECT_EQ(
      launch_with({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_MCA_ess_base_jobid", "77"}})
          .job_id,
      "OMPI_MCA_ess_base_jobid=77");
}

TEST(RendezvousAuth, MakeBootstrapReadsTheTokenAndRefusesAnUnsafeTokenFile) {
  namespace fs = std::filesystem;
  const fs::path f = fs::temp_directory_path() / ("p2pscope_rdv_token_" + std::to_string(::getpid()));
  std::ofstream(f) << "s3cret\n";
  ::chmod(f.c_str(), 0644);
  ::setenv("P2PSCOPE_TOKEN_FILE", f.c_str(), 1);
  LaunchInfo li;
  li.rank = 1;
  li.size = 2;
  li.rendezvous_host = "127.0.0.1";
  li.rendezvous_port = free_port();
  const std::string why = error_of([&] { make_bootstrap(li, 5); });
  EXPECT_NE(why.find("chmod 600"), std::string::npos) << why;
  EXPECT_THROW(make_bootstrap(li, 5), UsageError);
  // Owner-only: read, and the ranks of one job meet with it.
  ::chmod(f.c_str(), 0600);
  li.job_id = "job-x";
  LaunchInfo l0 = li;
  l0.rank = 0;
  auto root = std::async(std::launch::async, [&] { return make_bootstrap(l0, 5)->allgather("a"); });
  EXPECT_EQ(make_bootstrap(li, 5)->allgather("b")[0], "a");
  EXPECT_EQ(root.get()[1], "b");
  ::unsetenv("P2PSCOPE_TOKEN_FILE");
  fs::remove(f);
}
