// bench net: the session engine (tcp::run_loopback / Server / run_client) over an NCCL
// net plugin, the project's reference plugin (libnccl-net-p2pscope.so), on every ABI
// version it exports. Data is verified byte for byte; the figures per channel, per
// device and in total must add up to what was moved; every fault switch of the plugin
// must end both sides within the timeout, keeping the rounds measured before it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "support/netns.hpp"
#include "support/tcp_session.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"
#include "transport/session/datapath.hpp"
#include "unit/net/net_test_util.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using namespace p2pscope::session;
using nettest::Env;
using p2pscope::test::Both;
using p2pscope::test::over;
namespace pt = p2pscope::test;

namespace {

using Vars = std::initializer_list<std::pair<std::string, std::string>>;

// Loads the reference plugin at exactly ABI `version`, under `vars` (read at init).
std::shared_ptr<net::Plugin> load(int version, Vars vars = {}) { return nettest::load_refnet(vars, version); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
bool has_any(const std::string& text, const std::string& alternatives) {
  for (std::size_t pos = 0; pos <= alternatives.size();) {
    const std::size_t bar = std::min(alternatives.find('|', pos), alternatives.size());
    if (has(text, alternatives.substr(pos, bar - pos))) return true;
    pos = bar + 1;
  }
  return false;
}

// Bytes channel c carries per GPU pair per round: chunks c, c+C, ... (the last one short).
std::uint64_t channel_bytes(const Params& p, std::uint32_t c) {
  std::uint64_t b = 0;
  for (std::uint64_t off = std::uint64_t{c} * p.chunk_bytes; off < p.size_bytes; off += std::uint64_t{p.channels} * p.chunk_bytes)
    b += std::min(p.chunk_bytes, p.size_bytes - off);
  return b;
}

// Per channel, per device (local_addr "dev N name"), per direction: bytes = size x
// rounds, split over channels as the chunks are dealt, channels dealt over devices.
void expect_figures(const SideReport& s, const Params& p, std::uint32_t rounds, std::size_t ndev, bool sends_c2s) {
  const int dirs = p.mode == Mode::bidir ? 2 : 1;
  ASSERT_EQ(s.channels.size(), dirs * p.gpus.size() * p.channels) << s.side;
  std::map<std::string, std::uint64_t> per_dir;
  std::map<std::string, std::uint64_t> per_dev;
  for (const auto& c : s.channels) {
    SCOPED_TRACE(s.side + " " + c.dir + " gpu " + std::to_string(c.gpu) + " channel " + std::to_string(c.channel));
    EXPECT_EQ(c.bytes, channel_bytes(p, static_cast<std::uint32_t>(c.channel)) * rounds);
    EXPECT_EQ(c.sent, (c.dir == "c2s") == sends_c2s);
    EXPECT_GT(c.bytes_per_s, 0);
    EXPECT_GT(c.elapsed_s, 0);
    const std::size_t slot = static_cast<std::size_t>(c.gpu);  // gpus are 0..n-1 here
    const std::size_t dev = (slot * p.channels + static_cast<std::size_t>(c.channel)) % ndev;
    EXPECT_EQ(c.local_addr.rfind("dev " + std::to_string(dev) + " ", 0), 0u) << c.local_addr;
    if (c.sent) {
      EXPECT_GT(c.chunk_lat_p50_ns, 0);
      EXPECT_GE(c.window_max, 1u);
      EXPECT_LE(c.window_max, p.window);
    }
    per_dir[c.dir] += c.bytes;
    per_dev[c.dir + c.local_addr] += c.bytes;
  }
  for (const auto& [dir, bytes] : per_dir) EXPECT_EQ(bytes, p.size_bytes * rounds * p.gpus.size()) << s.side << " " << dir;
  std::uint64_t dev_sum = 0;
  for (const auto& [dev, bytes] : per_dev) dev_sum += bytes;
  EXPECT_EQ(per_dev.size(), dirs * std::min<std::size_t>(ndev, p.gpus.size() * p.channels)) << s.side;
  EXPECT_EQ(dev_sum, p.size_bytes * rounds * p.gpus.size() * dirs);
  // One progress thread per plugin comm.
  EXPECT_EQ(s.workers.size(), dirs * p.gpus.size() * p.channels * p.sockets_per_channel) << s.side;
}

// Server in a thread, client here, both over `local`: each side's own figures and errors.
Both run_both(const Params& p, const LocalOptions& local) { return pt::run_both(p, pt::loopback_server(local), local); }

Params small(Mode mode = Mode::bw) {
  // Chunks do not divide the size, nor channels the chunks.
  return {.mode = mode, .channels = 3, .sockets_per_channel = 2, .window = 3, .size_bytes = (5u << 20) + 12345,
          .chunk_bytes = 300u << 10, .iters = 2, .warmup = 1, .verify = true, .timeout_s = 10};
}

class BenchNetAbi : public ::testing::TestWithParam<int> {};

}  // namespace

// Every ABI version: two devices (lo twice), two GPU slots of host memory, 3 channels x
// 2 comms, a chunk that divides neither the message nor the channels: verified, and
// the figures per channel / device / GPU / total add up to size x rounds.
TEST_P(BenchNetAbi, BandwidthVerifiedFiguresAddUp) {
  const int v = GetParam();
  auto plugin = load(v, {{"P2PSCOPE_REFNET_IFS", "lo,lo"}});
  ASSERT_EQ(plugin->version(), v);
  ASSERT_EQ(plugin->devices().size(), 2u);
  Params p = small();
  p.gpus = {0, 1};
  const Results r = run_loopback(p, over(plugin), over(plugin));
  ASSERT_EQ(r.failure, "");
  EXPECT_EQ(r.params.transport, "net plugin p2pscope-refnet v" + std::to_string(v));
  EXPECT_EQ(r.rounds_completed, p.iters);
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters) * p.gpus.size());
  expect_figures(r.client, p, p.iters, 2, true);
  expect_figures(r.server, p, p.iters, 2, false);
  EXPECT_EQ(r.client.round_tx_bytes_per_s.size(), p.iters);
  EXPECT_EQ(r.server.round_rx_bytes_per_s.size(), p.iters);
  EXPECT_GT(r.client.tx_bytes_per_s, 0);
  EXPECT_GT(r.server.rx_bytes_per_s, 0);
  EXPECT_EQ(r.client.rx_bytes_per_s, 0);  // bw: nothing came back
  const std::string text = format_text(r);
  EXPECT_TRUE(has(text, "Per NIC")) << text;
  const auto j = to_json(r);
  EXPECT_GT(j["client"]["tx_bytes_per_s"].get<double>(), 0);
  EXPECT_EQ(j["client"]["channels"].size(), p.channels * p.gpus.size());
}

