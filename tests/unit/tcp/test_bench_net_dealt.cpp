// bench net deals chunks as they go where the receiver need not know which chunk comes
// (host memory, bandwidth modes, no --verify; issue 34), as bench tcp does: every byte
// of every round still arrives once, with every request limit, UNPACK and NULL
// answers; a plugin whose test() sizes do not add up fails the round, said.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

#include "p2pscope/affinity.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"
#include "support/tcp_session.hpp"
#include "unit/net/net_test_util.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using p2pscope::test::over;

namespace {

using Vars = std::initializer_list<std::pair<std::string, std::string>>;
std::shared_ptr<net::Plugin> load(int version, Vars vars = {}) { return nettest::load_refnet(vars, version); }
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Large enough that the window's ring is smaller than the message: dealt as they go.
Params unverified(Mode mode = Mode::bw) {
  return {.mode = mode, .channels = 3, .sockets_per_channel = 2, .window = 3, .size_bytes = (16u << 20) + 12345,
          .chunk_bytes = 300u << 10, .iters = 2, .warmup = 1, .verify = false, .timeout_s = 10};
}

// Per side and direction it received: the bytes of every timed round, each once, and
// each channel's rate its bytes over its time. Dealt as they go, a channel may get no
// chunk at all (a thread that starts late on a loaded machine finds the counter spent:
// seen on 2 cores, 48 threads), so a channel's share is not asserted.
void expect_every_byte_once(const Results& r, const Params& p) {
  ASSERT_EQ(r.failure, "");
  EXPECT_EQ(r.rounds_completed, p.iters);
  for (const SideReport* s : {&r.client, &r.server}) {
    std::map<std::string, std::uint64_t> got;
    for (const auto& c : s->channels) {
      if (c.sent) continue;
      got[c.dir] += c.bytes;
      if (c.bytes == 0) continue;
      ASSERT_GT(c.elapsed_s, 0) << s->side << " " << c.dir << " channel " << c.channel;
      EXPECT_NEAR(c.bytes_per_s, static_cast<double>(c.bytes) / c.elapsed_s, 1e-6 * c.bytes_per_s)
          << s->side << " " << c.dir << " channel " << c.channel;
    }
    for (const auto& [dir, bytes] : got) EXPECT_EQ(bytes, p.size_bytes * p.iters * p.gpus.size()) << s->side << " " << dir;
  }
}

class Dealt : public ::testing::TestWithParam<int> {};

}  // namespace

