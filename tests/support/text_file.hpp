#pragma once
// A whole file as a string ("" when it cannot be read), for tests that compare or feed
// fixtures. Tests with their own slurp() can use this one.
#include <fstream>
#include <sstream>
#include <string>

namespace p2pscope::test {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace p2pscope::test
