// Small readers and path helpers used by every discovery step.
#include <cctype>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"
#include "topo/detail.hpp"

namespace p2pscope::topo::detail {

std::optional<int> parse_id(std::string_view digits) {
  if (digits.empty() || digits.size() > 8) return std::nullopt;  // 8 digits: ids < 10^8
  int v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::optional<std::vector<int>> read_cpulist(const FsRoot& fs, const std::string& abs) {
  const auto line = fs.read_line(abs);
  if (!line) return std::nullopt;
  try {
    return parse_cpulist(*line);
  } catch (const Error&) {
    return std::nullopt;
  }
}

long long read_int_or(const FsRoot& fs, const std::string& abs, long long unknown) {
  const auto v = fs.read_int(abs);
  return v ? static_cast<long long>(*v) : unknown;
}

std::string read_text(const FsRoot& fs, const std::string& abs) { return fs.read_line(abs).value_or(""); }

bool is_pci_address(std::string_view s) {
  // dddd:bb:dd.f
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (std::size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 8u, 9u, 11u})
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

bool is_pci_root(std::string_view s) {
  // pcidddd:bb
  if (s.size() != 10 || s.substr(0, 3) != "pci" || s[7] != ':') return false;
  for (std::size_t i : {3u, 4u, 5u, 6u, 8u, 9u})
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

std::vector<std::string> split_path(const std::string& p) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (b <= p.size()) {
    auto e = p.find('/', b);
    if (e == std::string::npos) e = p.size();
    if (e > b) out.push_back(p.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

std::string nearest_pci(const std::string& resolved_path) {
  const auto parts = split_path(resolved_path);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it)
    if (is_pci_address(*it)) return *it;
  return {};
}

}  // namespace p2pscope::topo::detail
