// Several "NICs": a network namespace holding the server, joined to this one by two
// veth pairs the test creates (and removes). The server runs in a thread that
// entered the namespace (setns is per thread; its workers inherit it).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <map>
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/netns.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;

namespace {

using p2pscope::test::netns_sh;
int sh(const std::string& cmd) { return netns_sh(cmd); }

class TcpNetns : public ::testing::Test, protected p2pscope::test::TwoVethNamespace {
 protected:
  void SetUp() override {
    const std::string why = create("p2pt", "p2c", "p2s", 231);
    if (!why.empty()) GTEST_SKIP() << why;
  }
  void TearDown() override { destroy(); }

  // Runs serve_one inside the namespace; returns its error text ("" on success).
  std::thread serve(Results* out, std::string* err, std::uint16_t* port, double accept_timeout) {
    ready_ = 0;
    std::thread t([this, out, err, port, accept_timeout] {
      try {
        const int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) throw Error("setns into " + ns + " failed");
        close(fd);
        ServerOptions so;
        so.bind_addrs = {b0, b1};
        so.port = 0;
        so.accept_timeout_s = accept_timeout;
        Server srv(so);
        *port = srv.port();
        ready_ = 1;
        *out = srv.serve_one();
      } catch (const std::exception& e) {
        *err = e.what();
        ready_ = 2;
      }
    });
    while (ready_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return t;
  }

 private:
  std::atomic<int> ready_{0};
};

}  // namespace

TEST_F(TcpNetns, ChannelsSpreadOverTwoVethNics) {
  Results server;
  std::string serr;
  std::uint16_t port = 0;
  std::thread t = serve(&server, &serr, &port, 10);
  ASSERT_EQ(serr, "");
  Params p;
  p.channels = 4;
  p.size_bytes = 32u << 20;  // 64 chunks a round: every NIC gets some, however the threads start
  p.chunk_bytes = 512u << 10;
  p.window = 4;
  p.iters = 2;
  p.verify = true;
  p.timeout_s = 5;
  ClientOptions co;
  co.hosts = {b0, b1};
  co.port = port;
  co.local.nics = {c0, c1};
  const Results r = run_client(co, p);
  t.join();
  ASSERT_EQ(serr, "");
  ASSERT_EQ(r.client.channels.size(), 4u);
  std::map<std::string, double> per_nic;
  for (const auto& c : r.client.channels) {
    // channel c on NIC c % 2, talking to the server's address on that link
    EXPECT_EQ(c.nic, c.channel % 2 == 0 ? c0 : c1);
    EXPECT_EQ(c.peer_addr.substr(0, c.peer_addr.find(':')), c.channel % 2 == 0 ? b0 : b1);
    per_nic[c.nic] += c.bytes_per_s;
  }
  // Chunks are dealt to whichever channel has room, so one channel may carry none on a
  // loaded machine (it flaked so with 16 chunks a round); both NICs carry data.
  EXPECT_GT(per_nic[c0], 0);
  EXPECT_GT(per_nic[c1], 0);
  for (const auto& c : r.server.channels) EXPECT_EQ(c.nic, c.channel % 2 == 0 ? s0 : s1);
  EXPECT_EQ(r.server.verified_bytes, 3 * p.size_bytes);
}

// The link goes down after several rounds: both sides stop within their timeouts and
// return what they measured, and the client, whose NIC now says "down", names the link
// (not "peer process gone").
TEST_F(TcpNetns, LinkSetDownStopsBothSidesWithinTheTimeout) {
  Results server;
  std::string serr;
  std::uint16_t port = 0;
  std::thread t = serve(&server, &serr, &port, 10);
  ASSERT_EQ(serr, "");
  Params p;
  p.channels = 2;
  p.size_bytes = 8u << 20;
  p.chunk_bytes = 1u << 20;
  p.iters = 100000;  // runs until the link goes down
  p.timeout_s = 2;
  ClientOptions co;
  co.hosts = {b0, b1};
  co.port = port;
  co.local.nics = {c0, c1};
  std::thread downer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    sh("ip link set " + c0 + " down");
  });
  const auto t0 = std::chrono::steady_clock::now();
  Results r;
  std::string cerr;
  try {
    r = run_client(co, p);
  } catch (const Error& e) {
    cerr = e.what();
  }
  const double client_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  downer.join();
  t.join();
  const double both_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(cerr, "") << "a failure after set-up is a result, not an exception";
  EXPECT_EQ(serr, "") << "a failure after set-up is a result, not an exception";
  EXPECT_LT(client_s, 1.5 + 2 * 2 + 2) << r.failure;
  EXPECT_LT(both_s, 1.5 + 2 * 2 + 4) << server.failure;
  ASSERT_FALSE(r.failure.empty());
  EXPECT_FALSE(server.failure.empty());
  EXPECT_NE(r.failure_cause.find("link down (NIC " + c0), std::string::npos)
      << r.failure_cause << " / " << r.failure;
  // The rounds before the link went down are kept, with their bytes.
  EXPECT_GE(r.rounds_completed, 2u) << r.failure;
  std::uint64_t sent = 0;
  for (const auto& c : r.client.channels) sent += c.bytes;
  EXPECT_GE(sent, r.rounds_completed * p.size_bytes);
  EXPECT_GE(server.rounds_completed, 2u) << server.failure;
}
