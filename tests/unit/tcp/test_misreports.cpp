// Issue 32 item 13: bench net's misreports under faults, named truly. Each test failed on
// the code before: a killed peer read "I/O error"; a plugin client's send rate counted
// local completions (3.8 GB/s on a 4 MB/s link); a server out of file descriptors read
// "peer closed" at the client; a lying server's figures were printed, exit 0.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"
#include "support/hooked_path.hpp"
#include "support/server_thread.hpp"
#include "support/tcp_session.hpp"
#include "unit/net/net_test_util.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using p2pscope::test::HookedPath;
using p2pscope::test::over;
namespace pt = p2pscope::test;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A server in a child process, serving one session; set up by `setup` in the child (a
// plugin loaded after the fork: its threads do not survive one). It listens on a port of
// its own choosing and tells it through a pipe: a port picked by the parent could be
// taken by a parallel test before the child binds it (CI read 5 s of "connection
// refused"). A child that fails to start says why instead.
struct Child {
  pid_t pid = -1;
  std::uint16_t port = 0;
  std::string why;  // the child's error when port is 0
};

template <class Setup>
Child forked_server(Setup setup) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string said;
    try {
      ServerOptions so = pt::loopback_server();
      so.port = 0;
      setup(so);
      Server srv(so);
      said = std::to_string(srv.port()) + "\n";
      (void)!::write(fds[1], said.data(), said.size());
      ::close(fds[1]);
      srv.serve_one();
    } catch (const std::exception& e) {
      said = "0 " + std::string(e.what()) + "\n";
      (void)!::write(fds[1], said.data(), said.size());
    }
    _exit(0);
  }
  ::close(fds[1]);
  Child c{pid, 0, ""};
  std::string line;
  char ch = 0;
  while (::read(fds[0], &ch, 1) == 1 && ch != '\n') line += ch;
  ::close(fds[0]);
  c.port = static_cast<std::uint16_t>(std::atoi(line.c_str()));
  if (c.port == 0) c.why = line.empty() ? "the child server ended without a word" : line;
  return c;
}

// run_client against the child's server (it listens before it says its port).
Results client_of(ClientOptions co, const Params& p, std::string& error) {
  try {
    return run_client(co, p);
  } catch (const Error& e) {
    error = e.what();
    return {};
  }
}

}  // namespace

TEST(BenchNetMisreports, AKilledServerIsThePeerClosingNotAnIoError) {
  const Child server = forked_server([](ServerOptions& so) { so.local = over(nettest::load_refnet()); });
  const pid_t child = server.pid;
  ASSERT_GT(child, 0);
  ASSERT_NE(server.port, 0) << server.why;
  std::thread killer([child] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    kill(child, SIGKILL);
  });
  ClientOptions co;
  co.port = server.port;
  co.local = over(nettest::load_refnet());
  std::string error;
  const Params p{.size_bytes = 64u << 20, .chunk_bytes = 1u << 20, .iters = 100000, .timeout_s = 5};
  const Results r = client_of(co, p, error);
  killer.join();
  waitpid(child, nullptr, 0);
  ASSERT_FALSE(r.failure.empty()) << error;
  EXPECT_TRUE(r.failure_cause == "peer closed the connection" || r.failure_cause == "connection reset by the peer")
      << r.failure_cause << " / " << r.failure;
  EXPECT_TRUE(has(r.failure, "its process ended")) << r.failure;
}

// The server receives each round 200 ms late; the round (64 KiB) fits the sockets'
// buffers, so the client's sends complete locally at once. Delivered, it is at most
// 64 KiB / 0.2 s = 0.33 MB/s; the old figure was hundreds of MB/s.
TEST(BenchNetMisreports, AClientsSendRateCountsWhatTheReceiverConfirmed) {
  const auto plugin = nettest::load_refnet();
  ServerOptions so;
  so.local.path = std::make_shared<HookedPath>(
      make_plugin_path(plugin),
      [](session::Session&, std::uint32_t) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, nullptr);
  pt::ServerThread srv(so);
  ClientOptions co;
  co.port = srv.port();
  co.local = over(plugin);
  const Params p{.size_bytes = 64u << 10, .chunk_bytes = 16u << 10, .iters = 3, .warmup = 0, .timeout_s = 5};
  const Results r = run_client(co, p);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_LT(r.client.tx_bytes_per_s, 1e6) << "the client's send rate counts sends the server had not received";
  EXPECT_GT(r.client.tx_bytes_per_s, 0.1e6);
  for (const auto& c : r.client.channels) {
    if (!c.sent) continue;
    EXPECT_GT(c.elapsed_s, 3 * 0.2 * 0.9) << "a channel's time ends when its bytes are confirmed";
  }
}

