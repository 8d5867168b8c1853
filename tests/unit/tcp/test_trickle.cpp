// Whole-frame deadlines (issue 32, item 4): a peer that sends its frame a byte at a time
// renewed the per-recv timeout for ever. The old server was held by one trickling client
// past the handshake (everyone else told "busy"), and the old client by a trickling
// server far past --timeout. Now a frame arrives whole within the timeout or the side
// ends with an error that says so.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/raw_peer.hpp"
#include "support/server_thread.hpp"
#include "support/timing.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/tcp/socket.hpp"
#include "transport/session/protocol.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using namespace p2pscope::session;
using p2pscope::test::RawPeer;
using p2pscope::test::Reply;
using p2pscope::test::ServerThread;
using p2pscope::test::seconds_since;
namespace pt = p2pscope::test;

namespace {

Params small(double timeout_s) {
  return {.size_bytes = 1u << 20, .chunk_bytes = 256u << 10, .iters = 1, .warmup = 0, .timeout_s = timeout_s};
}

// Sends `bytes` one at a time, `gap_ms` apart, until done or stopped.
void trickle(const std::function<bool(const char*)>& send1, const std::string& bytes, int gap_ms,
             const std::atomic<bool>& stop) {
  for (char c : bytes) {
    if (stop || !send1(&c)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  }
}

}  // namespace

TEST(TcpTrickle, AClientTricklingItsGoFrameIsCutAtTheTimeoutAndTheNextClientServed) {
  ServerOptions so;
  so.limits.min_timeout_s = 0.5;
  ServerThread srv(so);
  RawPeer ctrl(srv.port()), data(srv.port());
  nlohmann::json p = to_json(small(2));
  p["channels"] = 1;
  const Reply r = ctrl.propose(p);
  ASSERT_EQ(r.type, pt::kAccept) << r.body;
  data.send_frame(pt::kDataHello, {{"session", r.json().value("session", "")}, {"c2s", true}, {"gpu_slot", 0},
                                   {"channel", 0}, {"socket", 0}});
  ASSERT_EQ(ctrl.read_frame().type, pt::kDone);
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<bool> stop{false};
  std::thread t([&] {  // 28 bytes at 5 a second: 5.6 s, far past the 2 s timeout
    trickle([&](const char* c) { return ctrl.send_bytes(c, 1); }, RawPeer::frame(pt::kGo, R"({"round":0})"), 200, stop);
  });
  const bool ended = ServerThread::wait_for([&] { return srv.results().size() + srv.errors().size() >= 1; }, 4.5);
  const double s = seconds_since(t0);
  stop = true;
  t.join();
  ASSERT_TRUE(ended) << "the trickling client still holds the server after " << s << " s";
  EXPECT_LT(s, 4.0);
  const auto res = srv.results();
  ASSERT_EQ(res.size(), 1u) << srv.errors_text();
  EXPECT_NE(res[0].failure.find("did not arrive whole within 2.0 s"), std::string::npos) << res[0].failure;
  ClientOptions co;
  co.port = srv.port();
  EXPECT_EQ(run_client(co, small(3)).failure, "");
}

TEST(TcpTrickle, AClientHonoursItsTimeoutAgainstATricklingServer) {
  Listener l({"127.0.0.1"}, 0);
  std::atomic<bool> stop{false};
  std::thread fake([&] {
    try {
      Socket ctrl = l.accept(5);
      expect_frame(ctrl, FrameType::hello, "fake");
      const std::string f = pt::RawPeer::frame(pt::kChallenge, R"({"nonce":"00","auth":"none","pad":")" +
                                                                   std::string(200, 'x') + "\"}");
      trickle([&](const char* c) {
        try {
          ctrl.send_all(c, 1);
          return true;
        } catch (const std::exception&) {
          return false;
        }
      }, f, 100, stop);
    } catch (const std::exception&) {
    }
  });
  ClientOptions co;
  co.port = l.port();
  const auto t0 = std::chrono::steady_clock::now();
  std::string err;
  try {
    run_client(co, small(1));
  } catch (const Error& e) {
    err = e.what();
  }
  const double s = seconds_since(t0);
  stop = true;
  fake.join();
  EXPECT_NE(err.find("did not arrive whole within 1.0 s"), std::string::npos) << err;
  EXPECT_LT(s, 2.0) << "the client was held " << s << " s at --timeout 1";
}

// Data, not frames (issue 32, item 7): a chunk that moves a byte every 50 ms renews
// SO_RCVTIMEO on every call, so a client past the handshake that trickled its data held
// the server for ever. Now a message moves within --timeout plus its size at 1 MB/s, or
// the receiver ends with a timeout that says so; a sender meets the same rule.
TEST(TcpTrickle, AChunkTrickledAByteAtATimeEndsAtItsDeadline) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Socket rx(sv[0]);
  rx.set_timeout(0.3);
  std::atomic<bool> stop{false};
  std::thread t([&] {
    const char c = 'x';
    while (!stop && ::send(sv[1], &c, 1, MSG_NOSIGNAL) == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  std::vector<char> chunk(200000);  // 0.3 s + 0.2 s at 1 MB/s: 0.5 s allowed; a trickle needs hours
  const auto t0 = std::chrono::steady_clock::now();
  try {
    rx.recv_all(chunk.data(), chunk.size());
    ADD_FAILURE() << "a trickled chunk was received whole";
  } catch (const IoError& e) {
    EXPECT_EQ(e.cause(), IoCause::timeout);
    EXPECT_NE(std::string(e.what()).find("slower than 1 MB/s"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(t0), 3.0);  // the deadline (0.5 s) plus at most one call's timeout
  stop = true;
  ::shutdown(sv[1], SHUT_RDWR);
  t.join();
  ::close(sv[1]);
}
