// Faults: the peer process killed mid-transfer, or stalled. Both sides must stop
// within the timeout, name the cause, and keep the rounds measured before it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/session/protocol.hpp"
#include "support/tcp_report.hpp"
#include "support/tcp_session.hpp"
#include "support/timing.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using namespace p2pscope::session;

namespace {

using p2pscope::test::loopback_server;
using p2pscope::test::seconds_since;

// A long transfer: many short rounds, so the fault lands after several of them.
Params long_run() {
  return {.channels = 2, .window = 4, .size_bytes = 4u << 20, .chunk_bytes = 1u << 20, .iters = 100000, .timeout_s = 3};
}

using p2pscope::test::sum_bytes;

bool closed_or_reset(const std::string& cause) {
  return cause == "peer closed the connection" || cause == "connection reset by the peer";
}

// The figures of a failed session cover its completed rounds, each of size_bytes (the
// round that failed may have moved its data before its "done" was lost).
void expect_rounds_kept(const Results& r, const SideReport& side, bool sent) {
  const std::uint64_t size = r.params.size_bytes;
  EXPECT_GE(r.rounds_completed, 2u) << "the fault came after several rounds: " << r.failure;
  EXPECT_GE(sum_bytes(side, sent), r.rounds_completed * size);
  EXPECT_LE(sum_bytes(side, sent), (r.rounds_completed + 1) * size);
  const auto& rates = sent ? side.round_tx_bytes_per_s : side.round_rx_bytes_per_s;
  EXPECT_GE(rates.size(), r.rounds_completed);
  EXPECT_GT(sent ? side.tx_bytes_per_s : side.rx_bytes_per_s, 0);
}

// A server process that serves one session: listening before fork (the child inherits
// the socket), killed and reaped at the end of the test whatever happened.
struct ForkedServer {
  Server srv{loopback_server()};
  pid_t child = -1;
  ForkedServer() {
    child = fork();
    if (child == 0) {
      try {
        srv.serve_one();
      } catch (...) {
      }
      _exit(0);
    }
  }
  ~ForkedServer() {
    if (child > 0) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
  }
};

// run_client, which must return (not throw) once the session was set up.
Results client_of(std::uint16_t port, const Params& p) {
  ClientOptions co;
  co.hosts = {"127.0.0.1"};
  co.port = port;
  try {
    return run_client(co, p);
  } catch (const Error& e) {
    ADD_FAILURE() << "run_client threw instead of returning the rounds it measured: " << e.what();
  }
  return {};
}

}  // namespace

TEST(TcpFaults, ServerProcessKilledMidTransferStopsTheClient) {
  ForkedServer fs;
  ASSERT_GT(fs.child, 0);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    kill(fs.child, SIGKILL);
  });
  const auto t0 = std::chrono::steady_clock::now();
  const Results r = client_of(fs.srv.port(), long_run());
  killer.join();
  EXPECT_LT(seconds_since(t0), 1.5 + 3 + 2);
  ASSERT_FALSE(r.failure.empty());
  EXPECT_TRUE(closed_or_reset(r.failure_cause)) << r.failure_cause << " / " << r.failure;
  expect_rounds_kept(r, r.client, true);
  // The server is gone: its figures cannot come, and the result says so.
  ASSERT_FALSE(r.server.warnings.empty());
  EXPECT_NE(r.server.warnings.back().find("did not arrive"), std::string::npos) << r.server.warnings.back();
}

TEST(TcpFaults, ClientProcessKilledMidTransferStopsTheServer) {
  Server srv(loopback_server());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ClientOptions co;
    co.port = srv.port();
    try {
      run_client(co, long_run());
    } catch (...) {
    }
    _exit(0);
  }
  std::thread killer([child] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    kill(child, SIGKILL);
  });
  const auto t0 = std::chrono::steady_clock::now();
  Results r;
  try {
    r = srv.serve_one();
  } catch (const Error& e) {
    ADD_FAILURE() << "serve_one threw instead of returning the rounds it measured: " << e.what();
  }
  killer.join();
  waitpid(child, nullptr, 0);
  EXPECT_LT(seconds_since(t0), 1.5 + 3 + 2);
  ASSERT_FALSE(r.failure.empty());
  // Killed inside a round (a data socket fails) or between rounds (the control one).
  EXPECT_TRUE(closed_or_reset(r.failure_cause)) << r.failure_cause << " / " << r.failure;
  expect_rounds_kept(r, r.server, false);
}

// A server that stops (SIGSTOP: the process is there, its sockets open, nothing read)
// after several rounds: the client's sends block until its timeout, and it says so.
TEST(TcpFaults, ServerStalledAfterRoundsTimesOutKeepingThem) {
  ForkedServer fs;
  ASSERT_GT(fs.child, 0);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    kill(fs.child, SIGSTOP);
  });
  Params p = long_run();
  p.timeout_s = 1;
  p.sockbuf_bytes = 64 << 10;  // small buffers: a stopped reader blocks the sender soon
  const auto t0 = std::chrono::steady_clock::now();
  const Results r = client_of(fs.srv.port(), p);
  stopper.join();
  EXPECT_LT(seconds_since(t0), 1.5 + 1 + 1 + 2);
  ASSERT_FALSE(r.failure.empty());
  EXPECT_NE(r.failure_cause.find("timed out"), std::string::npos) << r.failure_cause << " / " << r.failure;
  expect_rounds_kept(r, r.client, true);
}