// Both directions at once: each side sends on its connected comms and receives on
// the ones it accepted; both verify what they received.
TEST_P(BenchNetAbi, BidirVerifiedBothWays) {
  const int v = GetParam();
  auto plugin = load(v, {{"P2PSCOPE_REFNET_IFS", "lo,lo"}});
  Params p = small(Mode::bidir);
  p.channels = 2;
  p.chunk_bytes = (1u << 20) + 3;
  p.window = 2;
  const Results r = run_loopback(p, over(plugin), over(plugin));
  ASSERT_EQ(r.failure, "");
  EXPECT_EQ(r.client.verified_bytes, p.size_bytes * (p.warmup + p.iters));
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters));
  expect_figures(r.client, p, p.iters, 2, true);
  expect_figures(r.server, p, p.iters, 2, false);
  EXPECT_GT(r.client.tx_bytes_per_s, 0);
  EXPECT_GT(r.client.rx_bytes_per_s, 0);
  EXPECT_GT(r.server.tx_bytes_per_s, 0);
  EXPECT_GT(r.server.rx_bytes_per_s, 0);
}

INSTANTIATE_TEST_SUITE_P(Versions, BenchNetAbi, ::testing::Range(net::kMinAbiVersion, net::kMaxAbiVersion + 1),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

// UNPACK emulation: receives land in the plugin's bounce area, 4 KiB pages with
// adjacent ones swapped; only an engine that follows the scatter list (and hands the
// slot back with irecvConsumed) gets the bytes right. A window over the plugin's 16
// UNPACK slots, chunks that are not whole pages.
TEST(BenchNet, UnpackEmulationHostMemoryVerified) {
  auto plugin = load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_UNPACK", "1"}});
  ASSERT_EQ(plugin->device(0).device_type, net::DeviceType::unpack);
  Params p = small(Mode::bidir);
  p.channels = 2;
  p.sockets_per_channel = 1;
  p.chunk_bytes = (1u << 20) + 4096 + 100;
  p.window = 24;
  const Results r = run_loopback(p, over(plugin), over(plugin));
  ASSERT_EQ(r.failure, "");
  EXPECT_EQ(r.client.verified_bytes, p.size_bytes * (p.warmup + p.iters));
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters));
  expect_figures(r.server, p, p.iters, 1, false);
}