// Every ABI version (v6/v7 take 8 requests per comm, later ones 32), two GPU slots,
// both ways at once, a chunk that divides neither the message nor the channels.
TEST_P(Dealt, EveryByteOnceBothWays) {
  auto plugin = load(GetParam(), {{"P2PSCOPE_REFNET_IFS", "lo,lo"}});
  Params p = unverified(Mode::bidir);
  p.gpus = {0, 1};
  const Results r = run_loopback(p, over(plugin), over(plugin));
  expect_every_byte_once(r, p);
  // A receive holds its ring slot until done: a window of slots per comm. An isend only
  // reads its buffer: the sends in flight share one slot (issue 34: the sender's copy
  // reads from its cache), and every byte above still arrived once.
  for (const SideReport* s : {&r.client, &r.server}) {
    EXPECT_TRUE(has(s->buffer_layout, "source ring of 1 x 300 KiB per socket")) << s->buffer_layout;
    EXPECT_TRUE(has(s->buffer_layout, "destination ring of 3 x 300 KiB per socket")) << s->buffer_layout;
    // Per GPU slot: channels x comms x (source + destination ring), each ring on
    // --slot-memory (128 KiB, under the 300 KiB chunk) of memory, whatever its slots.
    EXPECT_TRUE(has(s->buffer_layout, "destination ring of 3 x 300 KiB per socket on 128 KiB of memory per socket"))
        << s->buffer_layout;
    EXPECT_EQ(s->buffer_bytes, p.gpus.size() * p.channels * p.sockets_per_channel * 2 * p.slot_memory_bytes);
  }
}
INSTANTIATE_TEST_SUITE_P(Versions, Dealt, ::testing::Range(net::kMinAbiVersion, net::kMaxAbiVersion + 1),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

// More end marks than a receiver may post (window over the 8 requests of a v6 comm).
TEST(DealtLimits, WindowOverTheRequestLimit) {
  auto plugin = load(6);
  Params p = unverified();
  p.window = 16;
  p.chunk_bytes = 64u << 10;
  p.channels = 2;
  p.sockets_per_channel = 1;
  expect_every_byte_once(run_loopback(p, over(plugin), over(plugin)), p);
}

TEST(DealtLimits, UnpackReceivesAndNullAnswers) {
  for (const char* var : {"P2PSCOPE_REFNET_UNPACK", "P2PSCOPE_REFNET_NULL_REQUESTS"}) {
    SCOPED_TRACE(var);
    auto plugin = load(net::kMaxAbiVersion, {{var, std::string(var).ends_with("UNPACK") ? "1" : "300"}});
    const Params p = unverified(Mode::bidir);
    expect_every_byte_once(run_loopback(p, over(plugin), over(plugin)), p);
  }
}

// A plugin reporting a byte less per receive: the round fails and says whose sizes.
TEST(DealtFaults, SizesThatDoNotAddUpFailTheRound) {
  auto plugin = load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_SIZE_SHORT", "1"}});
  const Params p = unverified();
  const Results r = run_loopback(p, over(plugin), over(plugin));
  EXPECT_TRUE(has(r.failure, "test() sizes do not add up")) << r.failure;
  EXPECT_EQ(r.rounds_completed, 0u);
}

// A plugin whose test() never sets a receive's size (Google's Fast Socket) is named by
// the server's receiver at once; its sends stayed not done once the server closed, and
// the client waited out its --timeout (10 s) before it read the server's reason. The
// client's round now fails when the server's error arrives on the control connection.
TEST(DealtFaults, TheServersReasonReachesTheClientBeforeItsTimeout) {
  auto plugin = load(net::kMaxAbiVersion, {{"P2PSCOPE_REFNET_SIZE_UNSET", "1"}, {"P2PSCOPE_REFNET_SEND_STALLS", "1"}});
  Params p = unverified();
  p.timeout_s = 10;
  const auto t0 = std::chrono::steady_clock::now();
  const Results r = run_loopback(p, over(plugin), over(plugin));
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(has(r.failure, "does not report a receive's size")) << r.failure;
  EXPECT_TRUE(has(r.failure, "--verify")) << r.failure;  // what to do
  EXPECT_LT(took_s, p.timeout_s / 2) << "the client waited for its timeout: " << r.failure;
  EXPECT_EQ(r.rounds_completed, 0u);
}

// --verify keeps the fixed deal (each chunk is checked at its offset) and still passes.
TEST(DealtLimits, VerifyKeepsTheFixedDeal) {
  auto plugin = load(net::kMaxAbiVersion);
  Params p = unverified();
  p.verify = true;
  const Results r = run_loopback(p, over(plugin), over(plugin));
  ASSERT_EQ(r.failure, "");
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters));
}

// Threads beyond the CPUs the process may use are said (issue 34, bad input).
TEST(Engines, ThreadsOutnumberingTheCpusAreSaid) {
  Params p;
  p.channels = static_cast<std::uint32_t>(allowed_cpus().size()) + 1;
  p.size_bytes = std::uint64_t{p.channels} << 16;
  p.chunk_bytes = 64u << 10;
  p.iters = 1;
  p.warmup = 0;
  const Results r = run_loopback(p);
  ASSERT_EQ(r.failure, "");
  bool said = false;
  for (const auto& w : r.client.warnings) said = said || has(w, "the threads outnumber the CPUs");
  EXPECT_TRUE(said) << ::testing::PrintToString(r.client.warnings);
}
