// survey --sizes: the links' ping-pong points fitted as a campaign's, and written as
// analyze's links.json.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "survey/campaign.hpp"

namespace p2pscope::survey {
namespace {

// 3 hosts on one rail; every pair ping-pongs 1 KiB .. 1 MiB at 20 us + n / 25 MB/s one way.
Result three_hosts() {
  Result r;
  for (int h = 0; h < 3; ++h) {
    HostInfo hi;
    hi.rank = h;
    hi.host = "h" + std::to_string(h);
    hi.nics = {{"eth1", "10.0.0." + std::to_string(h + 1), 200}};
    r.hosts.push_back(hi);
    r.names.hosts.push_back(hi.host);
  }
  r.rails = identity_rails(1);
  r.names.rails = {"eth1"};
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(1.0, 0.01);
  for (const auto& [a, b] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}})
    for (std::uint64_t n = 1024; n <= (1u << 20); n *= 4) {
      Record rec;
      rec.step = "size", rec.server = a, rec.client = b, rec.rail = 0, rec.size_bytes = n;
      for (int i = 0; i < 21; ++i) rec.latency_ns.push_back((20e3 + static_cast<double>(n) / 25e6 * 1e9) * noise(rng));
      r.records.push_back(rec);
    }
  return r;
}

TEST(SurveyCampaign, EachLinksPointsGiveItsAlphaAndBeta) {
  const Result r = three_hosts();
  const auto links = link_models(r);
  ASSERT_EQ(links.size(), 6u);  // 3 pairs, both directions
  for (const auto& m : links) {
    EXPECT_EQ(m.backend, "tcp eth1");
    EXPECT_EQ(m.link_class, "NIC 200 Mb/s");
    EXPECT_EQ(m.sizes.size(), 6u);
    ASSERT_TRUE(m.fit.ok);
    EXPECT_NEAR(m.fit.alpha_ns, 20e3, 20e3 * 0.1) << m.src << "->" << m.dst;
    EXPECT_NEAR(m.fit.beta_bytes_per_s, 25e6, 25e6 * 0.03) << m.src << "->" << m.dst;
    EXPECT_NEAR(m.asymptotic_bytes_per_s, 25e6, 25e6 * 0.1);  // the 1 MiB point: 95 % of beta
  }
  EXPECT_EQ(links[0].src, 0);
  EXPECT_EQ(links[1].src, 0);
  EXPECT_EQ(links[2].src, 1);  // sorted by src, then dst
}

TEST(SurveyCampaign, FailedSessionsSecondPassesAndLonelySizesAreNotPoints) {
  Result r = three_hosts();
  // The 0 <-> 1 link: only its 1 KiB point completed; the rest failed or came from pass 2.
  for (Record& rec : r.records) {
    if (rec.server != 0 || rec.client != 1 || rec.size_bytes == 1024) continue;
    if (rec.size_bytes == 4096) rec.pass = 2;
    else rec.failure = "peer closed";
  }
  const auto links = link_models(r);
  EXPECT_EQ(links.size(), 4u);  // 0 <-> 1 has one point: left out, not fitted on one
  for (const auto& m : links) EXPECT_FALSE((m.src == 0 && m.dst == 1) || (m.src == 1 && m.dst == 0));
}

TEST(SurveyCampaign, LinksJsonIsAnalyzesSchemaWithTheHostsByNpu) {
  const Result r = three_hosts();
  const nlohmann::json j = links_json(r, link_models(r));
  EXPECT_EQ(j["kind"], "p2pscope_link_models");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["source"]["npu_hosts"], nlohmann::json({"h0", "h1", "h2"}));
  ASSERT_EQ(j["links"].size(), 6u);
  const auto& l = j["links"][0];
  EXPECT_EQ(l["backend"], "tcp eth1");
  EXPECT_TRUE(l["alpha_beta"].is_object());
  EXPECT_EQ(l["points"].size(), 6u);
  EXPECT_GT(l["points"][0]["median_ns"].get<double>(), 20e3);
}

// With --sizes the device pairs inside the hosts have points too: each rail is then also a
// network of two dimensions, NPU h x 2 + d device d of host h, the device pairs inside and
// every device pair across hosts at its hosts' link (the grid export's check looks for).
TEST(SurveyCampaign, DevicePairsAtTheSizesMakeEachRailAGridOfTwoDimensions) {
  Result r = three_hosts();
  for (int h = 0; h < 3; ++h)
    for (const auto& [a, b] : {std::pair{0, 1}, std::pair{1, 0}})
      for (std::uint64_t n = 1024; n <= (1u << 20); n *= 4) {
        Record rec;
        rec.step = "gpu", rec.server = h, rec.client = h, rec.rail = -1, rec.size_bytes = n;
        rec.backend = "ce", rec.dev_src = a, rec.dev_dst = b;
        for (int i = 0; i < 9; ++i) rec.latency_ns.push_back(2e3 + static_cast<double>(n) / 400e9 * 1e9);
        r.records.push_back(rec);
      }
  Record judged;  // the device pair's figure at --gpu-size: not a point
  judged.step = "gpu", judged.server = judged.client = 0, judged.backend = "ce", judged.dev_src = 0, judged.dev_dst = 1;
  judged.c2s_bytes_per_s = {400e9};
  r.records.push_back(judged);
  const auto links = link_models(r);
  std::size_t flat = 0, inside = 0, across = 0;
  std::set<std::pair<int, int>> pairs;
  for (const auto& m : links) {
    if (m.backend == "tcp eth1") {
      ++flat;
      continue;
    }
    ASSERT_EQ(m.backend, "tcp eth1 + ce");
    pairs.insert({m.src, m.dst});
    if (m.src / 2 == m.dst / 2) {
      ++inside;
      EXPECT_EQ(m.link_class, "device pair (ce)");
      EXPECT_NEAR(m.fit.beta_bytes_per_s, 400e9, 400e9 * 0.05);
    } else {
      ++across;
      EXPECT_EQ(m.link_class, "NIC 200 Mb/s");
      EXPECT_NEAR(m.fit.beta_bytes_per_s, 25e6, 25e6 * 0.03);
    }
  }
  EXPECT_EQ(flat, 6u) << "the rail's own one-dimensional links stay";
  EXPECT_EQ(inside, 6u) << "3 hosts x 2 directed device pairs";
  EXPECT_EQ(across, 24u) << "6 directed host pairs x 2 x 2 devices";
  EXPECT_EQ(pairs.size(), 30u) << "every directed pair of the 6 NPUs, once";
  const nlohmann::json j = links_json(r, links);
  EXPECT_EQ(j["source"]["npu_devices_per_host"], 2);
}

}  // namespace
}  // namespace p2pscope::survey
