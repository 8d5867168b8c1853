// Deadlines per byte, a watch that sleeps, a stop that stops (issue 43 item 7). The old
// socket allowed a message --timeout plus its size at 1 MB/s: one 1 GiB chunk trickled at
// 0.1 byte/s held a server for 1084 s at --max-timeout 10. bench net's peer watch spun a
// CPU while one byte of a frame header waited. And a receiving side told to stop by
// SIGTERM said "stopping within a second", then ran to the end of its session (35-41 s):
// only senders looked at the stop flag.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/hooked_path.hpp"
#include "support/raw_peer.hpp"
#include "support/server_thread.hpp"
#include "support/timing.hpp"
#include "transport/session/datapath.hpp"
#include "transport/session/peer_watch.hpp"
#include "transport/session/worker.hpp"
#include "transport/tcp/socket.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using p2pscope::test::RawPeer;
using p2pscope::test::ServerThread;
using p2pscope::test::seconds_since;
namespace pt = p2pscope::test;

namespace {

double deadline_test_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A peer on the other end of a socketpair that sends one byte every 50 ms.
class Trickler {
 public:
  explicit Trickler(int fd) : fd_(fd), t_([this] {
    const char c = 'x';
    while (!stop_ && ::send(fd_, &c, 1, MSG_NOSIGNAL) == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }) {}
  ~Trickler() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    t_.join();
    ::close(fd_);
  }
  Trickler(const Trickler&) = delete;
  Trickler& operator=(const Trickler&) = delete;

 private:
  int fd_;
  std::atomic<bool> stop_{false};
  std::thread t_;
};

}  // namespace

// 64 MiB at --timeout 0.3: the old deadline was 0.3 s + 67 s; the floor ends it a
// timeout and a few slices after it began, naming the rate. (A send meets the same check,
// after_short_call; a socketpair's sender sees no progress at a trickle, only silence.)
TEST(TcpDeadlines, ABigChunkTrickledEndsAtItsRateFloorNotAtItsSizeAt1MBps) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Socket rx(sv[0]);
  rx.set_timeout(0.3);
  const Trickler peer(sv[1]);
  std::vector<char> chunk(64u << 20);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    rx.recv_all(chunk.data(), chunk.size());
    ADD_FAILURE() << "a trickled 64 MiB chunk moved whole";
  } catch (const IoError& e) {
    EXPECT_EQ(e.cause(), IoCause::timeout);
    EXPECT_NE(std::string(e.what()).find("B/s on average, slower than 1 MB/s"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(t0), 2.0) << "held past its rate floor";
}

// The send side of the floor: a receiver that takes 16 KiB every 25 ms (640 KB/s, never
// silent for long) held a 64 MiB send for its --timeout plus 67 s under the old deadline.
// Over TCP (a socketpair's sender sees no progress at a trickle, only silence), small
// buffers on both ends so the sender's progress is the reader's.
TEST(TcpDeadlines, ABigSendToAReaderThatTricklesEndsAtItsRateFloor) {
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 1), 0);
  ASSERT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int cfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int small = 64 << 10;
  ::setsockopt(cfd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  ASSERT_EQ(::connect(cfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const int rfd = ::accept(lfd, nullptr, nullptr);
  ASSERT_GE(rfd, 0);
  ::close(lfd);
  ::setsockopt(rfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    std::vector<char> b(16u << 10);
    while (!stop && ::recv(rfd, b.data(), b.size(), 0) > 0) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  });
  Socket tx(cfd);
  tx.set_timeout(0.5);
  std::vector<char> chunk(64u << 20, 'x');
  const auto t0 = std::chrono::steady_clock::now();
  std::string err;
  try {
    tx.send_all(chunk.data(), chunk.size());
    err = "the 64 MiB send to a trickling reader went through";
  } catch (const IoError& e) {
    EXPECT_EQ(e.cause(), IoCause::timeout);
    err = e.what();
  }
  const double took = seconds_since(t0);
  stop = true;
  ::shutdown(rfd, SHUT_RDWR);
  reader.join();
  ::close(rfd);
  EXPECT_NE(err.find("slower than 1 MB/s"), std::string::npos) << err;
  EXPECT_NE(err.find("send of a 67108864-byte message"), std::string::npos) << err;
  EXPECT_LT(took, 6.0) << "held past its rate floor: " << err;
}

// One byte of a header in, the rest late: the old watch's poll returned at once, over and
// over (a whole CPU). The window below measures CPU time, so it is a time, not a wait for
// an event: 0.5 s of spinning is 0.5 s of CPU (or what a loaded machine gave it).
TEST(TcpDeadlines, ThePeerWatchSleepsWhileAHeaderComesInPartsAndStillReadsTheReason) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Socket ctrl(sv[0]);
  ctrl.set_timeout(2);
  session::RoundCtl ctl;
  const std::string frame = RawPeer::frame(pt::kError, R"({"reason":"because"})");
  double cpu = 0;
  {
    const session::PeerWatch watch(&ctrl, ctl, "client");
    ASSERT_EQ(::send(sv[1], frame.data(), 1, MSG_NOSIGNAL), 1);
    const double cpu0 = deadline_test_cpu_s();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cpu = deadline_test_cpu_s() - cpu0;
    ASSERT_EQ(::send(sv[1], frame.data() + 1, frame.size() - 1, MSG_NOSIGNAL), static_cast<ssize_t>(frame.size() - 1));
    EXPECT_TRUE(ServerThread::wait_for([&] { return ctl.failed.load(); }, 2));
  }
  EXPECT_LT(cpu, 0.1) << "the peer watch spent " << cpu << " s of CPU in 0.5 s waiting for 15 bytes of a header";
  EXPECT_NE(ctl.error.find("the client failed the round: because"), std::string::npos) << ctl.error;
  ::close(sv[1]);
}

