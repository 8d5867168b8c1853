// bench net --dmabuf (issue 20): what the engine refuses before any data moves, on the
// side that was asked and across the handshake, and what the reports say about each
// link's registration. Runs without a GPU; the dma-buf registration of CUDA memory
// itself is tests/gpu/test_net_dmabuf.cpp.
#include <gtest/gtest.h>

#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"
#include "transport/session/datapath.hpp"
#include "transport/tcp/memory.hpp"
#include "support/tcp_session.hpp"
#include "unit/net/net_test_util.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using namespace p2pscope::session;
using p2pscope::test::over;
namespace pt = p2pscope::test;

namespace {

std::shared_ptr<net::Plugin> refnet() { return nettest::load_refnet(); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Params small() {
  return {.channels = 2, .size_bytes = (2u << 20) + 77, .chunk_bytes = 256u << 10, .iters = 2, .verify = true,
          .timeout_s = 10};
}

std::string usage_error_of(const Params& p, const LocalOptions& client, const LocalOptions& server) {
  try {
    run_loopback(p, client, server);
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a UsageError: ") + e.what();
  }
  return "accepted";
}

}  // namespace

TEST(BenchNetDmabuf, ModesParseAndPrint) {
  for (auto m : {DmabufMode::auto_, DmabufMode::on, DmabufMode::off}) EXPECT_EQ(parse_dmabuf_mode(to_string(m)), m);
  for (const char* bad : {"", "ON", "yes", "1"}) {
    try {
      parse_dmabuf_mode(bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const UsageError& e) {
      EXPECT_TRUE(has(e.what(), "expected auto, on or off")) << e.what();
    }
  }
}

TEST(BenchNetDmabuf, OnWithHostMemoryIsRefusedSayingWhatToAdd) {
  auto plugin = refnet();
  const auto why = usage_error_of(small(), over(plugin, DmabufMode::on), over(plugin, DmabufMode::on));
  EXPECT_TRUE(has(why, "--dmabuf on registers CUDA memory through a dma-buf") && has(why, "this run moves host memory") &&
              has(why, "add --mem gpu"))
      << why;
}

// The plugin check comes before any GPU is touched: this machine has none, and the
// answer is still about the plugin.
TEST(BenchNetDmabuf, OnWithAPluginWithoutDmabufNamesTheDeviceAndWhatItOffers) {
  auto plugin = refnet();
  Params p = small();
  p.mem = MemKind::gpu;
  const auto why = usage_error_of(p, over(plugin, DmabufMode::on), over(plugin, DmabufMode::on));
  EXPECT_TRUE(has(why, "--dmabuf on: net plugin 'p2pscope-refnet'") && has(why, "device 0 (lo) offers host memory") &&
              has(why, "not DMA-BUF (NCCL_PTR_DMABUF)") && has(why, "use --dmabuf auto"))
      << why;
}

// Each side decides for itself: a server started with --dmabuf on refuses, in the
// handshake, a client whose run it cannot honour, and the client hears why.
TEST(BenchNetDmabuf, ServerWithOnRefusesAHostMemoryClientAndTheClientHearsWhy) {
  auto plugin = refnet();
  const pt::Both b = pt::run_both(small(), pt::loopback_server(over(plugin, DmabufMode::on)),
                                  over(plugin, DmabufMode::auto_));
  const std::string &cerr = b.client_error, &serr = b.server_error;
  EXPECT_TRUE(has(cerr, "refused") && has(cerr, "--dmabuf on registers CUDA memory")) << cerr;
  EXPECT_TRUE(has(serr, "--dmabuf on")) << serr;
}

// auto and off with host memory: regMr of host memory on every link, both sides, in the
// figures, the JSON and the text; and the data verified.
TEST(BenchNetDmabuf, HostMemoryIsRegisteredWithRegMrAndTheReportsSaySo) {
  auto plugin = refnet();
  for (auto m : {DmabufMode::auto_, DmabufMode::off}) {
    SCOPED_TRACE(to_string(m));
    const Params p = small();
    const Results r = run_loopback(p, over(plugin, m), over(plugin, m));
    ASSERT_TRUE(r.failure.empty()) << r.failure;
    EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters));  // warm-up rounds are verified too
    const auto j = to_json(r);
    for (const char* side : {"client", "server"}) {
      ASSERT_EQ(j[side]["channels"].size(), p.channels) << side;
      for (const auto& c : j[side]["channels"]) EXPECT_EQ(c.at("registration"), "host") << side;
    }
    const std::string text = format_text(r);
    EXPECT_TRUE(has(text, "client registration: regMr of host memory on all 2 channel(s)")) << text;
    EXPECT_TRUE(has(text, "server registration: regMr of host memory on all 2 channel(s)")) << text;
  }
}

