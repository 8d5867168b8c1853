// The survey's rounds: every pair once (circle), no host twice in a round, ring and
// random:K as stated, the second pass's pairing.
#include <gtest/gtest.h>

#include <set>

#include "p2pscope/error.hpp"
#include "survey/schedule.hpp"

namespace p2pscope::survey {
namespace {

void expect_disjoint(const std::vector<Round>& rounds) {
  for (const Round& r : rounds) {
    std::set<int> seen;
    for (const Pair& p : r) {
      EXPECT_LT(p.a, p.b);
      EXPECT_TRUE(seen.insert(p.a).second) << "host " << p.a << " twice in a round";
      EXPECT_TRUE(seen.insert(p.b).second) << "host " << p.b << " twice in a round";
    }
  }
}

TEST(SurveySchedule, CircleMeetsEveryPairOnceInNMinusOneRounds) {
  for (int n : {2, 3, 4, 5, 8, 9, 16, 64}) {
    const auto rounds = circle_rounds(n);
    EXPECT_EQ(static_cast<int>(rounds.size()), n % 2 ? n : n - 1) << n;
    expect_disjoint(rounds);
    std::set<std::pair<int, int>> pairs;
    for (const Round& r : rounds) {
      if (n % 2 == 0) {
        EXPECT_EQ(static_cast<int>(r.size()), n / 2) << n;
      }
      for (const Pair& p : r) EXPECT_TRUE(pairs.insert({p.a, p.b}).second) << n << ": " << p.a << "," << p.b;
    }
    EXPECT_EQ(static_cast<int>(pairs.size()), n * (n - 1) / 2) << n;
  }
  EXPECT_TRUE(circle_rounds(1).empty());
}

TEST(SurveySchedule, RingHasNLinksInTwoOrThreeRounds) {
  for (int n : {3, 4, 5, 8}) {
    const auto rounds = ring_rounds(n);
    EXPECT_EQ(rounds.size(), n % 2 ? 3u : 2u);
    expect_disjoint(rounds);
    std::set<std::pair<int, int>> links;
    for (const Round& r : rounds)
      for (const Pair& p : r) links.insert({p.a, p.b});
    EXPECT_EQ(static_cast<int>(links.size()), n);
    for (int i = 0; i < n; ++i) EXPECT_TRUE(links.count({std::min(i, (i + 1) % n), std::max(i, (i + 1) % n)}));
  }
}

TEST(SurveySchedule, RandomKRoundsAreDisjointMatchingsWithoutRepeatsAndSeeded) {
  const auto a = random_rounds(8, 3, 42), b = random_rounds(8, 3, 42), c = random_rounds(8, 3, 43);
  ASSERT_EQ(a.size(), 3u);
  expect_disjoint(a);
  std::set<std::pair<int, int>> pairs;
  for (const Round& r : a) {
    EXPECT_EQ(r.size(), 4u);
    for (const Pair& p : r) EXPECT_TRUE(pairs.insert({p.a, p.b}).second);
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(random_rounds(8, 100, 1).size(), 7u);  // capped at the circle method's rounds
}

TEST(SurveySchedule, PairsSpecParsesOrSaysWhatItTakes) {
  EXPECT_EQ(parse_pairs("all").kind, "all");
  EXPECT_EQ(parse_pairs("random:5").k, 5);
  for (const char* bad : {"", "random:", "random:0", "random:-1", "random:x", "pairs", "random:99999999"})
    EXPECT_THROW(parse_pairs(bad), UsageError) << bad;
}

TEST(SurveySchedule, RecheckPairsEachSuspectWithADifferentGoodHost) {
  const auto rounds = recheck_rounds({1, 5}, {0, 2, 3});
  ASSERT_EQ(rounds.size(), 1u);
  expect_disjoint(rounds);
  ASSERT_EQ(rounds[0].size(), 2u);
  // Two suspects, one good host: two rounds.
  const auto two = recheck_rounds({1, 5}, {0});
  EXPECT_EQ(two.size(), 2u);
  EXPECT_TRUE(recheck_rounds({1}, {}).empty());
}

}  // namespace
}  // namespace p2pscope::survey

// Records and host descriptions come from other ranks: a malformed one is an Error that
// says what, never a crash or a type exception.
#include <nlohmann/json.hpp>

#include "survey/survey.hpp"

namespace p2pscope::survey {
namespace {

TEST(SurveyFrames, AMalformedRecordOrHostIsAnErrorAndTextIsMadeSafe) {
  EXPECT_THROW(record_from_json(nlohmann::json::parse(R"({"pass": "one"})")), Error);
  EXPECT_THROW(record_from_json(nlohmann::json::array()), Error);
  nlohmann::json r = to_json(Record{});
  r["step"] = "rm -rf";
  EXPECT_THROW(record_from_json(r), Error);
  r["step"] = "bw";
  r["failure"] = std::string("peer \x1b[2J said \xff");
  const Record back = record_from_json(r);
  EXPECT_EQ(back.failure.find('\x1b'), std::string::npos);
  EXPECT_EQ(back.failure.find('\xff'), std::string::npos);
  EXPECT_THROW(host_from_json(nlohmann::json::parse(R"({"rank": 1})")), Error);
}

}  // namespace
}  // namespace p2pscope::survey
