#include "survey/rails.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"
#include "survey/survey.hpp"

namespace p2pscope::survey {
namespace {

int nic_index(std::string_view side, std::string_view entry, const std::vector<std::string>& nics) {
  if (!side.empty() && std::all_of(side.begin(), side.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (side.size() > 4) throw UsageError(fmt::format("--rails {}: NIC index {} is not a NIC of any host", entry, side));
    return std::stoi(std::string(side));
  }
  const auto it = std::find(nics.begin(), nics.end(), side);
  if (it != nics.end()) return static_cast<int>(it - nics.begin());
  if (nics.empty())
    throw UsageError(fmt::format("--rails {}: '{}' is not a NIC index; name NICs in --rails only together with --nics "
                                 "(their order there is the rail order)",
                                 entry, side));
  throw UsageError(fmt::format("--rails {}: '{}' is neither a NIC index nor one of --nics ({})", entry, side,
                               fmt::join(nics, ", ")));
}

}  // namespace

std::vector<Rail> parse_rails(std::string_view spec, const std::vector<std::string>& nics) {
  std::vector<Rail> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = spec.find(',', start);
    const std::string_view entry = spec.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (entry.empty()) throw UsageError(fmt::format("--rails {}: an empty entry (expected e.g. 0:0,1:1 or 0:1,1:0)", spec));
    const std::size_t colon = entry.find(':');
    const std::string_view a = entry.substr(0, colon), b = colon == std::string_view::npos ? a : entry.substr(colon + 1);
    if (colon != std::string_view::npos && b.find(':') != std::string_view::npos)
      throw UsageError(fmt::format("--rails {}: expected LOW:HIGH, two NICs (e.g. 0:1)", entry));
    const Rail r{nic_index(a, entry, nics), nic_index(b, entry, nics)};
    if (std::find(out.begin(), out.end(), r) != out.end())
      throw UsageError(fmt::format("--rails {}: rail {}:{} given twice", spec, r.low, r.high));
    out.push_back(r);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<Rail> identity_rails(std::size_t nics) {
  std::vector<Rail> out;
  for (std::size_t i = 0; i < nics; ++i) out.push_back({static_cast<int>(i), static_cast<int>(i)});
  return out;
}

const NicInfo& rail_nic(const std::vector<HostInfo>& hosts, const std::vector<Rail>& rails, int host, int peer, int rail) {
  const Rail& r = rails.at(static_cast<std::size_t>(rail));
  return hosts.at(static_cast<std::size_t>(host)).nics.at(static_cast<std::size_t>(host < peer ? r.low : r.high));
}

std::string rail_label(const HostInfo& host, const Rail& rail) {
  const auto name = [&](int i) {
    return i >= 0 && static_cast<std::size_t>(i) < host.nics.size() ? host.nics[static_cast<std::size_t>(i)].name
                                                                     : std::to_string(i);
  };
  return rail.low == rail.high ? name(rail.low) : name(rail.low) + ":" + name(rail.high);
}

}  // namespace p2pscope::survey
