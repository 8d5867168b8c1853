// NCCL environment checks: unknown names with a suggestion, ranges, contradictions.
#include <gtest/gtest.h>

#include "p2pscope/tune.hpp"

using namespace p2pscope::tune;

namespace {
const Finding* by_id(const std::vector<Finding>& f, const std::string& id) {
  for (const auto& x : f)
    if (x.id == id) return &x;
  return nullptr;
}
}  // namespace

TEST(NcclEnv, SuggestsTheIntendedVariable) {
  EXPECT_EQ(closest_nccl_variable("NCCL_SOCKET_IFNAMES"), "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(closest_nccl_variable("NCCL_IB_GID_IDX"), "NCCL_IB_GID_INDEX");
  EXPECT_EQ(closest_nccl_variable("NCCL_P2P_DISABLED"), "NCCL_P2P_DISABLE");
  EXPECT_EQ(closest_nccl_variable("nccl_debug"), "NCCL_DEBUG");
  EXPECT_EQ(closest_nccl_variable("NCCL_NET_GRD_LEVEL"), "NCCL_NET_GDR_LEVEL");  // transposition
  EXPECT_EQ(closest_nccl_variable("NCCL_COMPLETELY_MADE_UP_THING"), "");
  EXPECT_TRUE(is_known_nccl_variable("NCCL_IB_HCA"));
  EXPECT_FALSE(is_known_nccl_variable("NCCL_IB_HCAS"));

  const auto f = check_nccl_env({{"NCCL_SOCKET_IFNAMES", "eth0"}, {"NCCL_DEBUG", "INFO"}});
  const auto* u = by_id(f, "env.unknown_variable");
  ASSERT_NE(u, nullptr);
  EXPECT_NE(u->title.find("did you mean NCCL_SOCKET_IFNAME"), std::string::npos);
  EXPECT_NE(u->fix.find("export NCCL_SOCKET_IFNAME=eth0"), std::string::npos);
  EXPECT_EQ(by_id(f, "env.out_of_range"), nullptr);  // NCCL_DEBUG=INFO is fine
}

TEST(NcclEnv, OutOfRangeValues) {
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{{"NCCL_IB_TIMEOUT", "40"},
                                                                       {"NCCL_IB_RETRY_CNT", "8"},
                                                                       {"NCCL_P2P_DISABLE", "yes"},
                                                                       {"NCCL_NTHREADS", "100"},
                                                                       {"NCCL_P2P_LEVEL", "FAR"},
                                                                       {"NCCL_DEBUG", "LOUD"},
                                                                       {"NCCL_IB_GID_INDEX", "-3"}}) {
    const auto f = check_nccl_env({{k, v}});
    const auto* e = by_id(f, "env.out_of_range");
    ASSERT_NE(e, nullptr) << k << "=" << v;
    EXPECT_EQ(e->severity, "error");
    EXPECT_EQ(e->evidence.at(0), k + "=" + v);
  }
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"NCCL_IB_TIMEOUT", "22"}, {"NCCL_P2P_LEVEL", "nvl"}, {"NCCL_NET_GDR_LEVEL", "2"}, {"NCCL_IB_GID_INDEX", "3"}})
    EXPECT_EQ(by_id(check_nccl_env({{k, v}}), "env.out_of_range"), nullptr) << k << "=" << v;
}

TEST(NcclEnv, Contradictions) {
  auto f = check_nccl_env({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_P2P_LEVEL", "NVL"}});
  ASSERT_NE(by_id(f, "env.contradiction"), nullptr);
  EXPECT_NE(by_id(f, "env.contradiction")->title.find("NCCL_P2P_LEVEL"), std::string::npos);
  f = check_nccl_env({{"NCCL_IB_DISABLE", "1"}, {"NCCL_IB_HCA", "mlx5_0"}, {"NCCL_NET", "IB"}});
  int n = 0;
  for (const auto& x : f) n += x.id == "env.contradiction";
  EXPECT_EQ(n, 2);
  f = check_nccl_env({{"NCCL_MIN_NCHANNELS", "16"}, {"NCCL_MAX_NCHANNELS", "8"}});
  EXPECT_NE(by_id(f, "env.contradiction"), nullptr);
  f = check_nccl_env({{"NCCL_SOCKET_NTHREADS", "16"}, {"NCCL_NSOCKS_PERTHREAD", "8"}});
  EXPECT_NE(by_id(f, "env.out_of_range"), nullptr);
  f = check_nccl_env({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}});
  EXPECT_NE(by_id(f, "env.intra_node_network"), nullptr);
  EXPECT_EQ(by_id(f, "env.contradiction"), nullptr);
  EXPECT_NE(by_id(check_nccl_env({{"NCCL_SOCKET_IFNAME", "lo"}}), "env.socket_ifname_virtual"), nullptr);
  EXPECT_EQ(by_id(check_nccl_env({{"NCCL_SOCKET_IFNAME", "^lo,docker"}}), "env.socket_ifname_virtual"), nullptr);
  EXPECT_TRUE(check_nccl_env({}).empty());
}
