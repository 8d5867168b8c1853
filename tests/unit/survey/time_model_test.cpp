// The time model prices every kind of step a survey runs: local ceilings, device pairs,
// bandwidth, latency and --sizes ping-pongs, each from its own sessions.
#include <gtest/gtest.h>

#include "survey/time_model.hpp"

namespace p2pscope::survey {
namespace {

// 4 namespace hosts (one kernel, shared CPUs), 2 rails, 3 rounds: local 1 s each, a host's
// device pairs 2 s, bw 1 s, latency 0.1 s, two --sizes at 0.15 and 0.25 s.
Result four_hosts() {
  Result r;
  for (int h = 0; h < 4; ++h) {
    HostInfo hi;
    hi.rank = h, hi.host = "h" + std::to_string(h);
    hi.nics = {{"eth1", "", 200}, {"eth2", "", 200}};
    r.hosts.push_back(hi);
  }
  r.names.rails = {"eth1", "eth2"};
  r.shared_kernel = r.shared_cpus = true;
  const auto add = [&](const char* step, int server, double wall, std::uint64_t size = 0) {
    Record rec;
    rec.step = step, rec.server = server, rec.client = (server + 1) % 4, rec.wall_s = wall, rec.size_bytes = size;
    r.records.push_back(rec);
  };
  for (int h = 0; h < 4; ++h) {
    add("local", h, 1.0);
    add("gpu", h, 0.8);  // a host's device pairs: each pair's wall counts from the step's start
    add("gpu", h, 2.0);
  }
  for (int round = 0; round < 3; ++round)
    for (int link = 0; link < 4; ++link) {
      add("bw", link, 1.0);
      add("lat", link, 0.1);
      add("size", link, 0.15, 1024);
      add("size", link, 0.25, 1 << 20);
    }
  // The sessions, one at a time where the kernel is shared: 4 + 8 + 3 x (1 + 4 x (0.1 + 0.4)),
  // and 2 s of coordination.
  r.wall_s = 4 + 8 + 3 * (1 + 4 * 0.5) + 2;
  return r;
}

TEST(SurveyTimeModel, EachStepKindIsPricedFromItsOwnSessions) {
  const StepCosts c = costs_from(four_hosts());
  EXPECT_DOUBLE_EQ(c.local_s, 1.0);
  EXPECT_DOUBLE_EQ(c.bw_s, 1.0);
  EXPECT_DOUBLE_EQ(c.lat_s, 0.1);  // not the median of latency, device-pair and size sessions
  EXPECT_DOUBLE_EQ(c.gpu_s, 2.0);  // a host's step: its last pair's time
  EXPECT_EQ(c.sizes, 2);
  EXPECT_DOUBLE_EQ(c.sizes_s, 0.4);
}

TEST(SurveyTimeModel, ThePlanAtTheSurveysOwnSizeGivesItsTimeAndGrowsWithSizesAndHosts) {
  const Result r = four_hosts();
  const StepCosts c = costs_from(r);
  const Plan p4 = plan(c, 4, {});
  EXPECT_NEAR(p4.seconds, r.wall_s, r.wall_s * 0.01);
  StepCosts without_sizes = c;
  without_sizes.sizes = 0, without_sizes.sizes_s = 0;
  // 3 rounds x 4 links one at a time x 0.4 s of sizes (and their steps' coordination).
  EXPECT_GT(p4.seconds - plan(without_sizes, 4, {}).seconds, 3 * 4 * 0.4);
  EXPECT_EQ(p4.sessions, 4 + 6 * 2 * (2 + 2));  // hosts + pairs x rails x (bw, lat, 2 sizes)
  EXPECT_GT(plan(c, 8, {}).seconds, 2 * p4.seconds);  // 7 rounds of 4 pairs, one link at a time
}

}  // namespace
}  // namespace p2pscope::survey
