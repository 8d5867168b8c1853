// survey --transport nccl's link on a real GPU: the two sides' children (`bench gpu
// --backend nccl`) meet on loopback as two hosts (their own NCCL_HOSTIDs, so one GPU is
// enough), and rank 0's record holds both directions' rates and NCCL's path.
// P2PSCOPE_BIN overrides the binary's path (the device machine runs a copied binary).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "p2pscope/auth.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "survey/nccl_link.hpp"

using namespace p2pscope;
using namespace p2pscope::survey;

namespace {

std::string binary() {
  const char* b = std::getenv("P2PSCOPE_BIN");
  return b && *b ? b : P2PSCOPE_BINARY;
}

NcclLinkSpec spec(int rank, int port, const std::string& token, const std::string& step) {
  NcclLinkSpec s;
  s.rank = rank;
  s.rendezvous_ip = "127.0.0.1";
  s.port = port;
  s.token = token;
  s.nic = "lo";
  s.host_id = rank == 0 ? "server-host" : "client-host";
  s.gpu = "0";
  s.size_bytes = step == "bw" ? 4u << 20 : 8;
  s.iters = step == "bw" ? 5 : 20;
  s.timeout_s = 120;
  s.dir = (std::filesystem::temp_directory_path() /
           ("p2pscope-gpu-nccl-link-" + step + "-" + std::to_string(::getpid())))
              .string();
  s.self = binary();
  return s;
}

// Why these tests cannot run here ("" where they can). GTEST_SKIP in a helper would end
// the helper only, so each test skips on this itself.
std::string cannot_run() {
  const gpu::RuntimeInfo info = gpu::runtime_info();
  if (!info.nccl_built || info.device_count <= 0) return "needs NCCL and a GPU: " + info.why_no_gpu;
  if (!std::filesystem::exists(binary())) return "p2pscope binary not built (" + binary() + "); set P2PSCOPE_BIN";
  return "";
}
#define SKIP_WITHOUT_GPU() \
  if (const std::string why = cannot_run(); !why.empty()) GTEST_SKIP() << why

Record run_link(const std::string& step) {
  const int port = free_port_on("127.0.0.1");
  const std::string token = auth::random_nonce_hex(16);
  Record server, client;
  server.step = client.step = step;
  NcclLinkSide s0(spec(0, port, token, step));
  NcclLinkSide s1(spec(1, port, token, step));
  std::thread t([&] { s1.finish(client); });
  s0.finish(server);
  t.join();
  EXPECT_EQ(client.failure, "");  // the client side reports only trouble
  EXPECT_TRUE(client.c2s_bytes_per_s.empty());
  return server;
}

TEST(SurveyNcclLinkGpu, BothDirectionsOfALinkOverNcclsSocketsAreMeasuredAndItsPathNamed) {
  SKIP_WITHOUT_GPU();
  const Record r = run_link("bw");
  ASSERT_EQ(r.failure, "");
  ASSERT_EQ(r.c2s_bytes_per_s.size(), 5u);
  ASSERT_EQ(r.s2c_bytes_per_s.size(), 5u);
  for (const double v : r.c2s_bytes_per_s) {
    EXPECT_GT(v, 1e6);    // 4 MiB over loopback sockets: not less than 1 MB/s
    EXPECT_LT(v, 100e9);  // nor more than memory could copy: NCCL's NET path, not P2P
  }
  EXPECT_NE(r.via.find("NET/Socket lo"), std::string::npos) << r.via;
  EXPECT_FALSE(std::filesystem::exists(spec(0, 0, "", "bw").dir)) << "a clean link's files are removed";
}

TEST(SurveyNcclLinkGpu, ALatencyStepGivesEveryOneWayTimeOfBothDirections) {
  SKIP_WITHOUT_GPU();
  const Record r = run_link("lat");
  ASSERT_EQ(r.failure, "");
  ASSERT_EQ(r.latency_ns.size(), 40u);
  for (const double ns : r.latency_ns) {
    EXPECT_GT(ns, 1000);   // an 8-byte message over NCCL's sockets: microseconds, not less than 1
    EXPECT_LT(ns, 50e6);
  }
}

TEST(SurveyNcclLinkGpu, APeerThatNeverComesFailsTheLinkWithinItsBoundAndKeepsItsFiles) {
  SKIP_WITHOUT_GPU();
  NcclLinkSpec s = spec(0, free_port_on("127.0.0.1"), auth::random_nonce_hex(16), "alone");
  s.timeout_s = 8;
  Record r;
  r.step = "bw";
  const auto t0 = std::chrono::steady_clock::now();
  NcclLinkSide side(s);
  side.finish(r);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 8 + 3 + 2);  // the bound, the kill's grace, a margin
  EXPECT_NE(r.failure.find("NCCL rank 0 (server side)"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find(s.dir), std::string::npos) << r.failure;
  EXPECT_TRUE(std::filesystem::exists(s.dir));
  std::filesystem::remove_all(s.dir);
}

}  // namespace