TEST(TcpFaults, StalledPeerTimesOut) {
  // A peer that completes the (version 2) handshake, then never reads: the client's
  // sends block until SO_SNDTIMEO fires.
  Listener l({"127.0.0.1"}, 0);
  Params p = long_run();
  p.timeout_s = 1;
  p.channels = 1;
  p.sockbuf_bytes = 64 << 10;
  std::vector<Socket> held;
  std::string fake_error;
  std::thread fake([&] {
    try {
      Socket ctrl = l.accept(5);
      expect_frame(ctrl, FrameType::hello, "fake");
      send_frame(ctrl, FrameType::challenge, {{"nonce", "00"}, {"auth", "none"}});
      expect_frame(ctrl, FrameType::params, "fake");
      send_frame(ctrl, FrameType::accept, {{"session", "fake1"}, {"proof", ""}, {"timeout_s", 1.0}});
      Socket data = l.accept(5);
      const auto hello = expect_frame(data, FrameType::data_hello, "fake");
      if (hello.value("session", std::string()) != "fake1") fake_error = "data hello without the session: " + hello.dump();
      send_frame(ctrl, FrameType::done, {{"round", -1}});  // "ready", then silence
      held.push_back(std::move(ctrl));
      held.push_back(std::move(data));
    } catch (const std::exception& e) {
      fake_error = e.what();
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  const Results r = client_of(l.port(), p);
  fake.join();
  EXPECT_EQ(fake_error, "");
  EXPECT_LT(seconds_since(t0), 1 + 3);
  EXPECT_NE(r.failure_cause.find("timed out"), std::string::npos) << r.failure_cause;
  EXPECT_NE(r.failure.find("timed out"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("channel 0"), std::string::npos) << r.failure;  // the data path stalled, not the handshake
  EXPECT_EQ(r.rounds_completed, 0u);
  EXPECT_EQ(sum_bytes(r.client, true), 0u);
}

// Issue 32 item 9: a stopped peer is found within --timeout, not up to twice it. A send
// or receive that moved part of a chunk used to return after one whole timeout, and the
// next call waited a whole one more (6.3 s at --timeout 3, bench/results/hostile.md).
namespace {
constexpr double kStopAfterS = 1.5;
// The receiver is the side that notices: big chunks, so the stop lands inside one, and
// long rounds (64 chunks), so it seldom lands between two (the control connection's
// frames had a whole-frame deadline already).
Params stopped_peer_run(bool client_receives) {
  Params p = long_run();
  p.timeout_s = 3;
  p.channels = 1;
  p.size_bytes = 1ull << 30;
  p.chunk_bytes = 16u << 20;
  p.reverse = client_receives;
  return p;
}
}  // namespace

TEST(TcpFaults, AStoppedServerIsFoundWithinTheTimeout) {
  ForkedServer fs;
  ASSERT_GT(fs.child, 0);
  std::chrono::steady_clock::time_point stopped;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kStopAfterS));
    stopped = std::chrono::steady_clock::now();
    kill(fs.child, SIGSTOP);
  });
  const Params p = stopped_peer_run(true);
  const Results r = client_of(fs.srv.port(), p);
  const double after_stop = seconds_since(stopped);
  stopper.join();
  ASSERT_FALSE(r.failure.empty());
  EXPECT_NE(r.failure_cause.find("timed out"), std::string::npos) << r.failure_cause << " / " << r.failure;
  // The timeout, then the one second the client waits for a failed server's figures.
  EXPECT_LT(after_stop, p.timeout_s + 1 + 0.8) << r.failure;
}

TEST(TcpFaults, AStoppedClientIsFoundWithinTheTimeout) {
  Server srv(loopback_server());
  const Params p = stopped_peer_run(false);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ClientOptions co;
    co.hosts = {"127.0.0.1"};
    co.port = srv.port();
    try {
      run_client(co, p);
    } catch (...) {
    }
    _exit(0);
  }
  std::chrono::steady_clock::time_point stopped;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kStopAfterS));
    stopped = std::chrono::steady_clock::now();
    kill(child, SIGSTOP);
  });
  Results r;
  try {
    r = srv.serve_one();
  } catch (const Error& e) {
    ADD_FAILURE() << "serve_one threw: " << e.what();
  }
  const double after_stop = seconds_since(stopped);
  stopper.join();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_FALSE(r.failure.empty());
  EXPECT_NE(r.failure_cause.find("timed out"), std::string::npos) << r.failure_cause << " / " << r.failure;
  EXPECT_LT(after_stop, p.timeout_s + 0.8) << r.failure;
}
