// End-to-end checks of the binary's command line: exit codes and messages.
#include <gtest/gtest.h>

#include <string>

#include "support/run_binary.hpp"

namespace {
using p2pscope::test::run_binary;
auto run(const std::string& args) { return run_binary(args); }
}  // namespace

TEST(Cli, VersionNamesToolAndCuda) {
  const auto r = run("--version");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("p2pscope "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CUDA:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NCCL:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPUs:"), std::string::npos) << r.out;
}

TEST(Cli, UnknownSubcommandIsUsageError) {
  const auto r = run("frobnicate");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("frobnicate"), std::string::npos) << r.out;
}

TEST(Cli, UnknownOptionIsUsageError) {
  const auto r = run("topo --no-such-option");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--no-such-option"), std::string::npos) << r.out;
}

TEST(Cli, NoSubcommandSaysOneIsRequired) {
  const auto r = run("");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST(Cli, HelpListsSubcommands) {
  const auto r = run("--help");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* sub : {"topo", "run", "bench"}) EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
}
