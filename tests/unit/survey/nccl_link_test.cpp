// survey --transport nccl: a link's figures from NCCL's own send/recv (nccl_link.hpp).
// The fixtures are rank 0's output and NCCL_DEBUG=INFO file of a real link on the H200
// device: two namespace hosts on its one GPU, NCCL's sockets over eth1 shaped to 200mbit
// (tests/fixtures/survey/nccl-link-rank0.{json,log}).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "p2pscope/auth.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "survey/nccl_link.hpp"
#include "survey/request.hpp"
#include "survey/transport.hpp"

namespace p2pscope::survey {
namespace {
namespace fs = std::filesystem;

std::string fixture() {
  std::ifstream in(fs::path(P2PSCOPE_FIXTURES_DIR) / "survey/nccl-link-rank0.json");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SurveyNcclLink, EachDirectionsRatesAreItsBytesOverEachSamplesTime) {
  const std::string text = fixture();
  ASSERT_FALSE(text.empty()) << "fixture missing";
  const auto j = nlohmann::json::parse(text);
  Record bw;
  bw.step = "bw";
  ASSERT_EQ(take_nccl_figures(bw, text), "");
  for (const auto& row : j["rows"]) {
    // Rank 1 is the client: 1 -> 0 is client to server.
    const auto& rates = row["src"] == 1 ? bw.c2s_bytes_per_s : bw.s2c_bytes_per_s;
    const auto& ns = row["samples_ns"];
    ASSERT_EQ(rates.size(), ns.size());
    for (std::size_t i = 0; i < ns.size(); ++i)
      EXPECT_NEAR(rates[i], row["size_bytes"].get<double>() / ns[i].get<double>() * 1e9, rates[i] * 1e-12);
  }
  EXPECT_TRUE(bw.latency_ns.empty());
  Record lat;
  lat.step = "lat";
  ASSERT_EQ(take_nccl_figures(lat, text), "");
  std::size_t samples = 0;
  for (const auto& row : j["rows"]) samples += row["samples_ns"].size();
  EXPECT_EQ(lat.latency_ns.size(), samples);  // both directions' one-way times
  EXPECT_TRUE(lat.c2s_bytes_per_s.empty());
}

TEST(SurveyNcclLink, ARowThatFailedItsCheckOrWasNotSupportedOrLacksADirectionIsNoFigure) {
  auto j = nlohmann::json::parse(fixture());
  ASSERT_TRUE(j.contains("rows"));
  Record r;
  r.step = "bw";
  auto failed = j;
  failed["rows"][0]["check"] = "FAIL at byte 12";
  EXPECT_EQ(take_nccl_figures(r, failed.dump()), "NCCL's data check failed");
  auto unsupported = j;
  unsupported["rows"][1]["supported"] = false;
  unsupported["rows"][1]["reason"] = "no peer";
  EXPECT_NE(take_nccl_figures(r, unsupported.dump()).find("not supported: no peer"), std::string::npos);
  auto one_way = j;
  one_way["rows"].erase(1);
  EXPECT_EQ(take_nccl_figures(r, one_way.dump()), "rank 0's JSON lacks one direction of the pair");
  auto stranger = j;
  stranger["rows"][0]["src"] = 2;
  EXPECT_NE(take_nccl_figures(r, stranger.dump()).find("neither direction"), std::string::npos);
  EXPECT_EQ(take_nccl_figures(r, "{\"rows\": ["), "rank 0's JSON does not parse");
}

TEST(SurveyNcclLink, ThePathNcclTookIsReadFromTheChildsLog) {
  // The same link's NCCL_DEBUG=INFO file: NCCL's sockets on the rail's NIC.
  EXPECT_EQ(nccl_path_of((fs::path(P2PSCOPE_FIXTURES_DIR) / "survey/nccl-link-rank0.log").string()),
            "NCCL 2.28.3+cuda13.0, NET/Socket eth1");
  EXPECT_EQ(nccl_path_of("/nonexistent/nccl-rank0.log"), "");
}

Record side(const std::string& failure, double rate) {
  Record r;
  r.step = "bw", r.server = 0, r.client = 1, r.rail = 1, r.round = 2;
  r.failure = failure;
  if (rate > 0) r.c2s_bytes_per_s = r.s2c_bytes_per_s = {rate};
  return r;
}

TEST(SurveyNcclLink, BothSidesOfALinkMakeOneRecordWhicheverArrivesFirst) {
  // The client's failure first, the server's figures after: the figures stay, the
  // client's trouble becomes a note on them.
  std::vector<Record> merged = merge_link_sides({side("NCCL rank 1 (client side) exited 1", 0), side("", 5e9)});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].failure, "");
  EXPECT_EQ(merged[0].c2s_bytes_per_s, std::vector<double>{5e9});
  EXPECT_NE(merged[0].via.find("the other side: NCCL rank 1"), std::string::npos);
  // Both failed: one record naming both.
  merged = merge_link_sides({side("rank 0 timed out", 0), side("rank 1 exited 1", 0)});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].failure, "rank 0 timed out; rank 1 exited 1");
  // Another rail is another link; local ceilings are never merged.
  Record other = side("", 4e9);
  other.rail = 0;
  Record local = side("", 1e9), local2 = local;
  local.step = local2.step = "local";
  merged = merge_link_sides({side("", 5e9), other, local, local2});
  EXPECT_EQ(merged.size(), 4u);
}

