// The reference plugin driven through the normalised API at every ABI version:
// listen/connect/accept over 127.0.0.1, transfers checked byte for byte, the
// oldest-request rule, UNPACK emulation, and every fault switch ending in a clear
// error within the timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "net_test_util.hpp"

using namespace nettest;
using p2pscope::Error;
using p2pscope::UsageError;

namespace {

std::vector<std::vector<unsigned char>> messages(const std::vector<std::size_t>& sizes) {
  std::vector<std::vector<unsigned char>> m;
  for (std::size_t i = 0; i < sizes.size(); ++i) m.push_back(pattern(sizes[i], static_cast<unsigned>(i + 1)));
  return m;
}

void expect_delivered(const std::vector<std::vector<unsigned char>>& in,
                      const std::vector<std::vector<unsigned char>>& out) {
  ASSERT_EQ(in.size(), out.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_GE(out[i].size(), in[i].size());
    if (!in[i].empty()) {
      EXPECT_EQ(0, std::memcmp(in[i].data(), out[i].data(), in[i].size())) << "message " << i << " differs";
    }
    EXPECT_EQ(out[i][in[i].size()], 0xEE) << "message " << i << " wrote past its size";
  }
}

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

class EveryVersion : public ::testing::TestWithParam<int> {};

TEST_P(EveryVersion, LoadsConnectsAndMovesBytesExactly) {
  const int v = GetParam();
  Pair p = connect_pair(v);
  EXPECT_EQ(p.plugin->version(), v);
  EXPECT_EQ(p.plugin->name(), "p2pscope-refnet");
  ASSERT_GE(p.plugin->devices().size(), 1u);
  const DeviceProps& d = p.plugin->device(0);
  EXPECT_EQ(d.name, "lo");
  EXPECT_TRUE(d.host_memory());
  EXPECT_FALSE(d.cuda_memory());
  EXPECT_EQ(d.max_comms, 65536);
  EXPECT_EQ(d.device_type, DeviceType::host);
  // v9+ report the plugin's own limit; older versions get NCCL's 1 GiB assumption.
  EXPECT_EQ(d.max_p2p_bytes, v >= 9 ? (1ull << 31) : (1ull << 30));
  auto in = messages({1, 4095, 4096, 65537, (1u << 20) + 3, 8u << 20, 0, 17});
  std::vector<std::vector<unsigned char>> out;
  transfer(p, in, out, /*window=*/4);
  expect_delivered(in, out);
  EXPECT_TRUE(p.send.outstanding().empty());
  EXPECT_TRUE(p.recv.outstanding().empty());
}

// The single-version builds: the loader finds the one version each exports.
TEST_P(EveryVersion, SingleVersionBuildLoadsAtThatVersion) {
  const int v = GetParam();
  const std::string file =
      (std::filesystem::path(kRefnet).parent_path() / ("libnccl-net-p2pscope-v" + std::to_string(v) + ".so")).string();
  LoadOptions o;
  o.plugin = file;
  auto plugin = Plugin::load(o);
  EXPECT_EQ(plugin->version(), v);
  EXPECT_EQ(plugin->exported_versions(), std::vector<int>{v});
  Pair p;
  p.plugin = plugin;
  p.listen = plugin->listen(0);
  p.send = plugin->connect(0, p.listen.handle(), in_s(5));
  p.recv = plugin->accept(p.listen, in_s(5));
  auto in = messages({100000, 3});
  std::vector<std::vector<unsigned char>> out;
  transfer(p, in, out, 2);
  expect_delivered(in, out);
}

INSTANTIATE_TEST_SUITE_P(NetRefPlugin, EveryVersion, ::testing::Range(6, 12),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

TEST(NetRefPlugin, DefaultPicksTheHighestVersion) {
  LoadOptions o;
  o.plugin = kRefnet;
  auto p = Plugin::load(o);
  EXPECT_EQ(p->version(), 11);
  EXPECT_EQ(p->exported_versions(), (std::vector<int>{6, 7, 8, 9, 10, 11}));
  EXPECT_NE(p->describe().find("v11"), std::string::npos);
  EXPECT_NE(p->describe().find("libnccl-net-p2pscope.so"), std::string::npos);
}

TEST(NetRefPlugin, WindowOfThirtyTwoThenNull) {
  Pair p = connect_pair();
  std::vector<unsigned char> buf(64, 1);
  MemRegion mr = p.recv.reg_mr(buf.data(), buf.size(), MemType::host);
  int posted = 0;
  while (p.recv.irecv(buf.data(), buf.size(), mr)) ++posted;
  EXPECT_EQ(posted, 32);  // the plugin's window; then NULL (try later), not an error
}

TEST(NetRefPlugin, OnlyTheOldestRequestMayBeTested) {
  Pair p = connect_pair();
  std::vector<unsigned char> a(1000), b(1000), c(1000);
  MemRegion ma = p.recv.reg_mr(a.data(), a.size(), MemType::host);
  auto r1 = p.recv.irecv(a.data(), a.size(), ma);
  auto r2 = p.recv.irecv(b.data(), b.size(), ma);
  auto r3 = p.recv.irecv(c.data(), c.size(), ma);
  ASSERT_TRUE(r1 && r2 && r3);
  EXPECT_EQ(r2->seq, r1->seq + 1);
  std::string msg = what_of([&] { p.recv.test(*r2); });
  EXPECT_NE(msg.find("only the oldest outstanding request"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(that is #0)"), std::string::npos) << msg;
  EXPECT_THROW(p.recv.test(*r3), UsageError);
  EXPECT_FALSE(p.recv.test(*r1));  // nothing sent yet: not done, but allowed
  // Send three messages; completion comes in order, and then #1 may be tested.
  std::vector<unsigned char> s = pattern(1000, 9);
  MemRegion ms = p.send.reg_mr(s.data(), s.size(), MemType::host);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(p.send.isend(s.data(), s.size(), ms));
  const Deadline end = in_s(5);
  while (!p.recv.test(*r1)) ASSERT_LT(Clock::now(), end);
  while (!p.recv.test(*r2)) ASSERT_LT(Clock::now(), end);
  EXPECT_EQ(p.recv.oldest()->seq, r3->seq);
  EXPECT_EQ(0, std::memcmp(b.data(), s.data(), s.size()));
}

TEST(NetRefPlugin, HostOnlyPluginRefusesCudaMemoryNamingWhatItOffers) {
  Pair p = connect_pair();
  std::vector<unsigned char> buf(4096);
  std::string msg = what_of([&] { p.send.reg_mr(buf.data(), buf.size(), MemType::cuda); });
  EXPECT_NE(msg.find("cannot register CUDA memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("offers host memory only"), std::string::npos) << msg;
  EXPECT_NE(msg.find("p2pscope-refnet"), std::string::npos) << msg;
}

TEST(NetRefPlugin, UnpackModeScattersOutOfOrderPagesThroughTheList) {
  Env env({{"P2PSCOPE_REFNET_UNPACK", "1"}});
  Pair p = connect_pair();
  EXPECT_EQ(p.plugin->device(0).device_type, DeviceType::unpack);
  EXPECT_EQ(p.plugin->device(0).max_p2p_bytes, 4u << 20);
  ASSERT_TRUE(p.recv.unpack());
  // The pieces must not be a plain copy: pages 0 and 1 are swapped in the bounce area.
  auto in = messages({3 * 4096 + 100});
  std::vector<unsigned char> out(in[0].size(), 0);
  MemRegion ms = p.send.reg_mr(in[0].data(), in[0].size(), MemType::host);
  MemRegion mr = p.recv.reg_mr(out.data(), out.size(), MemType::host);
  ASSERT_TRUE(p.send.isend(in[0].data(), in[0].size(), ms));
  ASSERT_TRUE(p.recv.irecv(out.data(), out.size(), mr));
  const Deadline end = in_s(5);
  while (!p.send.test_oldest()) ASSERT_LT(Clock::now(), end);
  while (!p.recv.test_oldest()) ASSERT_LT(Clock::now(), end);
  EXPECT_EQ(out, std::vector<unsigned char>(out.size(), 0)) << "UNPACK receives must not touch the destination";
  UnpackView v = p.recv.unpack_view();
  ASSERT_EQ(v.count, 4u);
  EXPECT_EQ(v.pieces[0].dst_off, 0u);
  EXPECT_EQ(v.pieces[0].src_off, 4096u);  // slot 0, page 1
  EXPECT_EQ(v.pieces[1].src_off, 0u);
  EXPECT_EQ(v.pieces[3].len, 100u);
  EXPECT_NE(0, std::memcmp(v.bounce, in[0].data(), in[0].size()));
  EXPECT_EQ(p.recv.awaiting_consume(), 1u);
  p.recv.irecv_consumed();
  EXPECT_EQ(p.recv.awaiting_consume(), 0u);
  EXPECT_THROW(p.recv.irecv_consumed(), UsageError);
  // A stream of receives through all 16 slots, scattered on the CPU and checked.
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 40; ++i) sizes.push_back(static_cast<std::size_t>(1 + i * 100003 % (4u << 20)));
  auto many = messages(sizes);
  std::vector<std::vector<unsigned char>> got;
  transfer(p, many, got, 8);
  expect_delivered(many, got);
}

TEST(NetRefPlugin, UnpackViewOnAHostDeviceIsAUsageError) {
  Pair p = connect_pair();
  EXPECT_FALSE(p.recv.unpack());
  EXPECT_THROW(p.recv.unpack_view(), UsageError);
}

// ---- fault switches -------------------------------------------------------------

TEST(NetRefPluginFaults, NullRequestsForNCallsThenRequests) {
  Env env({{"P2PSCOPE_REFNET_NULL_REQUESTS", "3"}});
  Pair p = connect_pair();
  std::vector<unsigned char> buf(16);
  MemRegion mr = p.send.reg_mr(buf.data(), buf.size(), MemType::host);
  int nulls = 0;
  while (!p.send.isend(buf.data(), buf.size(), mr)) ++nulls;
  EXPECT_EQ(nulls, 3);
}

TEST(NetRefPluginFaults, NullRequestsForeverEndAtTheCallersDeadline) {
  Env env({{"P2PSCOPE_REFNET_NULL_REQUESTS", "forever"}});
  Pair p = connect_pair();
  auto in = messages({1000});
  std::vector<std::vector<unsigned char>> out;
  auto t0 = Clock::now();
  std::string msg = what_of([&] { transfer(p, in, out, 1, 0.5); });
  EXPECT_NE(msg.find("did not finish within the timeout"), std::string::npos) << msg;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
}

TEST(NetRefPluginFaults, ErrorMidTransferNamesPluginCallAndLog) {
  Env env({{"P2PSCOPE_REFNET_FAIL_AFTER_BYTES", "1000000"}});
  Pair p = connect_pair(9);
  auto in = messages({4u << 20});
  std::vector<std::vector<unsigned char>> out;
  auto t0 = Clock::now();
  std::string msg = what_of([&] { transfer(p, in, out, 1, 5); });
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(msg.find("net plugin 'p2pscope-refnet' v9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("test(request #0 of 4194304 bytes) failed: ncclSystemError (2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("injected error after 1000000 bytes"), std::string::npos) << msg;
}

TEST(NetRefPluginFaults, PeerThatDiesGivesTheReceiverARemoteError) {
  Env env({{"P2PSCOPE_REFNET_DIE_AFTER_BYTES", "300000"}});
  Pair p = connect_pair(7);
  std::vector<unsigned char> s = pattern(2u << 20, 3), r(2u << 20);
  MemRegion ms = p.send.reg_mr(s.data(), s.size(), MemType::host);
  MemRegion mr = p.recv.reg_mr(r.data(), r.size(), MemType::host);
  ASSERT_TRUE(p.send.isend(s.data(), s.size(), ms));
  ASSERT_TRUE(p.recv.irecv(r.data(), r.size(), mr));
  std::string send_err, recv_err;
  const Deadline end = in_s(5);
  while ((send_err.empty() || recv_err.empty()) && Clock::now() < end) {
    if (send_err.empty()) send_err = what_of([&] { p.send.test_oldest(); });
    if (send_err == "(no exception)") send_err.clear();
    if (recv_err.empty()) recv_err = what_of([&] { p.recv.test_oldest(); });
    if (recv_err == "(no exception)") recv_err.clear();
  }
  EXPECT_NE(send_err.find("comm dies after 300000 bytes"), std::string::npos) << send_err;
  EXPECT_NE(recv_err.find("ncclRemoteError"), std::string::npos) << recv_err;
  EXPECT_NE(recv_err.find("connection closed by the peer after 300000 bytes"), std::string::npos) << recv_err;
  EXPECT_NE(recv_err.find("v7"), std::string::npos) << recv_err;
}

TEST(NetRefPluginFaults, AcceptWithoutPeerEndsAtTheDeadline) {
  LoadOptions o;
  o.plugin = kRefnet;
  auto p = Plugin::load(o);
  ListenComm l = p->listen(0);
  auto t0 = Clock::now();
  std::string msg = what_of([&] { p->accept(l, in_s(0.3)); });
  EXPECT_NE(msg.find("accept(dev 0) failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no peer connected before the deadline"), std::string::npos) << msg;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
}

TEST(NetRefPlugin, TryConnectAndTryAcceptInterleaveInOneThread) {
  LoadOptions o;
  o.plugin = kRefnet;
  auto p = Plugin::load(o);
  ListenComm l = p->listen(0);
  EXPECT_FALSE(p->try_accept(l));  // nobody connected yet: not an error
  NetHandle h = l.handle();
  std::optional<SendComm> s;
  std::optional<RecvComm> r;
  const Deadline end = in_s(5);
  while (!s || !r) {
    ASSERT_LT(Clock::now(), end);
    if (!s) s = p->try_connect(0, h);
    if (!r) r = p->try_accept(l);
  }
  EXPECT_TRUE(*s);
  EXPECT_TRUE(*r);
  EXPECT_EQ(r->device(), 0);
}

TEST(NetRefPluginProperties, JsonRowsAndVerdict) {
  LoadOptions o;
  o.plugin = kRefnet;
  auto p = Plugin::load(o);
  auto j = properties_json(*p);
  EXPECT_EQ(j["plugin"]["name"], "p2pscope-refnet");
  EXPECT_EQ(j["plugin"]["abi_version"], 11);
  EXPECT_EQ(j["devices"][0]["name"], "lo");
  EXPECT_EQ(j["devices"][0]["ptr_support"], nlohmann::json::array({"host"}));
  EXPECT_EQ(j["devices"][0]["gdr"], false);
  EXPECT_EQ(j["devices"][0]["device_type"], "host");
  EXPECT_EQ(gpu_memory_verdict(*p).rfind("no: host memory only", 0), 0u) << gpu_memory_verdict(*p);
  auto rows = properties_rows(*p);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][1], "name");
  EXPECT_EQ(rows[1][1], "lo");
  EXPECT_EQ(rows[1][5], "host");
}

// As an engine runs it: several comms dealt over two devices, each side of each comm
// on its own thread, one shared Plugin; every byte checked.
TEST(NetRefPlugin, CommsOverTwoDevicesOnTheirOwnThreads) {
  Env env({{"P2PSCOPE_REFNET_IFS", "lo,lo"}});
  LoadOptions o;
  o.plugin = kRefnet;
  auto plugin = Plugin::load(o);
  ASSERT_EQ(plugin->devices().size(), 2u);
  const int comms = 4;
  const std::size_t bytes = 16u << 20, chunk = 256u << 10, window = 4;
  std::vector<Pair> pairs(comms);
  for (int c = 0; c < comms; ++c) {
    pairs[c].plugin = plugin;
    pairs[c].listen = plugin->listen(c % 2);
    pairs[c].send = plugin->connect(c % 2, pairs[c].listen.handle(), in_s(5));
    pairs[c].recv = plugin->accept(pairs[c].listen, in_s(5));
    EXPECT_EQ(pairs[c].recv.device(), c % 2);
  }
  std::vector<std::vector<unsigned char>> src(comms), dst(comms);
  std::vector<std::string> errors(2 * comms);
  std::vector<std::thread> threads;
  for (int c = 0; c < comms; ++c) {
    src[c] = pattern(bytes, 100 + c);
    dst[c].assign(bytes, 0);
    threads.emplace_back([&, c] {
      try {
        SendComm& s = pairs[c].send;
        MemRegion mr = s.reg_mr(src[c].data(), bytes, MemType::host);
        std::size_t posted = 0, done = 0, n = bytes / chunk;
        const Deadline end = in_s(30);
        while (done < n) {
          if (Clock::now() > end) throw p2pscope::Error("send timeout");
          if (posted < n && posted - done < window && s.isend(src[c].data() + posted * chunk, chunk, mr)) ++posted;
          else if (done < posted && s.test_oldest()) ++done;
          else std::this_thread::yield();
        }
      } catch (const std::exception& e) {
        errors[2 * c] = e.what();
      }
    });
    threads.emplace_back([&, c] {
      try {
        RecvComm& r = pairs[c].recv;
        MemRegion mr = r.reg_mr(dst[c].data(), bytes, MemType::host);
        std::size_t posted = 0, done = 0, n = bytes / chunk;
        const Deadline end = in_s(30);
        while (done < n) {
          if (Clock::now() > end) throw p2pscope::Error("recv timeout");
          if (posted < n && posted - done < window && r.irecv(dst[c].data() + posted * chunk, chunk, mr)) ++posted;
          else if (done < posted && r.test_oldest()) ++done;
          else std::this_thread::yield();
        }
      } catch (const std::exception& e) {
        errors[2 * c + 1] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  for (int c = 0; c < comms; ++c) EXPECT_TRUE(src[c] == dst[c]) << "comm " << c << " delivered other bytes";
}

TEST(NetRefPlugin, RegionOutlivingItsCommIsNotDeregisteredOnAClosedComm) {
  Pair p = connect_pair();
  std::vector<unsigned char> buf(4096);
  MemRegion mr = p.send.reg_mr(buf.data(), buf.size(), MemType::host);
  MemRegion moved = std::move(mr);  // the watch moves with the region
  EXPECT_FALSE(mr);
  p.send.close();
  moved.reset();  // must not call deregMr on the closed comm (ASan would see the plugin's freed comm)
  bool noted = false;
  for (const auto& l : p.plugin->log()) noted |= l.find("outlived its comm") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_THROW(p.send.reg_mr(buf.data(), buf.size(), MemType::host), UsageError);
}

// Once messages fill their receives exactly, the polling plugin (P2PSCOPE_REFNET_WAIT_US=0)
// reads header and payload in one call; a shorter message then leaves the next one's
// bytes in its buffer, which must reach the next receive intact. The waiting plugin (the
// default) reads each header alone; the stream must come out the same.
class ShorterMessage : public ::testing::TestWithParam<const char*> {};

TEST_P(ShorterMessage, AfterExactOnesKeepsTheStreamIntact) {
  Env env({{"P2PSCOPE_REFNET_WAIT_US", GetParam()}});
  Pair p = connect_pair();
  const std::vector<std::size_t> sent = {1000, 1000, 10, 1000, 0, 1000};
  std::vector<std::vector<unsigned char>> in;
  for (std::size_t i = 0; i < sent.size(); ++i) in.push_back(pattern(sent[i], 40 + i));
  std::vector<unsigned char> dummy(1);
  std::vector<MemRegion> ms;
  for (auto& m : in) ms.push_back(p.send.reg_mr(m.empty() ? dummy.data() : m.data(), m.size(), MemType::host));
  const Deadline end = in_s(5);
  for (std::size_t i = 0; i < sent.size(); ++i)
    ASSERT_TRUE(p.send.isend(in[i].empty() ? dummy.data() : in[i].data(), sent[i], ms[i]));
  while (!p.send.outstanding().empty()) {
    ASSERT_LT(Clock::now(), end);
    p.send.test_oldest();
  }
  std::vector<std::vector<unsigned char>> out(sent.size(), std::vector<unsigned char>(1000, 0));
  std::vector<MemRegion> mr;
  for (auto& o : out) mr.push_back(p.recv.reg_mr(o.data(), o.size(), MemType::host));
  for (std::size_t i = 0; i < sent.size(); ++i) {
    ASSERT_TRUE(p.recv.irecv(out[i].data(), 1000, mr[i]));
    while (!p.recv.test_oldest()) ASSERT_LT(Clock::now(), end);
    if (sent[i]) {
      EXPECT_EQ(0, std::memcmp(out[i].data(), in[i].data(), sent[i])) << "message " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(NetRefPlugin, ShorterMessage, ::testing::Values("0", "1000"),
                         [](const auto& i) { return std::string(i.param[0] == '0' ? "Polling" : "Waiting"); });
