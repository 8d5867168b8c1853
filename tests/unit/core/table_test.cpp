#include <gtest/gtest.h>

#include "p2pscope/bindings.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/table.hpp"

using namespace p2pscope;

TEST(Table, TextAlignsNumbersRight) {
  Table t({"size", "name"});
  t.add_row({"1", "a"});
  t.add_row({"1024", "bbb"});
  const std::string text = t.to_text();
  EXPECT_NE(text.find("   1  a\n"), std::string::npos) << text;
  EXPECT_NE(text.find("1024  bbb\n"), std::string::npos) << text;
}

TEST(Table, CsvQuotesAndJsonTypes) {
  Table t({"k", "v"});
  t.add_row({"a,b", "3.5"});
  t.add_row({"say \"hi\"", "x"});
  EXPECT_EQ(t.to_csv(), "k,v\n\"a,b\",3.5\n\"say \"\"hi\"\"\",x\n");
  const auto j = t.to_json();
  EXPECT_TRUE(j[0]["v"].is_number());
  EXPECT_DOUBLE_EQ(j[0]["v"].get<double>(), 3.5);
  EXPECT_TRUE(j[1]["v"].is_string());
}

TEST(Bindings, ParseFormatAndErrors) {
  const auto b = parse_bindings("eth1:8-21,112-125;eth2:60-73");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].nic, "eth1");
  EXPECT_EQ(b[0].cpus.size(), 28u);
  EXPECT_EQ(format_bindings(b), "eth1:8-21,112-125;eth2:60-73");
  try {
    parse_bindings("eth1:8-21;eth2 60-73");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("eth2 60-73"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_bindings("eth1:21-8"), UsageError);
  EXPECT_THROW(parse_bindings("eth1:"), UsageError);
  EXPECT_THROW(parse_bindings("eth1:1;eth1:2"), UsageError);
  EXPECT_THROW(parse_bindings(""), UsageError);
}

TEST(Metadata, CarriesSchemaArgvAndNcclEnv) {
  setenv("NCCL_TEST_META", "7", 1);
  setenv("UNRELATED_VAR_X", "1", 1);
  const auto m = run_metadata({"p2pscope", "topo"});
  EXPECT_EQ(m["schema_version"], kSchemaVersion);
  EXPECT_EQ(m["argv"][1], "topo");
  EXPECT_EQ(m["env"]["NCCL_TEST_META"], "7");
  EXPECT_FALSE(m["env"].contains("UNRELATED_VAR_X"));
  EXPECT_TRUE(m.contains("hostname"));
  EXPECT_TRUE(m["tool"].contains("git_hash"));
}
