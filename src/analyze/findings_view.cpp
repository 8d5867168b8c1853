// group_findings (campaign.hpp): the report's and the CLI's view of findings.json,
// which keeps every finding as it is.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::analyze {
namespace {

// high_cv subjects read "<backend> <src>-><dst> @ <size>".
constexpr const char* kAt = " @ ";
std::string size_of(const Finding& x) { return x.subject.substr(x.subject.rfind(kAt) + 3); }

// "1 B-16 KiB, 64 KiB, 1 MiB": runs of doubling sizes (a 1:1G campaign's neighbours)
// as ranges; sizes that do not parse are listed as they are.
std::string size_ranges(const std::vector<const Finding*>& members) {
  std::vector<std::pair<std::uint64_t, std::string>> sizes;
  for (const Finding* m : members) {
    std::uint64_t b = 0;
    try {
      b = parse_size(size_of(*m));
    } catch (const UsageError&) {
    }
    sizes.push_back({b, size_of(*m)});
  }
  std::string out;
  for (std::size_t i = 0; i < sizes.size();) {
    std::size_t j = i;
    while (sizes[i].first && j + 1 < sizes.size() && sizes[j + 1].first == 2 * sizes[j].first) ++j;
    out += (out.empty() ? "" : ", ") + sizes[i].second + (j > i ? "-" + sizes[j].second : "");
    i = j + 1;
  }
  return out;
}

FindingGroup cv_group(const std::string& link, const std::vector<const Finding*>& members) {
  if (members.size() == 1) return {*members[0], 1};
  const Finding* worst = members[0];
  for (const Finding* m : members)
    if (m->value > worst->value) worst = m;
  Finding head{"high_cv", worst->severity, link,
               fmt::format("CV above 5% at {} sizes ({}); worst {:.1f}% at {}", members.size(), size_ranges(members),
                           worst->value * 100, size_of(*worst)),
               worst->value};
  return {head, members.size()};
}

}  // namespace

std::vector<FindingGroup> group_findings(const std::vector<Finding>& f) {
  std::vector<std::string> cv_links;  // in order of first appearance
  std::map<std::string, std::vector<const Finding*>> cv;
  std::vector<FindingGroup> warnings, infos;
  for (const auto& x : f) {
    const auto at = x.subject.rfind(kAt);
    if (x.kind == "high_cv" && at != std::string::npos) {
      auto& members = cv[x.subject.substr(0, at)];
      if (members.empty()) cv_links.push_back(x.subject.substr(0, at));
      members.push_back(&x);
      continue;
    }
    (x.severity == "warning" ? warnings : infos).push_back({x, 1});
  }
  // Other warnings first (drift, asymmetry, throttling are rarer and weigh more), then
  // the variance rows per link, then infos.
  std::vector<FindingGroup> out = warnings;
  for (const auto& link : cv_links) out.push_back(cv_group(link, cv[link]));
  out.insert(out.end(), infos.begin(), infos.end());
  return out;
}

// non_monotone says "warning" exactly when the gap is within the medians' standard
// error (noise); as "info" it is a size the path really handles faster.
bool about_measurement(const Finding& f) {
  if (f.kind == "non_monotone") return f.severity == "warning";
  // A temperature check that found no effect (info) is a check of the measurement, not
  // a claim about the hardware.
  if (f.kind == "temperature") return f.severity != "warning";
  return f.kind == "high_cv" || f.kind == "data" || f.kind == "clock" || f.kind == "drift";
}

std::vector<KindGroup> group_by_kind(const std::vector<Finding>& f) {
  static const std::map<std::string, std::string> kDescriptions = {
      {"high_cv", "repetitions spread by more than 5% (CV): the median is less certain than it looks"},
      {"non_monotone", "a size takes less time than a smaller one"},
      {"asymmetry", "the two directions of a link differ"},
      {"class_outlier", "a link differs from the others of its class (same path type)"},
      {"temperature", "times against the GPU temperature: a dependence only past |rho| >= 0.3"},
      {"drift", "GPU and host clocks drifted apart during the run"},
      {"clock", "GPU times could not be placed on the host clock within the bound"},
      {"throttling", "clocks or power limits changed during the run"},
      {"data", "rows of the execution log could not be read"}};
  std::vector<KindGroup> hw, meas;
  for (const auto& x : f) {
    const bool m = about_measurement(x);
    auto& list = m ? meas : hw;
    auto it = std::find_if(list.begin(), list.end(), [&](const KindGroup& g) { return g.kind == x.kind; });
    if (it == list.end()) {
      const auto d = kDescriptions.find(x.kind);
      list.push_back({x.kind, d != kDescriptions.end() ? d->second : x.kind, m, x.severity, {}});
      it = list.end() - 1;
    }
    if (x.severity == "warning") it->severity = "warning";
    it->members.push_back(&x);
  }
  hw.insert(hw.end(), meas.begin(), meas.end());
  return hw;
}

}  // namespace p2pscope::analyze
