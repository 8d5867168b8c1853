// parse_json_bounded (issue 32): each limit refuses as the parser reaches it, naming
// the limit, and a value inside every limit comes back whole.
#include <gtest/gtest.h>

#include <string>

#include "p2pscope/bounded_json.hpp"

using p2pscope::JsonLimits;
using p2pscope::parse_json_bounded;

namespace {
std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }
}  // namespace

TEST(BoundedJson, AValueInsideTheLimitsComesBackWhole) {
  const auto j = parse_json_bounded(R"({"a":[1,2.5,"x",null,true,{"b":-3}],"c":"d"})");
  ASSERT_TRUE(j.ok()) << j.error;
  EXPECT_EQ(j.value["a"][5]["b"], -3);
  EXPECT_EQ(j.value["c"], "d");
  EXPECT_EQ(j.value.dump(), R"({"a":[1,2.5,"x",null,true,{"b":-3}],"c":"d"})");
}

TEST(BoundedJson, DepthIsCountedAndRefusedOneLevelPastTheLimit) {
  JsonLimits l;
  l.max_depth = 5;
  EXPECT_TRUE(parse_json_bounded(nested(5), l).ok());
  const auto j = parse_json_bounded(nested(6), l);
  EXPECT_FALSE(j.ok());
  EXPECT_TRUE(j.value.is_discarded());
  EXPECT_EQ(j.error, "nested deeper than 5 levels");
  // Siblings do not add up: depth is the nesting, not the count of arrays.
  EXPECT_TRUE(parse_json_bounded("[" + nested(4) + "," + nested(4) + "," + nested(4) + "]", l).ok());
}

// The case that crashed the servers (SIGSEGV on the copy): refused, and in time.
TEST(BoundedJson, AMillionDeepNestingIsRefusedWithoutBuildingIt) {
  const auto j = parse_json_bounded(nested(1000000));
  EXPECT_EQ(j.error, "nested deeper than 32 levels");
  const auto o = parse_json_bounded(std::string(1000000, '{'));  // unterminated as well
  EXPECT_FALSE(o.ok());
}

TEST(BoundedJson, ElementsKeysAndStringsHaveTheirLimits) {
  JsonLimits l;
  l.max_elements = 10;
  l.max_string_bytes = 4;
  EXPECT_TRUE(parse_json_bounded("[1,2,3,4,5,6,7,8,9]", l).ok());  // 10 values with the array
  EXPECT_EQ(parse_json_bounded("[1,2,3,4,5,6,7,8,9,10]", l).error, "more than 10 values and keys");
  EXPECT_EQ(parse_json_bounded(R"({"a":1,"b":2,"c":3,"d":4,"e":5})", l).error, "more than 10 values and keys");
  EXPECT_TRUE(parse_json_bounded(R"(["abcd"])", l).ok());
  EXPECT_EQ(parse_json_bounded(R"(["abcde"])", l).error, "a string of 5 bytes (limit 4)");
  EXPECT_EQ(parse_json_bounded(R"({"abcde":1})", l).error, "a key of 5 bytes (limit 4)");
  l.max_bytes = 3;
  EXPECT_EQ(parse_json_bounded("[1,2]", l).error, "5 bytes of JSON (limit 3)");
}

// max_bytes is the longest text allowed: a text of exactly that many bytes parses, one
// byte more is refused before the parser reads it.
TEST(BoundedJson, ATextOfExactlyMaxBytesIsReadAndOneMoreIsRefused) {
  JsonLimits l;
  l.max_bytes = 5;
  const auto at = parse_json_bounded("[1,2]", l);
  EXPECT_TRUE(at.ok()) << at.error;
  EXPECT_EQ(at.value, nlohmann::json::parse("[1,2]"));
  EXPECT_EQ(parse_json_bounded("[1,22]", l).error, "6 bytes of JSON (limit 5)");
  EXPECT_TRUE(parse_json_bounded(" [1,2]", JsonLimits{.max_bytes = 6}).ok()) << "whitespace counts as bytes";
}

TEST(BoundedJson, MalformedTextIsAnErrorNotAnException) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "nul", "[1] [2]", "\"\\ud800\"", "1e99999"}) {
    const auto j = parse_json_bounded(bad);
    EXPECT_FALSE(j.ok()) << bad;
    EXPECT_NE(j.error.find("not JSON"), std::string::npos) << bad << ": " << j.error;
  }
}

// Where malformed text stopped the parser, for a reader to name in its own words (the
// byte after the last one read; compare turns it into a line and column); a passed
// limit has no such place.
TEST(BoundedJson, MalformedTextSaysWhereItStopped) {
  EXPECT_EQ(parse_json_bounded("[1,]").error_byte, 4u);
  EXPECT_EQ(parse_json_bounded("{\"a\":1,,}").error_byte, 8u);
  EXPECT_EQ(parse_json_bounded("[1,2").error_byte, 5u) << "past the end: the text was cut";
  JsonLimits l;
  l.max_depth = 2;
  EXPECT_EQ(parse_json_bounded("[[[1]]]", l).error_byte, std::string::npos);
  EXPECT_EQ(parse_json_bounded("[1]").error_byte, std::string::npos);
}
