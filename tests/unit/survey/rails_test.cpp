// --rails: the map's forms and errors, and which NIC each end of a pair uses on a rail
// that crosses (the lower-ranked host's first), in the sessions and in the figures' classes.
#include <gtest/gtest.h>

#include "p2pscope/error.hpp"
#include "survey/survey.hpp"

namespace p2pscope::survey {
namespace {

TEST(SurveyRails, FormsOfTheMap) {
  EXPECT_EQ(parse_rails("0:0,1:1", {}), identity_rails(2));
  EXPECT_EQ(parse_rails("1", {}), (std::vector<Rail>{{1, 1}}));
  EXPECT_EQ(parse_rails("0:1,1:0", {}), (std::vector<Rail>{{0, 1}, {1, 0}}));
  EXPECT_EQ(parse_rails("eth2:eth1", {"eth1", "eth2"}), (std::vector<Rail>{{1, 0}}));
  EXPECT_EQ(parse_rails("eth2:0", {"eth1", "eth2"}), (std::vector<Rail>{{1, 0}}));
}

TEST(SurveyRails, ErrorsNameTheEntry) {
  const auto message = [](const char* spec, std::vector<std::string> nics) {
    try {
      parse_rails(spec, nics);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("0:1,0:1", {}).find("rail 0:1 given twice"), std::string::npos);
  EXPECT_NE(message("0:x", {}).find("only together with --nics"), std::string::npos);
  EXPECT_NE(message("eth9:eth1", {"eth1", "eth2"}).find("neither a NIC index nor one of --nics (eth1, eth2)"),
            std::string::npos);
  for (const char* bad : {"", ",", "0:", ":1", "0:1:2", "0,,1", "-1:0", "99999:0"})
    EXPECT_THROW(parse_rails(bad, {}), UsageError) << bad;
}

std::vector<HostInfo> hosts(int n) {
  std::vector<HostInfo> out;
  for (int h = 0; h < n; ++h) {
    HostInfo i;
    i.rank = h, i.host = "h" + std::to_string(h);
    i.nics = {{"eth1", "10.0.1." + std::to_string(h), 100000}, {"eth2", "10.0.2." + std::to_string(h), 25000}};
    out.push_back(i);
  }
  return out;
}

TEST(SurveyRails, ACrossingRailUsesTheLowerRanksNicFirst) {
  const auto hs = hosts(3);
  const std::vector<Rail> rails = {{0, 1}};
  EXPECT_EQ(rail_nic(hs, rails, 0, 2, 0).ipv4, "10.0.1.0");  // h0 is the lower: its eth1
  EXPECT_EQ(rail_nic(hs, rails, 2, 0, 0).ipv4, "10.0.2.2");  // h2 the higher: its eth2
  EXPECT_EQ(rail_nic(hs, rails, 1, 0, 0).name, "eth2");      // against h0, h1 is the higher
  EXPECT_EQ(rail_nic(hs, rails, 1, 2, 0).name, "eth1");      // against h2, the lower
  EXPECT_EQ(rail_label(hs[0], rails[0]), "eth1:eth2");
  EXPECT_EQ(rail_label(hs[0], {1, 1}), "eth2");
}

TEST(SurveyRails, AFiguresClassIsItsSlowerEndsSpeedOnTheMappedNics) {
  const auto hs = hosts(2);
  Record r;
  r.step = "bw", r.server = 0, r.client = 1, r.rail = 0;
  r.c2s_bytes_per_s = r.s2c_bytes_per_s = {1e9, 1e9, 1e9};
  // Identity: rail 0 is eth1 at both ends, 100 Gb/s.
  EXPECT_EQ(figures_of({r}, hs).at(0).cls, "NIC 100000 Mb/s");
  // Crossing: h0's eth1 (100 Gb/s) with h1's eth2 (25 Gb/s): the slower end's class.
  EXPECT_EQ(figures_of({r}, hs, {{0, 1}}).at(0).cls, "NIC 25000 Mb/s");
}

TEST(SurveyRails, AMapPastTheHostsNicsIsRefusedByName) {
  Options o;
  o.rails = {{0, 2}};
  try {
    check_hosts(hosts(2), o);
    FAIL() << "NIC 2 of 2 must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--rails 0:2 names NIC 2 but the hosts have 2 NICs to survey (h0: eth1, eth2)"),
              std::string::npos)
        << e.what();
  }
}

// --per gpu: the ranks of one host name make that host, its lowest rank's description
// standing for it, in the order of their lowest ranks; rail r then runs from its r-th rank.
TEST(SurveyPerGpu, RanksOfOneHostMakeThatHost) {
  std::vector<HostInfo> ranks;
  for (int r = 0; r < 6; ++r) {
    HostInfo i;
    i.rank = r, i.host = r < 2 ? "a" : r < 4 ? "b" : "c";
    if (r == 5) i.host = "a";  // a launcher that placed a rank out of order
    i.nics = {{"eth1", "10.0.1." + std::to_string(r + 1), 200}, {"eth2", "10.0.2." + std::to_string(r + 1), 200}};
    ranks.push_back(i);
  }
  Options o;
  Result r;
  EXPECT_NO_THROW(group_ranks(ranks, o, r));  // --per host: a host a rank (check_hosts then refuses)
  EXPECT_EQ(r.hosts.size(), 6u);
  EXPECT_THROW(check_hosts(r.hosts, o), UsageError);
  o.per_gpu = true;
  group_ranks(ranks, o, r);
  ASSERT_EQ(r.hosts.size(), 3u);
  EXPECT_EQ(r.members, (std::vector<std::vector<int>>{{0, 1, 5}, {2, 3}, {4}}));
  EXPECT_EQ(r.hosts[1].rank, 2);
  EXPECT_NO_THROW(check_hosts(r.hosts, o));
  EXPECT_EQ(host_of(r.members, 5), 0);
  EXPECT_EQ(host_of(r.members, 4), 2);
  EXPECT_EQ(host_of(r.members, 9), -1);
  ranks[3].nics.pop_back();  // a rank of host b that sees one NIC
  try {
    group_ranks(ranks, o, r);
    FAIL() << "ranks of one host with different NICs accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("ranks 2 and 3 on host b see different NICs (eth1,eth2 and eth1)"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace p2pscope::survey
