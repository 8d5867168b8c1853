// Tests written against bugs injected on purpose that the suite let through (issue 24):
// verify() skipping the bytes after the last whole 8-byte word; the contention
// summary with "alone" and "together" swapped; the round's aggregate counting one
// flow's bytes instead of all of them. Each test asserts a number those bugs change.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <tuple>

#include "p2pscope/pattern.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/contention.hpp"

using namespace p2pscope;

namespace {
std::unique_ptr<bench::Backend> host_prepared(std::uint64_t bytes) {
  auto b = bench::make_backend("host");
  b->prepare({0, 1}, bytes);
  return b;
}

// The first offset in [from, to) where device 0's pattern is not the poison the
// destination starts with (0xA5): where a correct verify must stop.
std::int64_t first_unpoisoned(std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t i = from; i < to; ++i)
    if (pattern_byte(pattern_seed(0), i) != 0xA5) return static_cast<std::int64_t>(i);
  return -1;
}
}  // namespace

// 1000 bytes copied (125 whole words), 1005 checked: the 5 stale bytes lie in a
// partial last word, which only the byte-wise tail loop sees.
TEST(InjectedBugs, VerifyChecksTheFinalPartialWord) {
  auto b = host_prepared(4096);
  b->run_blocking(0, 1, 1000);
  const std::int64_t expected = first_unpoisoned(1000, 1005);
  ASSERT_GE(expected, 1000) << "the pattern happens to equal the poison: pick other sizes";
  EXPECT_EQ(b->verify(0, 1, 1005), expected);
  // A whole copy of an odd size checks clean, to its last byte.
  b->run_blocking(0, 1, 1005);
  EXPECT_EQ(b->verify(0, 1, 1005), -1);
  // Fewer than 8 bytes: no whole word at all.
  auto c = host_prepared(64);
  const std::int64_t tiny = first_unpoisoned(0, 7);
  ASSERT_GE(tiny, 0);
  EXPECT_EQ(c->verify(0, 1, 7), tiny);
}

// Known samples: 1000 B alone in 1000 ns (1 GB/s), together in 4000 ns (0.25 GB/s);
// the aggregate is carried by the together samples only.
TEST(InjectedBugs, ContentionSummaryKeepsAloneAndTogetherApart) {
  profile::ContentionResult r;
  for (int rep = 0; rep < 3; ++rep)
    for (auto [src, dst] : {std::pair{0, 1}, std::pair{1, 0}}) {
      profile::FlowSample alone;
      alone.size_bytes = 1000;
      alone.src = src, alone.dst = dst, alone.flows = 1, alone.repetition = rep;
      alone.together = false;
      alone.duration_ns = 1000 + rep;  // median 1001
      alone.aggregate_bytes_per_s = 1e9;
      r.samples.push_back(alone);
      profile::FlowSample both = alone;
      both.together = true;
      both.flows = 2;
      both.round = 2;
      both.duration_ns = 4000 + 10 * rep;  // median 4010
      both.aggregate_bytes_per_s = 0.45e9 + 0.01e9 * rep;  // median 0.46e9
      r.samples.push_back(both);
    }
  const auto rows = profile::summarize_contention(r);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.flows, 2);
    EXPECT_NEAR(row.alone_bytes_per_s, 1000.0 / 1001 * 1e9, 1);
    EXPECT_NEAR(row.together_bytes_per_s, 1000.0 / 4010 * 1e9, 1);
    EXPECT_GT(row.alone_bytes_per_s, row.together_bytes_per_s);
    EXPECT_NEAR(row.aggregate_bytes_per_s, 0.46e9, 1);
  }
}

// The library's own run on the host backend: a contended round's aggregate is every
// flow's bytes over first start to last end, recomputed here from the samples; the
// flows' solo runs are logged as alone, one flow each.
TEST(InjectedBugs, ContentionAggregateCountsEveryFlowAndAloneRunsAreSolo) {
  profile::ContentionSpec s;
  s.backend = "host";
  s.pattern = profile::FlowPattern::all_to_all;
  s.devices = {0, 1};
  s.sizes = {1 << 20};
  s.warmup = 1;
  s.reps = 3;
  const auto r = profile::run_contention(s);
  std::map<std::pair<int, int>, std::tuple<std::int64_t, std::int64_t, int, double>> rounds;  // (round, rep)
  std::size_t alone = 0, together = 0;
  for (const auto& x : r.samples) {
    if (!x.together) {
      ++alone;
      EXPECT_EQ(x.flows, 1) << "a sample logged as alone ran beside other flows";
      continue;
    }
    ++together;
    EXPECT_EQ(x.flows, 2);
    auto [it, fresh] = rounds.try_emplace({x.round, x.repetition}, x.ts_start_ns, x.ts_end_ns, 0, x.aggregate_bytes_per_s);
    auto& [first, last, n, agg] = it->second;
    first = std::min(first, x.ts_start_ns);
    last = std::max(last, x.ts_end_ns);
    ++n;
    EXPECT_EQ(agg, x.aggregate_bytes_per_s) << "flows of one round carry different aggregates";
  }
  EXPECT_EQ(alone, 2u * 3u);
  EXPECT_EQ(together, 2u * 3u);
  ASSERT_EQ(rounds.size(), 3u);
  for (const auto& [key, v] : rounds) {
    const auto& [first, last, n, agg] = v;
    ASSERT_EQ(n, 2);
    const double expected = 2.0 * (1 << 20) / static_cast<double>(last - first) * 1e9;
    EXPECT_NEAR(agg, expected, expected * 1e-9) << "round " << key.first << " rep " << key.second;
  }
}