TEST(SurveyNcclLink, TheChildsEnvironmentNamesTheRailsNicAndItsHostAndNoLauncherRank) {
  NcclLinkSpec s;
  s.rank = 1, s.rendezvous_ip = "10.0.1.2", s.port = 4242, s.token = "secret", s.nic = "eth2";
  s.host_id = "h3", s.gpu = "1", s.dir = "/tmp/x";
  const auto env = nccl_link_env(s);
  EXPECT_EQ(env.at("NCCL_SOCKET_IFNAME"), "=eth2");  // that NIC, not every name it prefixes
  EXPECT_EQ(env.at("NCCL_HOSTID"), "p2pscope-survey-h3");
  EXPECT_EQ(env.at("P2PSCOPE_RENDEZVOUS"), "10.0.1.2:4242");
  EXPECT_EQ(env.at("RANK"), "1");
  EXPECT_EQ(env.at("WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(env.at("NCCL_DEBUG_FILE"), "/tmp/x/nccl-rank1.log");
  EXPECT_EQ(env.count("NCCL_IB_HCA"), 0u);  // no RDMA device is eth2's function here
}

TEST(SurveyNcclLink, AHostNameFromAnotherRankCannotMoveTheFolderThatIsRemoved) {
  const fs::path d = nccl_link_dir("bw", "../../etc", "h1/../../root", 1, 2, 0);
  EXPECT_EQ(d.parent_path(), fs::temp_directory_path());
  const std::string name = d.filename().string();
  EXPECT_EQ(name.find('/'), std::string::npos);
  EXPECT_EQ(name.find(".."), std::string::npos) << name;
  EXPECT_EQ(name.rfind("p2pscope-survey-nccl-bw-______etc-h1_______root-p1r2-rail0-", 0), 0u) << name;
}

TEST(SurveyNcclLink, OnlyAPortAndSecretAsTheServerSideMakesThemStartAClient) {
  const std::string secret = auth::random_nonce_hex(16);
  EXPECT_TRUE(is_link_offer({{"port", 23457}, {"token", secret}}));
  // What a stranger in a rank's place may send instead: never a child started with it.
  EXPECT_FALSE(is_link_offer({{"port", 0}, {"token", secret}}));
  EXPECT_FALSE(is_link_offer({{"port", 70000}, {"token", secret}}));
  EXPECT_FALSE(is_link_offer({{"port", "23457"}, {"token", secret}}));
  EXPECT_FALSE(is_link_offer({{"port", 23457}, {"token", secret + "; rm -rf /"}}));
  EXPECT_FALSE(is_link_offer({{"port", 23457}, {"token", std::string(32, 'Z')}}));
  EXPECT_FALSE(is_link_offer({{"port", 23457}}));
  EXPECT_FALSE(is_link_offer(23457));
}

TEST(SurveyNcclLink, TheRdmaDeviceOfANicIsTheOneOnItsPciFunction) {
  const fs::path root = fs::temp_directory_path() / ("nccl-link-sysfs-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path fn = root / "devices/pci0000:30/0000:3a:00.0", other = root / "devices/pci0000:30/0000:3a:00.1";
  fs::create_directories(fn), fs::create_directories(other);
  fs::create_directories(root / "class/net/ens2"), fs::create_directories(root / "class/net/veth0");
  fs::create_directories(root / "class/infiniband/mlx5_0"), fs::create_directories(root / "class/infiniband/mlx5_1");
  fs::create_directory_symlink(fn, root / "class/net/ens2/device");
  fs::create_directory_symlink(other, root / "class/infiniband/mlx5_0/device");
  fs::create_directory_symlink(fn, root / "class/infiniband/mlx5_1/device");
  EXPECT_EQ(rdma_device_of("ens2", root.string()), "mlx5_1");
  EXPECT_EQ(rdma_device_of("veth0", root.string()), "");  // virtual: no PCI function
  EXPECT_EQ(rdma_device_of("nosuch", root.string()), "");
  fs::remove_all(root);
}

TEST(SurveyNcclLink, EachRailTakesItsGpuFromTheListThisProcessWasGiven) {
  ::setenv("CUDA_VISIBLE_DEVICES", "3,5", 1);
  EXPECT_EQ(gpu_for_link(0, false), "3");
  EXPECT_EQ(gpu_for_link(1, false), "5");
  EXPECT_EQ(gpu_for_link(2, false), "3");
  // --per gpu: the launcher's local rank picks it, whatever the rail.
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1), ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1), ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  EXPECT_EQ(gpu_for_link(0, true), "5");
  for (const char* v : {"CUDA_VISIBLE_DEVICES", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                        "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    ::unsetenv(v);
}

TEST(SurveyNcclLink, AHostWithoutAGpuOrNcclCannotTakePartAndSaysWhichToUseInstead) {
  HostInfo h;
  h.nics = {{"eth1", "10.0.0.1", 1000}};
  Options o;
  o.transport = "nccl";
  const LinkTransport t = open_transport(o, h);
  EXPECT_EQ(t.name, "nccl send/recv");
  const gpu::RuntimeInfo info = gpu::runtime_info();
  if (info.nccl_built && info.device_count > 0) {
    EXPECT_EQ(h.problem, "");
  } else {
    EXPECT_EQ(h.problem.rfind("--transport nccl: ", 0), 0u) << h.problem;
    EXPECT_NE(h.problem.find("--transport tcp or net"), std::string::npos) << h.problem;
  }
}

TEST(SurveyNcclLink, NcclIsATransportAndItsPluginIsNcclsOwnBusiness) {
  Request c;
  c.transport = "nccl";
  EXPECT_EQ(options_of(c, "127.0.0.1").transport, "nccl");
  c.plugin = "/x/libnccl-net-p2pscope.so";
  try {
    (void)options_of(c, "127.0.0.1");
    FAIL() << "--plugin with --transport nccl was taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL_NET_PLUGIN"), std::string::npos) << e.what();
  }
  c.plugin.clear();
  c.transport = "ib";
  EXPECT_THROW((void)options_of(c, "127.0.0.1"), UsageError);
}

}  // namespace
}  // namespace p2pscope::survey
