// The NCCL log parser on the real device logs (2 x H200, NCCL 2.28) and on lines
// from other setups (NET/IB with GDRDMA, P2P/IPC, CollNet), truncated and garbled.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "p2pscope/tune.hpp"

using namespace p2pscope::tune;

namespace {
std::string fixture(const std::string& name) {
  std::ifstream in(std::string(P2PSCOPE_FIXTURES_DIR) + "/nccl-logs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
bool has_id(const std::vector<Finding>& f, const std::string& id) {
  for (const auto& x : f)
    if (x.id == id) return true;
  return false;
}
}  // namespace

TEST(NcclLog, DefaultDeviceLogIsP2pAndNotASocketFallback) {
  const auto text = fixture("default-p2p.log");
  ASSERT_FALSE(text.empty()) << "fixture missing";
  const auto l = parse_nccl_log(text, "default-p2p.log");
  EXPECT_EQ(l.nccl_version, "2.28.9+cuda13.0");
  EXPECT_EQ(l.nranks, 2);
  EXPECT_EQ(l.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(l.primary_transport(), "P2P");
  EXPECT_EQ(l.used_transports(), (std::vector<std::string>{"P2P/CUMEM"}));
  EXPECT_EQ(l.network, "Socket");  // named by "Using network Socket" ...
  EXPECT_EQ(l.transports.count("NET/Socket"), 0u);  // ... but no channel uses it
  EXPECT_EQ(l.coll_channels, 24);
  EXPECT_EQ(l.p2p_channels, 32);
  EXPECT_TRUE(l.init_complete);
  EXPECT_EQ(l.interfaces, (std::vector<std::string>{"eth0:192.0.2.2<0>"}));
  EXPECT_TRUE(l.warnings.empty()) << l.warnings.front();
  const auto f = log_findings(l);
  EXPECT_FALSE(has_id(f, "log.socket_fallback"));
  EXPECT_FALSE(has_id(f, "log.shm_path"));
  EXPECT_FALSE(has_id(f, "log.partial"));
}

TEST(NcclLog, P2pDisabledDeviceLogIsShm) {
  const auto l = parse_nccl_log(fixture("p2p-disabled-shm.log"), "p2p-disabled-shm.log");
  EXPECT_EQ(l.primary_transport(), "SHM");
  EXPECT_GT(l.transports.at("SHM"), 0);
  EXPECT_NE(std::find(l.env_lines.begin(), l.env_lines.end(), "NCCL_P2P_DISABLE=1"), l.env_lines.end());
  const auto f = log_findings(l);
  EXPECT_TRUE(has_id(f, "log.shm_path"));
  EXPECT_FALSE(has_id(f, "log.socket_fallback"));
}

TEST(NcclLog, ShmDisabledDeviceLogIsNetSocket) {
  const auto l = parse_nccl_log(fixture("shm-disabled-socket.log"), "shm-disabled-socket.log");
  EXPECT_EQ(l.primary_transport(), "NET/Socket");
  EXPECT_EQ(l.transports.count("SHM"), 0u);
  bool all_socket = true;
  for (const auto& c : l.channels) all_socket = all_socket && c.transport == "NET/Socket" && !c.gdr;
  EXPECT_TRUE(all_socket);
  const auto f = log_findings(l);
  ASSERT_TRUE(has_id(f, "log.socket_fallback"));
  for (const auto& x : f)
    if (x.id == "log.socket_fallback") {
      EXPECT_EQ(x.severity, "warning");  // forced by the environment, and the finding says so
      EXPECT_NE(x.fix.find("unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE"), std::string::npos);
      ASSERT_FALSE(x.evidence.empty());
      EXPECT_NE(x.evidence.front().find("via NET/Socket"), std::string::npos);
    }
}

TEST(NcclLog, IbWithGdrAndOtherTransports) {
  const std::string text =
      "h1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "h1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>\n"
      "h1:1:1 [0] NCCL INFO Using network IB\n"
      "h1:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init START\n"
      "h1:1:1 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 18000 / HCA 0 (distance 4 <= 4), read 1\n"
      "h1:1:1 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 18000 / HCA 1 (distance 5 > 4)\n"
      "h1:1:1 [0] NCCL INFO Channel 00/0 : 2[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
      "h1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 2[0] [send] via NET/IB/0/GDRDMA\n"
      "h1:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
      "h1:1:1 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via P2P/direct pointer/read\n"
      "h1:1:1 [0] NCCL INFO Channel 03/0 : 0[0] -> 3[1] via COLLNET/IB/0/GDRDMA\n"
      "h1:1:1 [0] NCCL INFO ncclCommInitRank comm 0x5 rank 0 nranks 4 cudaDev 0 busId 18000 - Init COMPLETE\n";
  const auto l = parse_nccl_log(text, "ib.log");
  EXPECT_EQ(l.nccl_version, "2.21.5+cuda12.4");
  EXPECT_EQ(l.nranks, 4);
  EXPECT_EQ(l.network, "IB");
  EXPECT_EQ(l.ib_devices, (std::vector<std::string>{"mlx5_0:1/RoCE", "mlx5_1:1/IB"}));
  EXPECT_EQ(l.transports.at("NET/IB"), 2);
  EXPECT_EQ(l.transports.at("P2P/IPC"), 1);
  EXPECT_EQ(l.transports.at("P2P/direct"), 1);
  EXPECT_EQ(l.transports.at("CollNet"), 1);
  EXPECT_EQ(l.primary_transport(), "mixed: CollNet NET/IB P2P");
  ASSERT_EQ(l.gdr.size(), 2u);
  EXPECT_TRUE(l.gdr[0].enabled);
  EXPECT_EQ(l.gdr[0].gpu, "18000");
  EXPECT_FALSE(l.gdr[1].enabled);
  EXPECT_TRUE(l.channels[0].gdr);
  const auto f = log_findings(l);
  EXPECT_TRUE(has_id(f, "log.ib_gdr"));
  EXPECT_FALSE(has_id(f, "log.ib_without_gdr"));
  EXPECT_FALSE(has_id(f, "log.socket_fallback"));
}

TEST(NcclLog, UnforcedSocketUseIsAnError) {
  const std::string text =
      "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n"
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE\n";
  const auto f = log_findings(parse_nccl_log(text, "s.log"));
  ASSERT_TRUE(has_id(f, "log.socket_fallback"));
  for (const auto& x : f)
    if (x.id == "log.socket_fallback") {
      EXPECT_EQ(x.severity, "error");
    }
}

TEST(NcclLog, TruncatedLogGivesPartialResultAndWarning) {
  const auto text = fixture("default-p2p.log");
  // Cut in the middle of the channel setup, mid-line.
  const auto cut = text.find("via P2P/CUMEM");
  ASSERT_NE(cut, std::string::npos);
  const auto l = parse_nccl_log(text.substr(0, cut + 20), "cut.log");
  EXPECT_EQ(l.nccl_version, "2.28.9+cuda13.0");
  EXPECT_FALSE(l.warnings.empty());
  EXPECT_TRUE(has_id(log_findings(l), "log.partial"));
  // Cut before any channel: transport unknown, said so.
  const auto early = parse_nccl_log(text.substr(0, text.find("Channel")), "early.log");
  EXPECT_EQ(early.primary_transport(), "unknown");
  EXPECT_FALSE(early.warnings.empty());
}

TEST(NcclLog, GarbledAndEmptyInputNeverCrash) {
  EXPECT_FALSE(parse_nccl_log("", "empty.log").warnings.empty());
  EXPECT_FALSE(parse_nccl_log("hello\nworld\n", "x.log").warnings.empty());
  std::string text = fixture("shm-disabled-socket.log");
  std::mt19937 rng(7);
  for (int i = 0; i < 20 && !text.empty(); ++i) text[rng() % text.size()] = static_cast<char>(rng() % 256);
  text.insert(text.size() / 2, std::string("\x01\x7f\x02 NCCL INFO Channel \x03\n"));
  const auto l = parse_nccl_log(text, "garbled.log");
  EXPECT_FALSE(l.warnings.empty());
  EXPECT_EQ(l.primary_transport(), "NET/Socket");  // most channel lines survive
  const std::string bad = "x [0] NCCL INFO Channel 00/0 : 0[0 -> via \n";
  EXPECT_FALSE(parse_nccl_log(bad, "b.log").warnings.empty());
  EXPECT_NO_THROW(parse_nccl_log(std::string(100000, 'A'), "long.log"));
}

namespace {
// The net plugin as the log says its run loaded it (tests/fixtures/nccl-logs/net-plugin-refnet.log).
TEST(NcclLogPlugin, LoadedPluginAndRequestAreRead) {
  const auto l = p2pscope::tune::read_nccl_log_file(std::string(P2PSCOPE_FIXTURES_DIR) + "/nccl-logs/net-plugin-refnet.log");
  EXPECT_EQ(l.net_plugin, "p2pscope-refnet (v11)");
  EXPECT_EQ(l.net_plugin_request, "/root/p2pscope/build/lib/libnccl-net-p2pscope.so");
  EXPECT_FALSE(l.net_plugin_lines.empty());
  EXPECT_EQ(l.network, "p2pscope-refnet");
}

TEST(NcclLogPlugin, NoPluginFoundIsReadAsNone) {
  const auto l = p2pscope::tune::read_nccl_log_file(std::string(P2PSCOPE_FIXTURES_DIR) + "/nccl-logs/default-p2p.log");
  EXPECT_TRUE(l.net_plugin.empty());
  EXPECT_TRUE(l.net_plugin_none) << "the log says 'NET/Plugin: Could not find: libnccl-net.so'";
}
}  // namespace
