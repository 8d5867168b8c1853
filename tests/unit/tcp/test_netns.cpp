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
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;

namespace {

int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

class TcpNetns : public ::testing::Test {
 protected:
  std::string ns, c0, c1, s0, s1;
  std::string a0, b0, a1, b1;

  void SetUp() override {
    const std::string id = std::to_string(getpid() % 100000);
    // Subnets per process: ctest may run both tests at once, each in its own process.
    const int net = 2 * (getpid() % 120) + 1;
    const std::string n0 = "10.231." + std::to_string(net) + ".", n1 = "10.231." + std::to_string(net + 1) + ".";
    a0 = n0 + "1";
    b0 = n0 + "2";
    a1 = n1 + "1";
    b1 = n1 + "2";
    ns = "p2pt" + id;
    c0 = "p2c0x" + id;  // this side (client) ends
    c1 = "p2c1x" + id;
    s0 = "p2s0x" + id;  // namespace (server) ends
    s1 = "p2s1x" + id;
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    if (sh("ip netns add " + ns) != 0) GTEST_SKIP() << "`ip netns add` failed: no namespaces here";
    created_ = true;
    const std::string x = "ip netns exec " + ns + " ";
    const bool ok = sh("ip link add " + c0 + " type veth peer name " + s0 + " netns " + ns) == 0 &&
                    sh("ip link add " + c1 + " type veth peer name " + s1 + " netns " + ns) == 0 &&
                    sh("ip addr add " + a0 + "/24 dev " + c0) == 0 && sh("ip addr add " + a1 + "/24 dev " + c1) == 0 &&
                    sh(x + "ip addr add " + b0 + "/24 dev " + s0) == 0 &&
                    sh(x + "ip addr add " + b1 + "/24 dev " + s1) == 0 && sh("ip link set " + c0 + " up") == 0 &&
                    sh("ip link set " + c1 + " up") == 0 && sh(x + "ip link set " + s0 + " up") == 0 &&
                    sh(x + "ip link set " + s1 + " up") == 0 && sh(x + "ip link set lo up") == 0;
    if (!ok) GTEST_SKIP() << "could not set up veth pairs (ip link add ... type veth failed)";
  }

  void TearDown() override {
    if (!created_) return;
    sh("ip link del " + c0);  // deleting one end removes its peer
    sh("ip link del " + c1);
    sh("ip netns del " + ns);
  }

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
  bool created_ = false;
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
  p.size_bytes = 8u << 20;
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
  for (const auto& c : r.client.channels) {
    // channel c on NIC c % 2, talking to the server's address on that link
    EXPECT_EQ(c.nic, c.channel % 2 == 0 ? c0 : c1);
    EXPECT_EQ(c.peer_addr.substr(0, c.peer_addr.find(':')), c.channel % 2 == 0 ? b0 : b1);
    EXPECT_GT(c.bytes_per_s, 0);
  }
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
