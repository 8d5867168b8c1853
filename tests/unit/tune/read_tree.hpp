#pragma once
// Every regular file under a directory, relative path -> contents: to compare a
// copied sysfs/proc tree before and after an apply / reset.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace p2pscope::test {

inline std::map<std::string, std::string> read_tree(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      files[fs::relative(e.path(), root).string()] = ss.str();
    }
  return files;
}

}  // namespace p2pscope::test
