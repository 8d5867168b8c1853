// Contention patterns (issue 15 part 3): the flows of each pattern, and the host
// backend running them at once with every flow logged next to the flow alone.
#include <gtest/gtest.h>

#include "p2pscope/contention.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::profile {
namespace {

std::string flows_text(const std::vector<Flow>& f) {
  std::string s;
  for (const auto& x : f) s += (s.empty() ? "" : " ") + std::to_string(x.src) + ">" + std::to_string(x.dst);
  return s;
}

TEST(Contention, PatternFlows) {
  const std::vector<int> d = {0, 1, 2, 3};
  EXPECT_EQ(flows_text(pattern_rounds(FlowPattern::fan_in, d, 2).at(0)), "0>2 1>2 3>2");
  EXPECT_EQ(flows_text(pattern_rounds(FlowPattern::fan_out, d).at(0)), "0>1 0>2 0>3");
  EXPECT_EQ(flows_text(pattern_rounds(FlowPattern::ring_shift, d, -1, 2).at(0)), "0>2 1>3 2>0 3>1");
  EXPECT_EQ(pattern_rounds(FlowPattern::all_to_all, d).at(0).size(), 12u);
  const auto pairs = pattern_rounds(FlowPattern::pairs, d);
  EXPECT_EQ(pairs.size(), 12u);  // one flow per round: the isolated reference
  EXPECT_THROW(pattern_rounds(FlowPattern::ring_shift, d, -1, 4), UsageError);
  EXPECT_THROW(pattern_rounds(FlowPattern::fan_in, d, 7), UsageError);
  EXPECT_THROW(pattern_rounds(FlowPattern::fan_in, {0}), UsageError);
  EXPECT_THROW(parse_flow_pattern("fanin"), UsageError);
  EXPECT_EQ(parse_flow_pattern("all-to-all"), FlowPattern::all_to_all);
}

TEST(Contention, HostBackendLogsEveryFlowAloneAndTogether) {
  ContentionSpec s;
  s.backend = "host";
  s.pattern = FlowPattern::all_to_all;
  s.devices = {0, 1};
  s.sizes = {1 << 16, 1 << 20};
  s.warmup = 1;
  s.reps = 3;
  const auto r = run_contention(s);
  // 2 flows alone + 2 together, x 2 sizes x 3 reps.
  ASSERT_EQ(r.samples.size(), 2u * 2u * 2u * 3u);
  std::size_t together = 0;
  for (const auto& x : r.samples) {
    EXPECT_GT(x.duration_ns, 0);
    EXPECT_GE(x.ts_end_ns, x.ts_start_ns);
    EXPECT_FALSE(x.device_timed);
    if (x.together) {
      ++together;
      EXPECT_EQ(x.flows, 2);
      EXPECT_GT(x.aggregate_bytes_per_s, 0);
    }
  }
  EXPECT_EQ(together, 12u);
  const auto rows = summarize_contention(r);
  ASSERT_EQ(rows.size(), 4u);  // (2 sizes) x (0->1, 1->0)
  for (const auto& row : rows) {
    EXPECT_GT(row.alone_bytes_per_s, 0);
    EXPECT_GT(row.together_bytes_per_s, 0);
  }
  const std::string csv = contention_csv(s, r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "pattern,mode,round,repetition,size_bytes,flows,src,dst,ts_start_ns,ts_end_ns,duration_ns,time_source,"
            "bytes_per_s,aggregate_bytes_per_s");
  EXPECT_NE(csv.find("\nall-to-all,together,2,0,65536,2,"), std::string::npos) << csv.substr(0, 600);
}

TEST(Contention, RingShiftAndPairsOnTheHostBackend) {
  ContentionSpec s;
  s.backend = "host";
  s.pattern = FlowPattern::ring_shift;
  s.devices = {0, 1};
  s.sizes = {4096};
  s.warmup = 0;
  s.reps = 2;
  EXPECT_EQ(run_contention(s).samples.size(), 2u * 2u * 2u);
  s.pattern = FlowPattern::pairs;
  const auto r = run_contention(s);
  EXPECT_EQ(r.samples.size(), 2u * 2u);
  for (const auto& x : r.samples) EXPECT_FALSE(x.together);
}

}  // namespace
}  // namespace p2pscope::profile
