// Plan, order and names: the facts a simulator-validation user relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "p2pscope/error.hpp"
#include "p2pscope/profile.hpp"

using namespace p2pscope;
using namespace p2pscope::profile;

namespace {
std::vector<std::uint64_t> default_sizes() {
  std::vector<std::uint64_t> s;
  for (int i = 0; i <= 30; ++i) s.push_back(std::uint64_t{1} << i);
  return s;
}
}  // namespace

TEST(ProfilePlan, FourGpusGive372ConfigsWithStableIds) {
  const Plan p = make_plan({"ce"}, {3, 2, 1, 0}, default_sizes(), 42, 5, 10);
  ASSERT_EQ(p.configs.size(), 12u * 31u);
  EXPECT_EQ(p.measured_ops(), 3720u);
  // Ids follow backend, src, dst, size before shuffling.
  EXPECT_EQ(p.configs[0].src, 0);
  EXPECT_EQ(p.configs[0].dst, 1);
  EXPECT_EQ(p.configs[0].size_bytes, 1u);
  EXPECT_EQ(p.configs[30].size_bytes, std::uint64_t{1} << 30);
  EXPECT_EQ(p.configs[31].dst, 2);
  EXPECT_EQ(p.configs[93].src, 1);
  EXPECT_EQ(p.configs[93].dst, 0);
  std::set<std::pair<int, int>> pairs;
  for (const auto& c : p.configs) {
    EXPECT_NE(c.src, c.dst);
    pairs.insert({c.src, c.dst});
  }
  EXPECT_EQ(pairs.size(), 12u);  // both directions of every pair
}

TEST(ProfilePlan, OrderIsAPermutation) {
  const Plan p = make_plan({"host"}, {0, 1}, default_sizes(), 42, 5, 10);
  std::vector<int> sorted = p.order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], static_cast<int>(i));
  EXPECT_NE(p.order, sorted);  // and actually shuffled
}

TEST(ProfilePlan, SameSeedSameOrderOtherSeedOtherOrder) {
  EXPECT_EQ(shuffled_order(372, 42), shuffled_order(372, 42));
  EXPECT_NE(shuffled_order(372, 42), shuffled_order(372, 43));
  EXPECT_NE(shuffled_order(372, 42), shuffled_order(372, 7));
}

// Expected values computed independently (a Python SplitMix64 + Fisher-Yates), so the
// order cannot silently depend on the standard library or the machine.
TEST(ProfilePlan, Seed42OrderIsTheSameOnEveryMachine) {
  const auto o = shuffled_order(372, 42);
  const std::vector<int> expect = {294, 74, 168, 6, 154, 337, 243, 317, 108, 133, 113, 242};
  EXPECT_EQ(std::vector<int>(o.begin(), o.begin() + 12), expect);
  const auto o2 = shuffled_order(62, 42);
  const std::vector<int> expect2 = {20, 56, 7, 42, 12, 51, 34, 39, 19, 52, 58, 49};
  EXPECT_EQ(std::vector<int>(o2.begin(), o2.begin() + 12), expect2);
  EXPECT_EQ(shuffled_order(10, 7), (std::vector<int>{8, 1, 5, 9, 0, 4, 3, 2, 6, 7}));
}

TEST(ProfilePlan, EventNamesFollowTheSeedFormat) {
  Config c{42, "ce", 0, 1, 1048576};
  EXPECT_EQ(event_name(c, 0), "p2p_cfg0042_s0d1_sz1048576_r0");
  Config big{12345, "ce", 3, 2, 1};
  EXPECT_EQ(event_name(big, 9), "p2p_cfg12345_s3d2_sz1_r9");
}

TEST(ProfilePlan, BadPlansAreUsageErrors) {
  EXPECT_THROW(make_plan({"host"}, {0}, {1}, 42, 5, 10), UsageError);
  EXPECT_THROW(make_plan({"host"}, {0, 1}, {}, 42, 5, 10), UsageError);
  EXPECT_THROW(make_plan({"host"}, {0, 1}, {0, 8}, 42, 5, 10), UsageError);
  EXPECT_THROW(make_plan({"host"}, {0, 1}, {8}, 42, -1, 10), UsageError);
  EXPECT_THROW(make_plan({"host"}, {0, 1}, {8}, 42, 5, 0), UsageError);
  EXPECT_THROW(make_plan({}, {0, 1}, {8}, 42, 5, 1), UsageError);
}

TEST(ProfilePlan, ThermalTargets) {
  const auto t = parse_thermal_target("50C:60s");
  EXPECT_DOUBLE_EQ(t.celsius, 50);
  EXPECT_DOUBLE_EQ(t.max_s, 60);
  EXPECT_DOUBLE_EQ(parse_thermal_target("55c:2m").max_s, 120);
  EXPECT_DOUBLE_EQ(parse_thermal_target("48").max_s, 60);
  EXPECT_DOUBLE_EQ(parse_celsius("45C"), 45);
  EXPECT_THROW(parse_thermal_target("hot"), UsageError);
  EXPECT_THROW(parse_thermal_target("50C:0s"), UsageError);
  EXPECT_THROW(parse_celsius("500C"), UsageError);
  EXPECT_THROW(parse_celsius("-5"), UsageError);
}
