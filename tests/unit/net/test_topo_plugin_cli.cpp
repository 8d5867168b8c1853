// `p2pscope topo --net-plugin` end to end (skips when the binary was not built:
// areas build alone, `make build` builds it).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "net_test_util.hpp"
#include "support/run_binary.hpp"

namespace {

std::pair<int, std::string> run(const std::string& args) {
  const p2pscope::test::Result r = p2pscope::test::run_binary(args);
  return {r.code, r.out};
}

}  // namespace

TEST(NetTopoCli, ShowsThePluginsDevicesAndWhatNcclWouldLoad) {
  if (!std::filesystem::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope not built";
  auto [rc, out] = run(std::string("topo --net-plugin ") + nettest::kRefnet + " --format json");
  ASSERT_EQ(rc, 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["plugin"]["name"], "p2pscope-refnet");
  EXPECT_EQ(j["devices"][0]["name"], "lo");
  EXPECT_EQ(j["devices"][0]["gdr"], false);
  EXPECT_TRUE(j.contains("nccl_would_load"));
  EXPECT_TRUE(j.contains("metadata"));
  auto [rc2, text] = run(std::string("topo --net-plugin ") + nettest::kRefnet);
  EXPECT_EQ(rc2, 0);
  EXPECT_NE(text.find("GPU memory: no: host memory only"), std::string::npos) << text;
  EXPECT_NE(text.find("NCCL would load"), std::string::npos) << text;
}

TEST(NetTopoCli, ABadPluginIsAnErrorNamingIt) {
  if (!std::filesystem::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope not built";
  auto [rc, out] = run(std::string("topo --net-plugin ") + P2PSCOPE_TEST_NOSYM_PATH);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("exports no ncclNetPlugin_vN symbol"), std::string::npos) << out;
}