// NULL requests for a while: the engine tries again and the run completes, verified.
TEST(BenchNetFaults, NullRequestsForAWhileStillComplete) {
  auto plugin = load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_NULL_REQUESTS", "300"}});
  Params p = small(Mode::bidir);
  p.timeout_s = 5;
  const Results r = run_loopback(p, over(plugin), over(plugin));
  ASSERT_EQ(r.failure, "");
  EXPECT_EQ(r.rounds_completed, p.iters);
  EXPECT_EQ(r.client.verified_bytes, p.size_bytes * (p.warmup + p.iters));
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters));
}

// A plugin with a fixed pool of requests fails a post past it (NCCL's socket transport;
// google/nccl-fastsocket, a v6 plugin, has 16) instead of answering NULL. The same
// window of 16 over a pool of 8: v11 may post 32 per comm and meets the failure; v6
// headers promise 8, so the engine keeps each comm within 8, says so, and completes.
TEST(BenchNet, WindowOverTheRequestsAnOldAbiPromisesStaysWithinThem) {
  static_assert(net::max_requests_per_comm(6) == 8 && net::max_requests_per_comm(7) == 8 &&
                net::max_requests_per_comm(8) == 32 && net::max_requests_per_comm(11) == 32);
  Params p = small();
  p.channels = 1;
  p.sockets_per_channel = 1;
  p.chunk_bytes = 64u << 10;
  p.window = 16;
  {
    auto plugin = load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_MAX_REQUESTS", "8"}});
    const Results r = run_loopback(p, over(plugin), over(plugin));
    // Whichever side posts its 9th first fails; the other then sees its peer go.
    EXPECT_TRUE(has(r.failure, "(request #8 of 65536 bytes) failed: ncclInternalError") &&
                has(r.failure, "unable to allocate requests"))
        << r.failure;
  }
  auto plugin = load(6, {{"P2PSCOPE_REFNET_MAX_REQUESTS", "8"}});
  const Results r = run_loopback(p, over(plugin), over(plugin));
  ASSERT_EQ(r.failure, "");
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters));
  ASSERT_EQ(r.client.channels.size(), 1u);
  EXPECT_GE(r.client.channels[0].window_max, 1u);
  EXPECT_LE(r.client.channels[0].window_max, 8u);
  bool warned = false;
  for (const auto& w : r.client.warnings) warned = warned || has(w, "--window 16 is over the 8 requests per comm");
  EXPECT_TRUE(warned) << ::testing::PrintToString(r.client.warnings);
}

