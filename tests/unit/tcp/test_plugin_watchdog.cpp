// Deliver 2 of issue 32: a third-party plugin hung inside a call ends bench net with a
// clear error within a bound, and the first SIGTERM ends it. Before, the run waited for
// ever on the hung thread (only a third signal killed it). The plugin is a test double:
// the reference plugin with one call that never returns (tests/unit/net/plugins/hang_v8.cpp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/loopback_port.hpp"
#include "support/timing.hpp"

namespace {

using p2pscope::test::seconds_since;

// The built binary with `env` set, stderr to err_path, stdout to /dev/null.
pid_t spawn_with(const std::vector<std::pair<std::string, std::string>>& env, const std::vector<std::string>& args,
                 const std::string& err_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<std::string> all = {P2PSCOPE_BINARY};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0 || !freopen("/dev/null", "w", stdout)) _exit(126);
    execv(P2PSCOPE_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

// The exit code, or -1 when still running after limit_s (then killed).
int wait_exit(pid_t pid, double limit_s) {
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (seconds_since(t0) > limit_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string slurp_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


struct HungRun {
  int exit_code = -1;  // -1: still running at the limit (killed)
  double seconds = 0;  // from start, or from the signal when one was sent
  std::string err;
};

// The built binary with P2PSCOPE_TEST_HANG=hang, stderr kept; SIGTERM once after
// term_after_s (0: never); killed at limit_s.
HungRun run_hung(const std::vector<std::string>& command, const std::string& hang, const std::vector<std::string>& args,
                 double term_after_s, double limit_s) {
  const std::string err_path = ::testing::TempDir() + "watchdog_" + std::to_string(getpid()) + ".err";
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> all = command;
  all.insert(all.end(), {"--plugin", P2PSCOPE_TEST_HANG_PLUGIN});
  all.insert(all.end(), args.begin(), args.end());
  const pid_t pid = spawn_with({{"P2PSCOPE_TEST_HANG", hang}}, all, err_path);
  HungRun r;
  auto from = t0;
  bool termed = false;
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (term_after_s > 0 && !termed && seconds_since(t0) >= term_after_s) {
      kill(pid, SIGTERM);
      termed = true;
      from = std::chrono::steady_clock::now();
    }
    if (seconds_since(t0) > limit_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.seconds = seconds_since(from);
  r.err = slurp_file(err_path);
  std::filesystem::remove(err_path);
  return r;
}

HungRun bench_net(const std::string& hang, std::vector<std::string> args, double term_after_s, double limit_s) {
  args.insert(args.begin(), "--loopback");
  return run_hung({"bench", "net"}, hang, args, term_after_s, limit_s);
}

bool built() { return std::filesystem::exists(P2PSCOPE_BINARY) && std::filesystem::exists(P2PSCOPE_TEST_HANG_PLUGIN); }

const std::vector<std::string> kSmall = {"--size", "1M", "--chunk", "64K", "--iters", "3"};

}  // namespace

TEST(BenchNetWatchdog, AHungIsendEndsTheRunWithinTheTimeout) {
  if (!built()) GTEST_SKIP() << "p2pscope binary not built (make build)";
  auto args = kSmall;
  args.insert(args.end(), {"--timeout", "2"});
  const HungRun r = bench_net("isend", args, 0, 20);
  ASSERT_NE(r.exit_code, -1) << "still running after 20 s:\n" << r.err;
  EXPECT_NE(r.exit_code, 0) << r.err;
  // The timeout (2 s), the watchdog's look (50 ms), and the plugin's load and set-up: a
  // loaded 2-core machine once took 6.3 s in all. Without the watchdog it never ends.
  EXPECT_LT(r.seconds, 2 + 6.0) << r.err;
  EXPECT_NE(r.err.find("isend call has not returned"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hung"), std::string::npos) << r.err;
}

TEST(BenchNetWatchdog, AHungTestCallEndsAtTheFirstSigterm) {
  if (!built()) GTEST_SKIP() << "p2pscope binary not built (make build)";
  auto args = kSmall;
  args.insert(args.end(), {"--timeout", "60"});
  const HungRun r = bench_net("test", args, 2.0, 20);
  ASSERT_NE(r.exit_code, -1) << "still running 18 s after one SIGTERM:\n" << r.err;
  EXPECT_NE(r.exit_code, 0) << r.err;
  EXPECT_LT(r.seconds, 1 + 1.5) << "seconds from the SIGTERM to the exit\n" << r.err;
  EXPECT_NE(r.err.find("stopped by a signal"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("test call has not returned"), std::string::npos) << r.err;
}

// sweep net loaded its plugin by a copy of bench net's code that set no on_hung_call, so
// a hung call there had no clean end (issue 45 item 4: one plugin loader). Now both go
// through tcp::use_plugin_path: the same error, exit 1, within the timeout.
TEST(BenchNetWatchdog, AHungIsendEndsASweepNetWithinTheTimeoutToo) {
  if (!built()) GTEST_SKIP() << "p2pscope binary not built (make build)";
  const std::string out = ::testing::TempDir() + "watchdog_sweep_" + std::to_string(getpid());
  const HungRun r = run_hung({"sweep", "net"}, "isend",
                             {"--channels-list", "1", "--chunk-list", "64K", "--window-list", "2", "--reps", "1", "--size",
                              "1M", "--iters", "3", "--timeout", "2", "--out", out},
                             0, 20);
  std::filesystem::remove_all(out);
  ASSERT_NE(r.exit_code, -1) << "still running after 20 s:\n" << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_LT(r.seconds, 2 + 6.0) << r.err;
  EXPECT_NE(r.err.find("p2pscope sweep net: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("isend call has not returned"), std::string::npos) << r.err;
}


// Issue 43 item 3: a peer that hangs the plugin's accept (or connect: it chooses what its
// handle names and whether it answers) made the watchdog end the whole server, so the
// hang of turn 4 became an off switch. connect and accept now run bounded: the session
// fails, the call's thread is left behind, and the server serves its next client.
TEST(BenchNetWatchdog, AnAcceptAPeerHangsFailsItsSessionAndTheServerServesTheNext) {
  if (!built()) GTEST_SKIP() << "p2pscope binary not built (make build)";
  const std::string port = std::to_string(p2pscope::test::free_port());
  const std::string dir = ::testing::TempDir() + "watchdog_accept_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string srv_err = dir + "/server.txt", c1_err = dir + "/client1.txt", c2_err = dir + "/client2.txt";
  const std::vector<std::pair<std::string, std::string>> lo = {{"P2PSCOPE_REFNET_IFS", "lo"}};
  auto srv_env = lo;
  srv_env.insert(srv_env.end(), {{"P2PSCOPE_TEST_HANG", "accept"}, {"P2PSCOPE_TEST_HANG_ONCE", "1"}});
  const pid_t srv = spawn_with(srv_env, {"bench", "net", "--plugin", P2PSCOPE_TEST_HANG_PLUGIN, "--server", "--bind",
                                         "127.0.0.1", "-p", port, "--sessions", "2"}, srv_err);
  for (int i = 0; i < 500 && slurp_file(srv_err).find("listening on port") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::vector<std::string> client = {"bench", "net", "--plugin", P2PSCOPE_TEST_HANG_PLUGIN, "-c", "127.0.0.1",
                                           "-p", port, "--size", "1M", "--chunk", "64K", "--iters", "3", "--timeout",
                                           "2"};
  const int first = wait_exit(spawn_with(lo, client, c1_err), 30);
  int status = 0;
  const bool server_alive = waitpid(srv, &status, WNOHANG) == 0;
  // The first client gives up at its own --timeout; the server's bounded accept waits
  // its deadline and a grace, then fails the session: until then a new client is told
  // "busy", and tries again.
  int second = -2;
  for (int tries = 0; server_alive && tries < 20; ++tries) {
    second = wait_exit(spawn_with(lo, client, c2_err), 30);
    if (second == 0 || slurp_file(c2_err).find("busy") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const int server_exit = wait_exit(srv, 20);
  const std::string e = slurp_file(srv_err);
  std::filesystem::remove_all(dir);
  EXPECT_NE(first, 0) << "the first session, whose accept hung, should fail: " << e;
  ASSERT_TRUE(server_alive) << "the server ended with the hung call:\n" << e;
  EXPECT_EQ(second, 0) << "the next client was not served:\n" << e << slurp_file(c2_err);
  EXPECT_NE(e.find("accept(dev 0) call has not returned by its deadline"), std::string::npos) << e;
  EXPECT_NE(e.find("left behind (1 of at most 8"), std::string::npos) << e;
  EXPECT_NE(server_exit, -1) << "the server did not end after its 2 sessions:\n" << e;
}
