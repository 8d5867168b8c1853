// Faults: the peer process killed mid-transfer, or stalled. Both sides must stop
// within the timeout with an error that says what happened.
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
#include "transport/tcp/protocol.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A long transfer: many rounds, so the kill lands in the middle of one.
Params long_run() {
  Params p;
  p.size_bytes = 32u << 20;
  p.chunk_bytes = 1u << 20;
  p.channels = 2;
  p.window = 4;
  p.iters = 100000;
  p.timeout_s = 3;
  return p;
}

}  // namespace

TEST(TcpFaults, ServerProcessKilledMidTransferStopsTheClient) {
  ServerOptions so;
  so.bind_addrs = {"127.0.0.1"};
  so.port = 0;
  so.accept_timeout_s = 10;
  Server srv(so);  // listening before fork: the child inherits the socket
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      srv.serve_one();
    } catch (...) {
    }
    _exit(0);
  }
  std::thread killer([child] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(child, SIGKILL);
  });
  ClientOptions co;
  co.hosts = {"127.0.0.1"};
  co.port = srv.port();
  const auto t0 = std::chrono::steady_clock::now();
  std::string err;
  try {
    run_client(co, long_run());
  } catch (const Error& e) {
    err = e.what();
  }
  killer.join();
  waitpid(child, nullptr, 0);
  EXPECT_LT(seconds_since(t0), 0.5 + 3 + 2);
  EXPECT_TRUE(err.find("peer closed") != std::string::npos || err.find("reset") != std::string::npos ||
              err.find("Broken pipe") != std::string::npos)
      << err;
}

TEST(TcpFaults, ClientProcessKilledMidTransferStopsTheServer) {
  ServerOptions so;
  so.bind_addrs = {"127.0.0.1"};
  so.port = 0;
  so.accept_timeout_s = 10;
  Server srv(so);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ClientOptions co;
    co.hosts = {"127.0.0.1"};
    co.port = srv.port();
    try {
      run_client(co, long_run());
    } catch (...) {
    }
    _exit(0);
  }
  std::thread killer([child] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(child, SIGKILL);
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::string err;
  try {
    srv.serve_one();
  } catch (const Error& e) {
    err = e.what();
  }
  killer.join();
  waitpid(child, nullptr, 0);
  EXPECT_LT(seconds_since(t0), 0.5 + 3 + 2);
  // Killed inside a round (a data socket fails) or between rounds (the control one).
  EXPECT_TRUE(err.find("peer closed") != std::string::npos || err.find("reset") != std::string::npos) << err;
}

TEST(TcpFaults, StalledPeerTimesOut) {
  // A peer that completes the handshake, then never reads: the client's sends block
  // until SO_SNDTIMEO fires.
  Listener l({"127.0.0.1"}, 0);
  Params p = long_run();
  p.timeout_s = 1;
  p.channels = 1;
  p.sockbuf_bytes = 64 << 10;
  std::vector<Socket> held;
  std::thread fake([&] {
    try {
      Socket ctrl = l.accept(5);
      recv_frame(ctrl, true);
      send_frame(ctrl, FrameType::accept, nlohmann::json::object());
      Socket data = l.accept(5);
      recv_frame(data, true);
      send_frame(ctrl, FrameType::done, {{"round", -1}});  // "ready", then silence
      held.push_back(std::move(ctrl));
      held.push_back(std::move(data));
    } catch (...) {
    }
  });
  ClientOptions co;
  co.hosts = {"127.0.0.1"};
  co.port = l.port();
  const auto t0 = std::chrono::steady_clock::now();
  std::string err;
  try {
    run_client(co, p);
  } catch (const Error& e) {
    err = e.what();
  }
  fake.join();
  EXPECT_LT(seconds_since(t0), 1 + 3);
  EXPECT_NE(err.find("timed out"), std::string::npos) << err;
  EXPECT_NE(err.find("channel 0"), std::string::npos) << err;  // the data path stalled, not the handshake
}