// The stop flag (what SIGTERM / SIGINT set) raised while a receiving server runs round 3
// of 20000: it ends within a second, with the 3 rounds it measured, and so does its client.
TEST(TcpDeadlines, AStopEndsAReceivingServerWithinASecondKeepingItsRounds) {
  std::atomic<bool> stop{false}, client_stop{false};
  std::atomic<std::int64_t> stopped_ns{0};
  ServerOptions so;
  so.local.stop = &stop;
  so.local.path = std::make_shared<pt::HookedPath>(
      make_socket_path(),
      [&](session::Session&, std::uint32_t round) {
        if (round != 3) return;
        stopped_ns = std::chrono::steady_clock::now().time_since_epoch().count();
        stop = true;
      },
      nullptr);
  ServerThread srv(so);
  ClientOptions co;
  co.port = srv.port();
  co.local.stop = &client_stop;
  const Params p{.size_bytes = 1u << 20, .chunk_bytes = 256u << 10, .iters = 20000, .warmup = 0, .timeout_s = 5};
  Results client;
  std::thread c([&] { client = run_client(co, p); });
  const bool ended = ServerThread::wait_for([&] { return srv.results().size() == 1; }, 3);
  const double took_s =
      static_cast<double>(std::chrono::steady_clock::now().time_since_epoch().count() - stopped_ns.load()) * 1e-9;
  client_stop = true;  // the old server never stops: its client, a sender, does
  c.join();
  ASSERT_TRUE(ended) << "the receiving server still ran 3 s after its stop";
  EXPECT_LT(took_s, 1.0) << "the receiving server took " << took_s << " s to stop";
  const Results r = srv.results()[0];
  EXPECT_NE(r.failure.find("interrupted by a signal"), std::string::npos) << r.failure;
  EXPECT_EQ(r.failure_cause, "interrupted by a signal");
  EXPECT_EQ(r.rounds_completed, 3u);
  EXPECT_EQ(client.rounds_completed, 3u) << client.failure;
}
