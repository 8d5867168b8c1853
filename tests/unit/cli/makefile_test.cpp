// The README's `make run` builds the p2pscope target alone (a fresh 2-core machine
// spent most of 12 minutes building tests first); `make test` still builds everything.
// Checked on `make -n`: the commands make would run, none of them run.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>
#include "support/shell.hpp"

namespace {

struct Dry {
  int code = -1;
  std::vector<std::string> builds;  // the `cmake --build` lines
  std::string out;
};

Dry dry_run(const std::string& goal) {
  Dry d;
  // BUILD elsewhere: a dry run must not depend on, or touch, a real build directory.
  const std::string cmd = "make --no-print-directory -n -C " + std::string(P2PSCOPE_SOURCE_DIR) + " " + goal +
                          " BUILD=/nonexistent/p2pscope-build JOBS=1 2>&1";
  const p2pscope::test::ShellResult r = p2pscope::test::run_shell(cmd);
  d.out = r.out;
  d.code = r.code;
  std::istringstream in(d.out);
  for (std::string line; std::getline(in, line);)
    if (line.find("cmake --build") != std::string::npos) d.builds.push_back(line);
  return d;
}

bool have_make() { return std::system("make --version > /dev/null 2>&1") == 0; }

}  // namespace

TEST(Makefile, RunBuildsOnlyTheP2pscopeTarget) {
  if (!have_make()) GTEST_SKIP() << "no make here";
  const Dry d = dry_run("run");
  ASSERT_EQ(d.code, 0) << d.out;
  ASSERT_FALSE(d.builds.empty()) << "make run builds nothing?\n" << d.out;
  for (const auto& line : d.builds) EXPECT_NE(line.find("--target p2pscope"), std::string::npos) << line;
  EXPECT_NE(d.out.find("/nonexistent/p2pscope-build/p2pscope run"), std::string::npos) << d.out;
}

TEST(Makefile, TestStillBuildsEveryTarget) {
  if (!have_make()) GTEST_SKIP() << "no make here";
  const Dry d = dry_run("test");
  ASSERT_EQ(d.code, 0) << d.out;
  bool whole = false;
  for (const auto& line : d.builds) whole = whole || line.find("--target") == std::string::npos;
  EXPECT_TRUE(whole) << "make test must build every target (the tests)\n" << d.out;
}

namespace {
// make run installs only what running needs: the test tools (chromium, GoogleTest) come
// with make test.
TEST(Makefile, RunInstallsOnlyWhatRunningNeeds) {
  if (!have_make()) GTEST_SKIP() << "no make here";
  const Dry run = dry_run("run");
  EXPECT_NE(run.out.find("install-deps.sh run"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("install-deps.sh test"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("-DBUILD_TESTING=OFF"), std::string::npos) << run.out;
  const Dry test = dry_run("test");
  EXPECT_NE(test.out.find("install-deps.sh test"), std::string::npos) << test.out;
  // The script itself: chromium and GoogleTest only in the test list.
  const auto sh = p2pscope::test::run_shell("sed -n '/^packages=(/,/^fi$/p' " + std::string(P2PSCOPE_SOURCE_DIR) +
                                            "/scripts/install-deps.sh");
  const auto test_part = sh.out.find("if [ \"$what\" = test ]");
  ASSERT_NE(test_part, std::string::npos) << sh.out;
  for (const char* p : {"chromium", "libgtest-dev"}) {
    EXPECT_GT(sh.out.find(p), test_part) << p << " must be a test dependency only";
  }
}
}  // namespace
