// The last lines of a file, for error messages (p2pscope/file_tail.hpp).
#include "p2pscope/file_tail.hpp"

#include <vector>

#include "p2pscope/files.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope {

std::string last_lines_of(const std::filesystem::path& path, std::size_t n, std::size_t max_bytes) {
  const auto text = try_read_regular_file(path, 1u << 20);
  if (!text) return {};
  std::vector<std::string> lines;
  for (const auto& l : split_lines(*text))
    if (!trim(l).empty()) lines.emplace_back(l);
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return external_text(join(lines, "\n"), max_bytes);
}

}  // namespace p2pscope