// The server may open 16 descriptors more than it has at the start: a session of 64
// links cannot be set up, and the client is told why.
TEST(BenchNetMisreports, AServerOutOfFileDescriptorsSaysSo) {
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan the forked server's first failure at 16 spare descriptors is the
  // sanitizer's own (it opens files to report), not the session's: checked without it.
  GTEST_SKIP() << "not under AddressSanitizer: its own descriptors make the limit's first victim unpredictable";
#endif
  for (const bool net : {false, true}) {
    SCOPED_TRACE(net ? "bench net" : "bench tcp");
    const Child server = forked_server([net](ServerOptions& so) {
      if (net) so.local = over(nettest::load_refnet());
      std::size_t open = 0;
      for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) open += e.exists() ? 1 : 0;
      const rlimit rl{open + 16, open + 16};
      setrlimit(RLIMIT_NOFILE, &rl);
    });
    const pid_t child = server.pid;
    ASSERT_GT(child, 0);
    ASSERT_NE(server.port, 0) << server.why;
    ClientOptions co;
    co.port = server.port;
    if (net) co.local = over(nettest::load_refnet());
    std::string error;
    const Params p{.channels = 64, .size_bytes = 64u << 20, .chunk_bytes = 1u << 20, .iters = 1, .timeout_s = 3};
    const Results r = client_of(co, p, error);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    const std::string said = error + r.failure;
    EXPECT_TRUE(has(said, "ran out of file descriptors")) << said;
    EXPECT_TRUE(has(said, "ulimit -n")) << said;
  }
}

// A server that says it received ten times the bytes it did, or sent 100 times faster
// than this client received: the client refuses its figures (a failure, so exit 1 at the
// command) and reports none of them.
TEST(BenchNetMisreports, ALyingServersFiguresAreRefused) {
  struct Lie {
    const char* what;
    bool reverse;
    HookedPath::Hook after;
  };
  const Lie lies[] = {
      {"bytes", false,
       [](session::Session& s, std::uint32_t) {
         for (auto& ch : s.chans) ch->round_bytes *= 10;
       }},
      {"rate", true,
       [](session::Session& s, std::uint32_t) {
         for (auto& ch : s.chans)
           if (ch->round_bytes) ch->round_first_ns = ch->round_last_ns - (ch->round_last_ns - ch->round_first_ns) / 100;
       }},
  };
  for (const Lie& lie : lies) {
    SCOPED_TRACE(lie.what);
    ServerOptions so;
    so.local.path = std::make_shared<HookedPath>(make_socket_path(), nullptr, lie.after);
    pt::ServerThread srv(so);
    ClientOptions co;
    co.port = srv.port();
    // Rounds of 0.1 s or more on loopback, long enough to judge rates (kJudgedRoundS, 50
    // ms): 1 GiB, since 256 MiB took 45 ms on an idle 2-core machine once bench tcp's
    // receiver stopped waking per segment (fd2d544), and the lie went unjudged.
    Params p{.size_bytes = 1u << 30, .chunk_bytes = 1u << 20, .iters = 2, .warmup = 0, .timeout_s = 10};
    p.reverse = lie.reverse;
    const Results r = run_client(co, p);
    EXPECT_EQ(r.failure_cause, "server's figures refused") << r.failure;
    EXPECT_TRUE(has(r.failure, "disagree with this client's")) << r.failure;
    EXPECT_TRUE(r.server.channels.empty());
    EXPECT_EQ(r.server.tx_bytes_per_s + r.server.rx_bytes_per_s, 0);
  }
  // An honest server's figures pass the same checks.
  pt::ServerThread honest;
  ClientOptions co;
  co.port = honest.port();
  for (const bool reverse : {false, true}) {
    Params p{.size_bytes = 256u << 20, .chunk_bytes = 1u << 20, .iters = 2, .warmup = 0, .timeout_s = 10};
    p.reverse = reverse;
    const Results r = run_client(co, p);
    EXPECT_TRUE(r.failure.empty()) << r.failure;
  }
}
