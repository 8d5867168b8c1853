// `bench tcp --server` serves until killed (as iperf3 does), `--sessions N` stops after
// N, and a client refused by a server that has finished says it may have. A server
// process (the built binary) and client sessions of this process over loopback.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/child.hpp"
#include "support/loopback_port.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using p2pscope::test::spawn;
using p2pscope::test::wait_exit;

namespace {

Params small() {
  return {.size_bytes = 1u << 20, .chunk_bytes = 256u << 10, .iters = 1, .warmup = 0, .verify = true, .timeout_s = 10};
}

ClientOptions to(std::uint16_t port) {
  ClientOptions co;
  co.hosts = {"127.0.0.1"};
  co.port = port;
  return co;
}

// The first session, retried while the server process is still starting to listen.
Results first_session(std::uint16_t port) {
  for (int i = 0;; ++i) {
    try {
      return run_client(to(port), small());
    } catch (const Error& e) {
      if (i >= 100 || std::string(e.what()).find("Connection refused") == std::string::npos) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

bool alive(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == 0;
}

class TcpServerSessions : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (make build)";
    port_ = std::to_string(p2pscope::test::free_port());
  }
  void TearDown() override {
    if (pid_ > 0 && alive(pid_)) {
      kill(pid_, SIGKILL);
      wait_exit(pid_);
    }
  }
  std::uint16_t port() const { return static_cast<std::uint16_t>(std::stoi(port_)); }
  std::string port_;
  pid_t pid_ = -1;
};

}  // namespace

TEST_F(TcpServerSessions, ServesUntilKilledByDefault) {
  pid_ = spawn({"bench", "tcp", "--server", "--bind", "127.0.0.1", "--port", port_});
  const Results a = first_session(port());
  EXPECT_EQ(a.server.verified_bytes, small().size_bytes);
  const Results b = run_client(to(port()), small());  // refused when the server served one and left
  EXPECT_EQ(b.server.verified_bytes, small().size_bytes);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(alive(pid_)) << "the server ended after two sessions without being told to";
  kill(pid_, SIGTERM);  // between sessions: a clean end, 128 + the signal
  EXPECT_EQ(wait_exit(pid_), 128 + SIGTERM);
  pid_ = -1;
}

TEST_F(TcpServerSessions, SessionsNStopsAfterNAndTheNextClientIsToldWhy) {
  pid_ = spawn({"bench", "tcp", "--server", "--bind", "127.0.0.1", "--port", port_, "--sessions", "1"});
  first_session(port());
  EXPECT_EQ(wait_exit(pid_), 0);
  pid_ = -1;
  try {
    run_client(to(port()), small());
    FAIL() << "a server that finished its sessions accepted a client";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Connection refused"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--sessions N exits after N sessions"), std::string::npos) << msg;
  }
}

TEST_F(TcpServerSessions, AcceptTimeoutAfterASessionEndsTheServerWithoutAnError) {
  pid_ = spawn({"bench", "tcp", "--server", "--bind", "127.0.0.1", "--port", port_, "--accept-timeout", "1"});
  first_session(port());
  EXPECT_EQ(wait_exit(pid_), 0);  // served one, then no client for 1 s
  pid_ = -1;
}

// A client refused for its parameters used no session: with --sessions 1 the server
// still serves the next (valid) client, then exits 0. Before, the refusal ended it.
TEST_F(TcpServerSessions, ARefusedProposalDoesNotUseUpASession) {
  pid_ = spawn({"bench", "tcp", "--server", "--bind", "127.0.0.1", "--port", port_, "--sessions", "1",
                "--max-memory", "2M"});
  Params big = small();
  big.size_bytes = 64u << 20;  // --verify keeps a whole 64 MiB source: over the server's 2 MiB
  big.reverse = true;          // the server sends, so the source is the server's
  for (int i = 0;; ++i) {
    try {
      run_client(to(port()), big);
      FAIL() << "a proposal over --max-memory was accepted";
      break;
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (i < 100 && msg.find("Connection refused") != std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      EXPECT_NE(msg.find("--max-memory"), std::string::npos) << msg;
      break;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(alive(pid_)) << "the refusal used up the server's only session";
  const Results r = run_client(to(port()), small());
  EXPECT_EQ(r.server.verified_bytes, small().size_bytes);
  EXPECT_EQ(wait_exit(pid_), 0);
  pid_ = -1;
}
