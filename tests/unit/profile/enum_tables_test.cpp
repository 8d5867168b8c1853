// Each enum's names come from one {value, name, aliases} table read both ways: every
// name and alias parses back to its value, and the error for an unknown one lists them.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "bench/formulas.hpp"
#include "bench/nccl_types.hpp"
#include "bench/sweep.hpp"
#include "p2pscope/analyze.hpp"
#include "p2pscope/contention.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/profile.hpp"
#include "profile/batching.hpp"

using namespace p2pscope;
using namespace p2pscope::bench;

namespace {
template <class Table, class Parse, class Name>
void round_trip(const Table& table, Parse parse, Name name, const char* bad) {
  std::set<std::string_view> names;
  for (const auto& row : table) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_EQ(parse(std::string(row.name)), row.value) << row.name;
    EXPECT_EQ(name(row.value), row.name);
    for (std::string_view a : row.aliases)
      if (!a.empty()) {
        EXPECT_TRUE(names.insert(a).second) << a;
        EXPECT_EQ(parse(std::string(a)), row.value) << a;
      }
  }
  try {
    parse(bad);
    ADD_FAILURE() << bad << " parsed";
  } catch (const UsageError& e) {
    for (const auto& row : table) EXPECT_NE(std::string(e.what()).find(row.name), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(EnumTables, EveryNameAndAliasRoundTrips) {
  round_trip(kPatternNames, parse_pattern, [](Pattern p) { return to_string(p); }, "sideways");
  round_trip(kModeNames, parse_mode, [](Mode m) { return to_string(m); }, "sideways");
  round_trip(kNcclOpNames, parse_nccl_op, [](NcclOp o) { return to_string(o); }, "reduce");
  round_trip(kNcclTypeNames, parse_nccl_type, [](NcclType t) { return to_string(t); }, "int4");
  round_trip(profile::kFlowPatternNames, profile::parse_flow_pattern,
             [](profile::FlowPattern p) { return profile::to_string(p); }, "star");
  round_trip(profile::kTimingNames, profile::parse_timing, [](profile::Timing t) { return profile::to_string(t); },
             "batched");
  round_trip(analyze::kOutlierRuleNames, analyze::parse_outlier_rule,
             [](analyze::OutlierRule r) { return enum_name(analyze::kOutlierRuleNames, r); }, "zscore");
  // Mode's first three rows are Pattern's: one spelling of each.
  for (std::size_t i = 0; i < kPatternNames.size(); ++i) EXPECT_EQ(kModeNames[i].name, kPatternNames[i].name);
  EXPECT_EQ(profile::flow_pattern_names().size(), profile::kFlowPatternNames.size());
}
