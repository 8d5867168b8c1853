#pragma once
// Files in tests: a whole file as a string, and an empty scratch directory of this
// process or test (was a copy in each test file that needed one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace p2pscope::test {

// The whole file; "" when it cannot be opened (the assertion that follows says so).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// <tmp>/<prefix>-<name>-<pid>, emptied first; created unless `create` is false (for code
// under test that must create it, or refuse an existing one).
inline std::filesystem::path fresh_temp_dir(const std::string& prefix, const std::string& name, bool create = true) {
  const std::filesystem::path d =
      std::filesystem::temp_directory_path() / (prefix + "-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  if (create) std::filesystem::create_directories(d);
  return d;
}

// fresh_temp_dir named after the running test: <tmp>/<prefix>-<test>-<pid>, so that the
// tests of one fixture never share a directory.
inline std::filesystem::path fresh_test_dir(const std::string& prefix, bool create = true) {
  return fresh_temp_dir(prefix, ::testing::UnitTest::GetInstance()->current_test_info()->name(), create);
}

}  // namespace p2pscope::test
