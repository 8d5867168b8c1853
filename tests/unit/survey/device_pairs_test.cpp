// Device pairs inside hosts: the figures they give, what the verdict names (one slow GPU,
// one slow pair, nothing on a healthy fleet), and the real engine on this machine's host
// backend (no GPU here: memory between NUMA nodes, two buffers on one node).
#include <gtest/gtest.h>

#include <random>

#include "p2pscope/gpu_runtime.hpp"
#include "survey/device_pairs.hpp"
#include "survey/survey.hpp"

namespace p2pscope::survey {
namespace {

// `hosts` hosts of `devices` devices, every directed pair, 9 samples at 100 GB/s with 1 %
// noise; factor(host, src, dst) scales a pair.
template <class F>
std::vector<Figure> fleet(int hosts, int devices, F factor) {
  std::mt19937 rng(3);
  std::normal_distribution<double> d(1.0, 0.01);
  std::vector<Figure> out;
  for (int h = 0; h < hosts; ++h)
    for (int s = 0; s < devices; ++s)
      for (int t = 0; t < devices; ++t) {
        if (s == t) continue;
        Figure f{Metric::bandwidth, 1, h, h, -1, "device pair ce " + std::to_string(s) + "->" + std::to_string(t), {}, s, t};
        for (int i = 0; i < 9; ++i) f.samples.push_back(100e9 * factor(h, s, t) * d(rng));
        out.push_back(f);
      }
  return out;
}

ClusterNames names(int n) {
  ClusterNames c;
  for (int h = 0; h < n; ++h) c.hosts.push_back("h" + std::to_string(h)), c.nics.push_back({"eth1"});
  c.rails = {"eth1"};
  return c;
}

TEST(SurveyDevicePairs, OneSlowGpuIsNamedAsTheDevice) {
  const auto js = judge(fleet(6, 4, [](int h, int s, int t) { return h == 2 && (s == 3 || t == 3) ? 0.6 : 1.0; }), {});
  const Verdict v = decide(js, names(6), {});
  ASSERT_EQ(v.findings.size(), 1u) << v.headline;
  EXPECT_EQ(v.findings[0].kind, "device");
  EXPECT_EQ(v.findings[0].host, 2);
  EXPECT_NE(v.findings[0].text.find("h2 device 3 slow: its pairs"), std::string::npos) << v.findings[0].text;
  EXPECT_NE(v.findings[0].text.find("at 60 % of the same pairs on the other hosts"), std::string::npos)
      << v.findings[0].text;
}

TEST(SurveyDevicePairs, OneSlowPairIsThatPairsPath) {
  const auto js = judge(fleet(6, 4, [](int h, int s, int t) { return h == 4 && s == 0 && t == 1 ? 0.7 : 1.0; }), {});
  const Verdict v = decide(js, names(6), {});
  ASSERT_EQ(v.findings.size(), 1u) << v.headline;
  EXPECT_NE(v.findings[0].text.find("h4 device pair 0 -> 1 (ce) at 70 %"), std::string::npos) << v.findings[0].text;
}

TEST(SurveyDevicePairs, AHealthyFleetSaysItsDevicePairsAreWithinTheirClasses) {
  const auto js = judge(fleet(6, 4, [](int, int, int) { return 1.0; }), {});
  const Verdict v = decide(js, names(6), {});
  EXPECT_TRUE(v.findings.empty()) << v.headline;
  EXPECT_NE(v.headline.find("and 72 device pairs inside hosts within theirs"), std::string::npos) << v.headline;
}

// Host copies move with the CPUs' other work: only a gross deficit is a finding; GPU copies
// need 10 %, not a NIC's 5 %.
TEST(SurveyDevicePairs, TheirThresholdsAreTheLocalOnesForHostMemoryAndTenPercentForGpus) {
  auto with = [](const char* backend, double slow) {
    auto fs = fleet(6, 2, [&](int h, int s, int) { return h == 1 && s == 0 ? slow : 1.0; });
    for (Figure& f : fs) f.cls.replace(f.cls.find(" ce "), 4, std::string(" ") + backend + " ");
    return decide(judge(fs, {}), names(6), {}).findings.size();
  };
  EXPECT_EQ(with("host", 0.8), 0u);
  EXPECT_EQ(with("host", 0.4), 1u);
  EXPECT_EQ(with("ce", 0.92), 0u);
  EXPECT_EQ(with("ce", 0.85), 1u);
}

TEST(SurveyDevicePairs, ARecordBecomesAFigureOfItsPairsClassAndSurvivesJson) {
  Record r;
  r.step = "gpu", r.server = r.client = 1, r.rail = -1, r.backend = "ce", r.dev_src = 2, r.dev_dst = 5;
  r.c2s_bytes_per_s = {1e11, 1e11};
  const Record back = record_from_json(to_json(r));
  EXPECT_EQ(back.dev_src, 2);
  EXPECT_EQ(back.dev_dst, 5);
  EXPECT_EQ(back.backend, "ce");
  const auto fs = figures_of({back}, {});
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].cls, "device pair ce 2->5");
  EXPECT_EQ(fs[0].from, 1);
  EXPECT_EQ(fs[0].dev_src, 2);
}

TEST(SurveyDevicePairs, TheRealEngineOnThisMachine) {
  Options o;
  o.gpu_size = 4ull << 20;
  o.gpu_iters = 3;
  Record base;
  base.step = "gpu", base.server = base.client = 0, base.rail = -1;
  std::string why;
  const std::string backend = device_backend("auto", why);
  const auto recs = measure_device_pairs(base, o);
  if (backend.empty()) {
    EXPECT_TRUE(recs.empty()) << why;
    GTEST_SKIP() << "nothing to pair here: " << why;
  }
  ASSERT_GE(recs.size(), 2u) << (recs.empty() ? "" : recs[0].failure);
  for (const Record& r : recs) {
    EXPECT_EQ(r.failure, "");
    EXPECT_EQ(r.backend, backend);
    EXPECT_NE(r.dev_src, r.dev_dst);
    ASSERT_EQ(r.c2s_bytes_per_s.size(), 3u);
    for (double b : r.c2s_bytes_per_s) {
      EXPECT_GT(b, 1e8);      // any memory copy beats 100 MB/s
      EXPECT_LT(b, 5e12);     // and no link or memory carries 5 TB/s
    }
  }
  std::string none_why;
  EXPECT_EQ(device_backend("none", none_why), "");
  EXPECT_TRUE(measure_device_pairs(base, [] {
                Options n;
                n.gpu_backend = "none";
                return n;
              }()).empty());
}

}  // namespace
}  // namespace p2pscope::survey
