// Loader errors and name resolution: each bad file gets an error that says what the
// file is and names it; names resolve as NCCL 2.28 resolves NCCL_NET_PLUGIN.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "net_test_util.hpp"

using namespace nettest;
namespace fs = std::filesystem;

namespace {

std::string load_error(const std::string& plugin, int min_v = kMinAbiVersion, int max_v = kMaxAbiVersion) {
  LoadOptions o;
  o.plugin = plugin;
  o.min_version = min_v;
  o.max_version = max_v;
  try {
    Plugin::load(o);
  } catch (const p2pscope::Error& e) {
    return e.what();
  }
  return "(loaded)";
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("p2pscope-net-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(NetLoader, NotASharedObject) {
  fs::path f = temp_dir() / "libnccl-net-text.so";
  std::ofstream(f) << "#!/bin/sh\necho this is a script\n";
  std::string msg = load_error(f.string());
  fs::remove_all(f.parent_path());
  EXPECT_NE(msg.find(f.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a shared object"), std::string::npos) << msg;
}

TEST(NetLoader, SharedObjectWithoutThePluginSymbol) {
  std::string msg = load_error(P2PSCOPE_TEST_NOSYM_PATH);
  EXPECT_NE(msg.find(P2PSCOPE_TEST_NOSYM_PATH), std::string::npos) << msg;
  EXPECT_NE(msg.find("exports no ncclNetPlugin_vN symbol"), std::string::npos) << msg;
}

TEST(NetLoader, OnlyVersionsOutsideSixToEleven) {
  std::string msg = load_error(P2PSCOPE_TEST_V5V12_PATH);
  EXPECT_NE(msg.find("exports only ncclNetPlugin_v5, ncclNetPlugin_v12"), std::string::npos) << msg;
  EXPECT_NE(msg.find("none in v6..v11"), std::string::npos) << msg;
}

TEST(NetLoader, VersionWindowThatTheFileDoesNotExport) {
  // The reference plugin exports 6..11; ask for 12 only (as a future tool might).
  std::string msg = load_error(kRefnet, 12, 12);
  EXPECT_NE(msg.find("none in v12..v11"), std::string::npos) << msg;
}

TEST(NetLoader, InitFailingNamesTheCallAndShowsThePluginLog) {
  Env env({{"P2PSCOPE_REFNET_INIT_FAIL", "1"}});
  std::string msg = load_error(kRefnet);
  EXPECT_NE(msg.find("net plugin 'p2pscope-refnet' v11"), std::string::npos) << msg;
  EXPECT_NE(msg.find("init failed: ncclSystemError (2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("WARN"), std::string::npos) << msg;
  EXPECT_NE(msg.find("init fails as asked"), std::string::npos) << msg;
}

TEST(NetLoader, ZeroDevices) {
  Env env({{"P2PSCOPE_REFNET_DEVICES", "0"}});
  std::string msg = load_error(kRefnet);
  EXPECT_NE(msg.find("0 devices"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no usable NIC"), std::string::npos) << msg;
}

TEST(NetLoader, UnknownInterfaceMeansZeroDevicesWithTheReasonInTheLog) {
  Env env({{"P2PSCOPE_REFNET_IFS", "nosuchif0"}});
  std::string msg = load_error(kRefnet);
  EXPECT_NE(msg.find("no usable NIC"), std::string::npos) << msg;
  EXPECT_NE(msg.find("interface nosuchif0 has no IPv4 address"), std::string::npos) << msg;
}

TEST(NetLoader, MissingNameListsWhatWasTried) {
  Env env({{"LD_LIBRARY_PATH", "/nonexistent-dir"}});
  std::string msg = load_error("nosuchplugin");
  EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("libnccl-net-nosuchplugin.so"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/nonexistent-dir"), std::string::npos) << msg;
}

TEST(NetLoader, CandidatesFollowNccl) {
  EXPECT_EQ(nccl_plugin_candidates(""), (std::vector<std::string>{"libnccl-net.so"}));
  EXPECT_EQ(nccl_plugin_candidates("aws-ofi"), (std::vector<std::string>{"aws-ofi", "libnccl-net-aws-ofi.so"}));
  EXPECT_EQ(nccl_plugin_candidates("libnccl-net-gcp.so"), (std::vector<std::string>{"libnccl-net-gcp.so"}));
  EXPECT_EQ(nccl_plugin_candidates("/opt/x/libnccl-net.so"), (std::vector<std::string>{"/opt/x/libnccl-net.so"}));
}

TEST(NetLoader, NameResolvesOnTheLibraryPathAsNcclWould) {
  const std::string dir = fs::path(kRefnet).parent_path().string();
  Env env({{"LD_LIBRARY_PATH", "/nonexistent-dir:" + dir}, {"NCCL_NET_PLUGIN", "p2pscope"}});
  auto p = Plugin::load({});  // empty: NCCL_NET_PLUGIN from the environment
  EXPECT_EQ(p->path(), fs::canonical(kRefnet).string());
  Resolution r = resolve_like_nccl("p2pscope");
  EXPECT_TRUE(r.found) << r.reason;
  EXPECT_EQ(r.path, fs::canonical(kRefnet).string());
  EXPECT_EQ(r.versions, (std::vector<int>{6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(r.reason.empty()) << r.reason;
  Resolution none = resolve_like_nccl("none");
  EXPECT_TRUE(none.disabled);
  EXPECT_FALSE(none.found);
  Resolution bad = resolve_like_nccl(P2PSCOPE_TEST_V5V12_PATH);
  EXPECT_TRUE(bad.found);
  EXPECT_NE(bad.reason.find("NCCL would skip it"), std::string::npos) << bad.reason;
  auto j = resolution_json(r);
  EXPECT_EQ(j["nccl_net_plugin"], "p2pscope");
}

TEST(NetLoader, UnsetFindsLibncclNetSoOrSaysWhy) {
  Env env({{"LD_LIBRARY_PATH", "/nonexistent-dir"}});
  ::unsetenv("NCCL_NET_PLUGIN");
  Resolution r = resolve_like_nccl("");
  if (!r.found) {
    EXPECT_NE(r.reason.find("libnccl-net.so"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("internal IB/socket transports"), std::string::npos) << r.reason;
  }
}

TEST(NetLoader, DoctorReportLoadsWhatNcclWouldOrSaysWhy) {
  const std::string dir = fs::path(kRefnet).parent_path().string();
  Env env({{"LD_LIBRARY_PATH", dir}});
  NcclPluginReport r = report_nccl_plugin("p2pscope");
  ASSERT_TRUE(r.plugin) << r.load_error;
  EXPECT_EQ(r.plugin->version(), 11);
  EXPECT_EQ(r.gpu_memory.rfind("no: host memory only", 0), 0u) << r.gpu_memory;
  auto j = r.to_json();
  EXPECT_EQ(j["devices"][0]["name"], "lo");
  EXPECT_EQ(j["nccl_would_load"]["found"], true);
  NcclPluginReport bad = report_nccl_plugin(P2PSCOPE_TEST_NOSYM_PATH);
  EXPECT_FALSE(bad.plugin);
  EXPECT_NE(bad.load_error.find("exports no ncclNetPlugin_vN symbol"), std::string::npos) << bad.load_error;
  EXPECT_EQ(bad.to_json()["load_error"], bad.load_error);
  NcclPluginReport none = report_nccl_plugin("none");
  EXPECT_FALSE(none.plugin);
  EXPECT_NE(none.gpu_memory.find("internal"), std::string::npos);
}