// A plugin that reads its socket until EAGAIN fails a receive whose peer closed, last
// bytes in or not (fastsocket's last echo of a latency run, about 1 run in 6). Reverse
// bw into a slow client: the server's sends are done at once, so closing its comms
// with its figures would fail the client's last receive; it waits for the client.
TEST(BenchNet, ServerKeepsItsCommsOpenUntilTheClientHasItsLastBytes) {
  auto plugin =
      load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_EOF_FAILS", "1"}, {"P2PSCOPE_REFNET_TEST_DELAY_US", "2000"}});
  Params p = small();
  p.reverse = true;
  p.channels = 1;
  p.sockets_per_channel = 1;
  p.size_bytes = 1u << 20;
  p.chunk_bytes = 64u << 10;
  const Both b = run_both(p, over(plugin));
  ASSERT_EQ(b.client_error, "");
  ASSERT_EQ(b.server_error, "");
  EXPECT_EQ(b.client.failure, "");
  EXPECT_EQ(b.server.failure, "");
  EXPECT_EQ(b.client.rounds_completed, p.iters);
  EXPECT_EQ(b.client.client.verified_bytes, p.size_bytes * (p.warmup + p.iters));
}

// NULL forever: nothing can be posted; both sides give up at the timeout and say so.
TEST(BenchNetFaults, NullRequestsForeverFailBothSidesAtTheTimeout) {
  auto plugin = load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_NULL_REQUESTS", "forever"}});
  Params p = small();
  p.timeout_s = 2;
  const Both b = run_both(p, over(plugin));
  ASSERT_EQ(b.client_error, "");
  ASSERT_EQ(b.server_error, "");
  // Both sides stall at once: each names its own stall, or the other's when the other's
  // reason reaches it first over the watched control connection (fa3cf1f), with its cause.
  EXPECT_TRUE(has(b.client.failure, "client: ") &&
              (has(b.client.failure, "no progress for 2.0 s while posting a send") ||
               (has(b.client.failure, "the server failed the round") &&
                has(b.client.failure, "no progress for 2.0 s while posting a receive"))))
      << b.client.failure;
  EXPECT_TRUE(has(b.server.failure, "server: ") &&
              (has(b.server.failure, "no progress for 2.0 s while posting a receive") ||
               (has(b.server.failure, "the client failed the round") &&
                has(b.server.failure, "no progress for 2.0 s while posting a send"))))
      << b.server.failure;
  EXPECT_TRUE(has(b.client.failure_cause, "timed out")) << b.client.failure_cause;
  EXPECT_EQ(b.client.rounds_completed, 0u);
  EXPECT_EQ(b.server.rounds_completed, 0u);
  EXPECT_GT(b.client_s, 1.9);  // it did wait for the timeout
  EXPECT_LT(b.client_s, 2 + 2.5);
  EXPECT_LT(b.server_s, 2 + 2.5);
}

// A fault in round 3 (after the warm-up and two timed rounds): the failing side names
// the plugin, the call and the injected cause, the other side stops too, and both
// keep the two timed rounds (their bytes) that completed before it.
struct FaultCase {
  const char* name;
  const char* var;     // FAIL_AFTER_BYTES or DIE_AFTER_BYTES
  const char* side;    // FAULT_SIDE
  const char* faulty;  // what the failing side's message holds
  const char* other;   // what the other side's message holds (alternatives split by '|')
};

class BenchNetMidFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(BenchNetMidFault, BothSidesStopAndKeepTheRoundsMeasured) {
  const FaultCase& f = GetParam();
  Params p;
  p.channels = 2;
  p.size_bytes = 8u << 20;
  p.chunk_bytes = 1u << 20;
  p.window = 4;
  p.iters = 6;
  p.warmup = 1;
  p.timeout_s = 3;
  const std::uint64_t per_comm_round = p.size_bytes / p.channels;
  const std::string after = std::to_string(3 * per_comm_round + (1u << 19));  // inside round 3
  auto plugin = load(net::kMaxAbiVersion, {{std::string("P2PSCOPE_REFNET_") + f.var, after},
                                           {"P2PSCOPE_REFNET_FAULT_SIDE", f.side}});
  const Both b = run_both(p, over(plugin));
  ASSERT_EQ(b.client_error, "");
  ASSERT_EQ(b.server_error, "");
  const bool client_faulty = std::string(f.side) == "send";  // bw: the client sends
  const std::string& mine = client_faulty ? b.client.failure : b.server.failure;
  const std::string& theirs = client_faulty ? b.server.failure : b.client.failure;
  EXPECT_TRUE(has(mine, "p2pscope-refnet") && has(mine, f.faulty)) << mine;
  EXPECT_TRUE(has_any(theirs, f.other)) << theirs;
  for (const Results* r : {&b.client, &b.server}) {
    const SideReport& s = r == &b.client ? r->client : r->server;
    SCOPED_TRACE(s.side + ": " + r->failure);
    EXPECT_EQ(r->rounds_completed, 2u);
    ASSERT_EQ(s.channels.size(), p.channels);
    for (const auto& c : s.channels) EXPECT_EQ(c.bytes, 2 * per_comm_round);
    EXPECT_EQ((r == &b.client ? s.round_tx_bytes_per_s : s.round_rx_bytes_per_s).size(), 2u);
  }
  EXPECT_LT(b.client_s, p.timeout_s + 2.5);
  EXPECT_LT(b.server_s, p.timeout_s + 2.5);
}

INSTANTIATE_TEST_SUITE_P(
    Switches, BenchNetMidFault,
    ::testing::Values(FaultCase{"ErrorOnSend", "FAIL_AFTER_BYTES", "send", "injected error", "closed|the client failed the round: client: "},
                      FaultCase{"ErrorOnReceive", "FAIL_AFTER_BYTES", "recv", "injected error", "peer failed: server: |ncclRemoteError"},
                      FaultCase{"SenderDies", "DIE_AFTER_BYTES", "send", "comm dies", "closed by the peer"},
                      FaultCase{"ReceiverDies", "DIE_AFTER_BYTES", "recv", "comm dies", "peer failed: server: |ncclRemoteError"}),
    [](const auto& info) { return std::string(info.param.name); });

// Bad input: refused before any data moves, saying what to do.
TEST(BenchNetBadInput, GpuMemoryOfAHostOnlyPluginNamesWhatItOffers) {
  auto plugin = load(net::kMaxAbiVersion);
  Params p = small();
  p.mem = MemKind::gpu;
  try {
    run_loopback(p, over(plugin), over(plugin));
    FAIL() << "GPU memory accepted by a host-only plugin";
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "p2pscope-refnet") && has(e.what(), "offers host memory, not CUDA") &&
                has(e.what(), "--mem host"))
        << e.what();
  }
}

TEST(BenchNetBadInput, ChunkOverThePluginsMaxP2pBytes) {
  auto plugin = load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_UNPACK", "1"}});  // 4 MiB per receive
  Params p = small();
  p.size_bytes = 16u << 20;
  p.chunk_bytes = 8u << 20;
  try {
    run_loopback(p, over(plugin), over(plugin));
    FAIL() << "a chunk over max_p2p_bytes accepted";
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "--chunk 8") && has(e.what(), "carries in one request (4") &&
                has(e.what(), "smaller --chunk"))
        << e.what();
  }
}

// Latency mode: a ping on the link's comm, the echo on a second comm the other way;
// every echo checked against the pattern, one sample per ping.
TEST(BenchNet, LatencyModePingPongsOverTwoCommsPerLink) {
  auto plugin = load(net::kMaxAbiVersion);
  Params p;
  p.mode = Mode::latency;
  p.size_bytes = 4096 + 3;
  p.chunk_bytes = p.size_bytes;
  p.channels = 2;
  p.iters = 50;
  p.warmup = 5;
  p.verify = true;
  p.timeout_s = 10;
  const Results r = run_loopback(p, over(plugin), over(plugin));
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_EQ(r.client.latency_ns.size(), 2u * p.iters);  // both channels' pings
  for (double ns : r.client.latency_ns) {
    EXPECT_GT(ns, 0);
    EXPECT_LT(ns, 1e9);
  }
  ASSERT_EQ(r.client.workers.size(), 2u);
  for (const auto& w : r.client.workers) EXPECT_EQ(w.role, "tx");
}