// Latency mode ping-pongs host buffers: registered with regMr, said so.
TEST(BenchNetDmabuf, LatencyModeRegistersHostMemory) {
  auto plugin = refnet();
  Params p;
  p.mode = Mode::latency;
  p.size_bytes = 64;
  p.chunk_bytes = 64;
  p.iters = 10;
  p.warmup = 1;
  p.timeout_s = 10;
  const Results r = run_loopback(p, over(plugin, DmabufMode::auto_), over(plugin, DmabufMode::auto_));
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  ASSERT_FALSE(r.client.channels.empty());
  for (const auto& c : r.client.channels) EXPECT_EQ(c.registration, "host");
}

// The server's figures cross the wire as JSON: the registration survives, and an older
// peer's figures (no such field) read as "" rather than failing.
TEST(BenchNetDmabuf, RegistrationCrossesTheWireAndOlderPeersReadAsUnknown) {
  SideReport s;
  s.side = "server";
  ChannelReport c;
  c.dir = "c2s";
  c.registration = "dmabuf";
  s.channels.push_back(c);
  auto j = to_json(s);
  EXPECT_EQ(side_from_json(j).channels.at(0).registration, "dmabuf");
  j["channels"][0].erase("registration");
  EXPECT_EQ(side_from_json(j).channels.at(0).registration, "");
  Results r;
  r.params.mem = MemKind::gpu;
  r.client = s;
  r.client.side = "client";
  ChannelReport c2 = c;
  c2.channel = 1;
  c2.registration = "cuda";
  r.client.channels.push_back(c2);
  const std::string text = format_text(r);
  EXPECT_TRUE(has(text, "client registration: regMr of CUDA memory on c2s gpu 0 ch 1; regMrDmaBuf (dma-buf fd of the "
                        "CUDA buffer) on c2s gpu 0 ch 0"))
      << text;
}

// The range handed to cuMemGetHandleForAddressRange: whole pages around the buffer, and
// where the buffer starts in it (what regMrDmaBuf's offset says).
TEST(BenchNetDmabuf, PageRangeWidensToWholePagesAndKeepsTheOffset) {
  auto pr = page_range(0x10000, 4096, 4096);
  EXPECT_EQ(pr.base, 0x10000u);
  EXPECT_EQ(pr.bytes, 4096u);
  EXPECT_EQ(pr.offset, 0u);
  pr = page_range(0x10234, 100, 4096);
  EXPECT_EQ(pr.base, 0x10000u);
  EXPECT_EQ(pr.bytes, 4096u);
  EXPECT_EQ(pr.offset, 0x234u);
  pr = page_range(0x10ff0, 0x20, 4096);  // crosses a page boundary: two pages
  EXPECT_EQ(pr.base, 0x10000u);
  EXPECT_EQ(pr.bytes, 8192u);
  EXPECT_EQ(pr.offset, 0xff0u);
  pr = page_range(0x200000, (64u << 20) + 4099, 65536);  // 64 KiB pages (aarch64 kernels)
  EXPECT_EQ(pr.bytes, (64u << 20) + 65536);
  EXPECT_EQ(pr.offset, 0u);
}
