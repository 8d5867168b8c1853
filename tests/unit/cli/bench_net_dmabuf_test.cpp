// `p2pscope bench net --dmabuf` through the built binary: refusals exit 2 with the
// reason before anything is measured, and the JSON says how each channel registered.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_binary.hpp"

namespace fs = std::filesystem;
using p2pscope::test::run_binary;

namespace {

class BenchNetDmabufCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (" << P2PSCOPE_BINARY << ")";
    refnet_ = (fs::path(P2PSCOPE_BINARY).parent_path() / "lib" / "libnccl-net-p2pscope.so").string();
    if (!fs::exists(refnet_)) GTEST_SKIP() << "reference plugin not built (" << refnet_ << ")";
  }
  std::string net(const std::string& args) const {
    return "bench net --plugin " + refnet_ + " --loopback --size 1M --chunk 256K --iters 1 " + args;
  }
  std::string refnet_;
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_F(BenchNetDmabufCli, OnWithHostMemoryExits2SayingAddMemGpu) {
  const auto r = run_binary(net("--dmabuf on"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "--dmabuf on registers CUDA memory through a dma-buf") && has(r.out, "add --mem gpu")) << r.out;
  EXPECT_FALSE(has(r.out, "Per channel")) << "nothing is measured";
}

TEST_F(BenchNetDmabufCli, OnWithAPluginWithoutDmabufExits2NamingWhatItOffers) {
  const auto r = run_binary(net("--dmabuf on --mem gpu"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "device 0 (lo) offers host memory, not DMA-BUF (NCCL_PTR_DMABUF)") &&
              has(r.out, "use --dmabuf auto"))
      << r.out;
}

TEST_F(BenchNetDmabufCli, UnknownModeExits2BeforeLoadingThePlugin) {
  const auto r = run_binary(net("--dmabuf yes"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "--dmabuf 'yes': expected auto, on or off")) << r.out;
  EXPECT_FALSE(has(r.out, "loaded net plugin")) << r.out;
}

TEST_F(BenchNetDmabufCli, JsonSaysEachChannelsRegistration) {
  const auto r = run_binary(net("--channels 2 --dmabuf off --format json"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto start = r.out.find("\n{");  // after the "loaded net plugin" line on stderr
  ASSERT_NE(start, std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(start + 1));
  for (const char* side : {"client", "server"}) {
    ASSERT_EQ(j[side]["channels"].size(), 2u) << side;
    for (const auto& c : j[side]["channels"]) EXPECT_EQ(c.at("registration"), "host") << side;
  }
}