// A bench net client at a bench tcp server (and the other way round): refused in the
// handshake, both sides saying which data paths met.
TEST(BenchNetBadInput, NetClientAgainstTcpServerRefusedWithTheReason) {
  auto plugin = load(net::kMaxAbiVersion);
  for (bool net_client : {true, false}) {
    SCOPED_TRACE(net_client ? "net client, tcp server" : "tcp client, net server");
    const Both b = pt::run_both(small(), pt::loopback_server(net_client ? LocalOptions{} : over(plugin)),
                                net_client ? over(plugin) : LocalOptions{});
    const std::string &cerr = b.client_error, &serr = b.server_error;
    const std::string mine = net_client ? "net plugin p2pscope-refnet v11" : "sockets";
    const std::string theirs = net_client ? "sockets" : "net plugin p2pscope-refnet v11";
    EXPECT_TRUE(has(cerr, "refused") && has(cerr, "the client moves data over " + mine + ", this server over " + theirs) &&
                has(cerr, "bench tcp and bench net servers are separate"))
        << cerr;
    EXPECT_TRUE(has(serr, "refused") && has(serr, "this server over " + theirs)) << serr;
  }
}

// Two hosts in one machine: the server in a network namespace joined to this one by
// two veth pairs (one plugin device per veth on each side), the client here. The
// server runs in a child process: the plugin's devices are the interfaces its process
// sees at init, so each side needs its own plugin instance in its own namespace.
namespace {


std::uint64_t nic_counter(const std::string& nic, const char* what) {
  std::ifstream in("/sys/class/net/" + nic + "/statistics/" + what);
  std::uint64_t v = 0;
  in >> v;
  return v;
}

// Reads what the child writes until it closes the pipe, `want` bytes came or
// `timeout_s` passed.
std::string read_all(int fd, double timeout_s, std::size_t want = SIZE_MAX) {
  std::string out;
  const auto t0 = std::chrono::steady_clock::now();
  char buf[4096];
  while (out.size() < want && pt::seconds_since(t0) < timeout_s) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, want - out.size()));
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// Each side's links listen on both NICs: a peer's other NIC is taken only from a peer that
// proved the token, which covers the addresses it vouches for (issue 43 item 3).
const std::string kTwoNicsToken = "two-nics";

class BenchNetNetns : public ::testing::Test, protected p2pscope::test::TwoVethNamespace {
 protected:
  void SetUp() override {
    const std::string why = create("p2nt", "p2nc", "p2ns", 232);  // 10.232/16: not test_netns.cpp's 10.231
    if (!why.empty()) GTEST_SKIP() << why;
  }
  void TearDown() override { destroy(); }

  // The child: enters the namespace, loads the plugin on s0,s1, serves one session;
  // writes its port on `port_fd`, then its outcome (or error) on `out_fd`.
  [[noreturn]] void serve_in_namespace(int port_fd, int out_fd) {
    std::string out;
    try {
      const int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) throw Error("setns into " + ns + " failed");
      ::close(fd);
      auto plugin = load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_IFS", s0 + "," + s1}});
      if (plugin->devices().size() != 2) throw Error("the plugin sees " + std::to_string(plugin->devices().size()) +
                                                     " devices in the namespace, not 2");
      ServerOptions so;
      so.bind_addrs = {b0};
      so.port = 0;
      so.accept_timeout_s = 15;
      so.local = over(plugin);
      so.token = kTwoNicsToken;
      Server srv(so);
      const std::uint16_t port = srv.port();
      if (::write(port_fd, &port, sizeof port) != sizeof port) throw Error("cannot write the port");
      const Results r = srv.serve_one();
      out = "served" + (r.failure.empty() ? "" : ": " + r.failure);
    } catch (const std::exception& e) {
      out = std::string("error: ") + e.what();
    }
    if (::write(out_fd, out.data(), out.size()) < 0) _exit(2);
    _exit(0);
  }

};

}  // namespace

