// The one splitter, trimmer and joiner: CSV fields keep empty fields (column k stays
// column k); a user's list is trimmed and refuses empty items with a message that says
// which item and how to write it (before, --backend dropped "ce,,sm"'s empty item
// silently while its message spoke only of an empty list, and kept " sm" untrimmed).
#include <gtest/gtest.h>

#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"

using namespace p2pscope;
using SV = std::vector<std::string_view>;
using SS = std::vector<std::string>;

namespace {
// A UsageError (exit 2), whose message holds every one of `parts`.
template <class F>
void expect_usage_error(F&& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a UsageError: " << e.what();
  }
}
}  // namespace

TEST(Text, Trim) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim("x"), "x");
}

TEST(Text, FieldsKeepEveryEmptyField) {
  EXPECT_EQ(split_views("a,,b,", ','), (SV{"a", "", "b", ""}));
  EXPECT_EQ(split_views("", ','), (SV{""}));
  EXPECT_EQ(split_views("one", ','), (SV{"one"}));
  EXPECT_EQ(split_views(",", ','), (SV{"", ""}));
  EXPECT_EQ(split_fields(" a ;b", ';'), (SS{" a ", "b"})) << "fields are not trimmed";
}

TEST(Text, Words) {
  EXPECT_EQ(split_words("  10  20\t30\r"), (SV{"10", "20", "30"}));
  EXPECT_TRUE(split_words("").empty());
  EXPECT_TRUE(split_words(" \t ").empty());
  EXPECT_EQ(split_words("x"), (SV{"x"}));
}

TEST(Text, LinesKeepEmptyOnesAndALastLineWithoutNewline) {
  EXPECT_EQ(split_lines("a\n\nb\n"), (SV{"a", "", "b"}));  // a final '\n' ends a line, adds none
  EXPECT_EQ(split_lines("a\nb"), (SV{"a", "b"}));           // a cut last line still counts
  EXPECT_EQ(split_lines("\n"), (SV{""}));
  EXPECT_EQ(split_lines("x\r\n"), (SV{"x\r"}));  // CRs are the caller's business
  EXPECT_TRUE(split_lines("").empty());
}

TEST(Text, ListTrimsItems) {
  EXPECT_EQ(split_list("ce, sm ,staged", "--backend"), (SS{"ce", "sm", "staged"}));
  EXPECT_EQ(split_list("ce", "--backend"), (SS{"ce"}));
  EXPECT_EQ(split_list("0:1", "--pairs", ':'), (SS{"0", "1"}));
}

TEST(Text, ListRefusesEmptyItemsSayingWhich) {
  expect_usage_error([] { split_list("ce,,sm", "--backend"); }, {"--backend", "item 2 of 'ce,,sm' is empty"});
  expect_usage_error([] { split_list("ce,", "--backend"); }, {"--backend", "item 2 of 'ce,' is empty", "none at either end"});
  expect_usage_error([] { split_list(",ce", "--nics"); }, {"--nics", "item 1"});
  expect_usage_error([] { split_list(" , ", "--nics"); }, {"--nics", "item 1"});
  expect_usage_error([] { split_list("", "--backend"); }, {"--backend: empty list"});
  expect_usage_error([] { split_list("  ", "--backend"); }, {"--backend: empty list"});
}

TEST(Text, Join) {
  EXPECT_EQ(join(SS{}), "");
  EXPECT_EQ(join(SS{"a"}), "a");
  EXPECT_EQ(join(SS{"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join(SS{"a", ""}, ","), "a,") << "an empty item is still an item";
  EXPECT_EQ(join(std::vector<int>{1, 2, 3}, "+", [](int x) { return std::to_string(x); }), "1+2+3");
  EXPECT_EQ(join(std::vector<int>{}, "+", [](int x) { return std::to_string(x); }), "");
}
