#include "p2pscope/bindings.hpp"

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope {

std::vector<NicBinding> parse_bindings(std::string_view text) {
  std::vector<NicBinding> out;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto semi = rest.find(';');
    std::string_view part = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (part.empty()) continue;  // tolerate a trailing ';'
    const auto colon = part.find(':');
    if (colon == std::string_view::npos)
      throw UsageError("binding '" + std::string(part) + "' has no ':'; expected NIC:CPUS as in 'eth1:8-21,112-125'");
    NicBinding b;
    b.nic = std::string(part.substr(0, colon));
    if (b.nic.empty()) throw UsageError("binding '" + std::string(part) + "' has no NIC name before ':'");
    for (const auto& nb : out)
      if (nb.nic == b.nic) throw UsageError("NIC '" + b.nic + "' appears twice in bindings '" + std::string(text) + "'");
    try {
      b.cpus = parse_cpulist(part.substr(colon + 1));
    } catch (const UsageError& e) {
      throw UsageError("binding '" + std::string(part) + "': " + e.what());
    }
    if (b.cpus.empty()) throw UsageError("binding '" + std::string(part) + "' lists no CPUs after ':'");
    out.push_back(std::move(b));
  }
  if (out.empty()) throw UsageError("empty binding string; expected e.g. 'eth1:8-21,112-125;eth2:60-73'");
  return out;
}

std::string format_bindings(const std::vector<NicBinding>& bindings) {
  std::string out;
  for (const auto& b : bindings) {
    if (!out.empty()) out += ';';
    out += b.nic + ":" + format_cpulist(b.cpus);
  }
  return out;
}

}  // namespace p2pscope