TEST_F(BenchNetNetns, ServerInANamespaceClientOutsideBidirVerifiedOverBothVeths) {
  int port_pipe[2], out_pipe[2];
  ASSERT_EQ(::pipe(port_pipe), 0);
  ASSERT_EQ(::pipe(out_pipe), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(port_pipe[0]);
    ::close(out_pipe[0]);
    serve_in_namespace(port_pipe[1], out_pipe[1]);
  }
  ::close(port_pipe[1]);
  ::close(out_pipe[1]);
  struct Reap {
    pid_t pid;
    int fds[2];
    ~Reap() {
      ::kill(pid, SIGKILL);  // gone already when all went well
      ::waitpid(pid, nullptr, 0);
      ::close(fds[0]);
      ::close(fds[1]);
    }
  } reap{child, {port_pipe[0], out_pipe[0]}};
  std::uint16_t port = 0;
  const std::string port_bytes = read_all(port_pipe[0], 10, sizeof port);
  ASSERT_EQ(port_bytes.size(), sizeof port) << "the server in the namespace did not start: " << read_all(out_pipe[0], 1);
  std::memcpy(&port, port_bytes.data(), sizeof port);

  auto plugin = load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_IFS", c0 + "," + c1}});
  ASSERT_EQ(plugin->devices().size(), 2u);
  Params p = small(Mode::bidir);
  p.channels = 4;
  p.chunk_bytes = 640u << 10;
  p.size_bytes = (6u << 20) + 777;
  p.timeout_s = 5;
  const std::uint64_t tx0 = nic_counter(c0, "tx_bytes"), tx1 = nic_counter(c1, "tx_bytes");
  const std::uint64_t rx0 = nic_counter(c0, "rx_bytes"), rx1 = nic_counter(c1, "rx_bytes");
  ClientOptions co;
  co.hosts = {b0};
  co.port = port;
  co.local = over(plugin);
  co.token = kTwoNicsToken;
  Results r;
  try {
    r = run_client(co, p);
  } catch (const Error& e) {
    FAIL() << e.what() << "\nserver: " << read_all(out_pipe[0], 1);
  }
  EXPECT_EQ(read_all(out_pipe[0], 10), "served");
  ASSERT_EQ(r.failure, "");
  const std::uint64_t rounds = p.warmup + p.iters;
  EXPECT_EQ(r.client.verified_bytes, p.size_bytes * rounds);
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * rounds);
  expect_figures(r.client, p, p.iters, 2, true);
  expect_figures(r.server, p, p.iters, 2, false);
  for (const auto& c : r.client.channels) EXPECT_EQ(c.nic, c.channel % 2 == 0 ? c0 : c1) << c.dir << " " << c.channel;
  for (const auto& c : r.server.channels) EXPECT_EQ(c.nic, c.channel % 2 == 0 ? s0 : s1) << c.dir << " " << c.channel;
  // Channels 0 and 2 went over the first veth, 1 and 3 over the second, both ways.
  const std::uint64_t even = (channel_bytes(p, 0) + channel_bytes(p, 2)) * rounds;
  const std::uint64_t odd = (channel_bytes(p, 1) + channel_bytes(p, 3)) * rounds;
  EXPECT_GE(nic_counter(c0, "tx_bytes") - tx0, even);
  EXPECT_GE(nic_counter(c1, "tx_bytes") - tx1, odd);
  EXPECT_GE(nic_counter(c0, "rx_bytes") - rx0, even);
  EXPECT_GE(nic_counter(c1, "rx_bytes") - rx1, odd);
  EXPECT_LT(nic_counter(c1, "tx_bytes") - tx1, odd + (1u << 20));  // no other channel's data on it
}
