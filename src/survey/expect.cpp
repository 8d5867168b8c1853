#include "survey/expect.hpp"

#include <cctype>
#include <cmath>
#include <map>
#include <string>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::survey {
namespace {

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

// bytes/s per unit, 0 for none. Bits where the unit says so: "bit", "bps", or a lower-case
// b after the prefix ("Mb/s", "Gb/s"), as ethtool and vendors write link rates; "MB/s" is bytes.
double unit_scale(std::string_view unit) {
  std::string u(unit);
  if (u.size() > 2 && u.compare(u.size() - 2, 2, "/s") == 0) u.resize(u.size() - 2);
  static const std::map<std::string, double> prefix = {{"", 1}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}};
  const std::string l = lower(u);
  for (const char* bits_suffix : {"bit", "bps"}) {
    const std::size_t n = std::string_view(bits_suffix).size();
    if (l.size() >= n && l.compare(l.size() - n, n, bits_suffix) == 0) {
      auto it = prefix.find(l.substr(0, l.size() - n));
      return it == prefix.end() ? 0 : it->second / 8;
    }
  }
  if (u.size() == 2 && u[1] == 'b') {
    auto it = prefix.find(l.substr(0, 1));
    return it == prefix.end() ? 0 : it->second / 8;
  }
  static const std::map<std::string, double> binary = {{"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}};
  if (auto it = binary.find(l); it != binary.end()) return it->second;
  if (!u.empty() && u.back() == 'B') {
    auto it = prefix.find(l.substr(0, l.size() - 1));
    return it == prefix.end() ? 0 : it->second;
  }
  return 0;
}

// The survey's figures are NIC rates: MB/s below a GB/s, as its matrices print them.
std::string expected_rate_text(double bytes_per_s) {
  return bytes_per_s < 1e9 ? fmt::format("{:.2f} MB/s", bytes_per_s / 1e6) : fmt::format("{:.2f} GB/s", bytes_per_s / 1e9);
}

}  // namespace

double parse_rate(std::string_view text, std::string_view what) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  double value = 0;
  try {
    value = i > 0 ? std::stod(std::string(text.substr(0, i))) : -1;
  } catch (const std::exception&) {
    value = -1;
  }
  const double scale = i < text.size() ? unit_scale(text.substr(i)) : 0;
  if (!(value > 0) || !std::isfinite(value) || scale <= 0)
    throw UsageError(fmt::format("{}: '{}' is not a rate (expected e.g. 23MB/s, 2.5GB/s, 200mbit or 10Gbit/s)", what, text));
  return value * scale;
}

Expectation parse_expect(std::string_view spec) {
  Expectation e;
  e.text = std::string(spec);
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = spec.find(',', start);
    const std::string_view part = spec.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const std::size_t eq = part.find('=');
    const std::string key = eq == std::string_view::npos ? "" : std::string(part.substr(0, eq));
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : part.substr(eq + 1);
    const std::string what = fmt::format("--expect {}", part);
    if (key == "bw") {
      e.bw_bytes_per_s = parse_rate(value, what);
    } else if (key == "local") {
      e.local_bytes_per_s = parse_rate(value, what);
    } else if (key == "lat") {
      double s = -1;
      try {
        s = parse_duration_s(value);
      } catch (const Error&) {
      }
      if (!(s > 0)) throw UsageError(fmt::format("{}: '{}' is not a time (expected e.g. 50us or 1.2ms)", what, value));
      e.latency_ns = s * 1e9;
    } else {
      throw UsageError(fmt::format("--expect: '{}' is not KEY=VALUE with KEY bw, lat or local (e.g. "
                                   "--expect bw=23MB/s,lat=50us)", part));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return e;
}

void apply_expectation(Verdict& v, const std::vector<Judged>& judged, const Expectation& e, const OutlierOptions& o) {
  if (!e.any()) return;
  struct Class {
    const Judged* any = nullptr;
    std::vector<double> medians;
    int beyond = 0;
  };
  // By metric and class: a link's bandwidth and its latency carry the same class name.
  // Pass-1 classes only: the second pass picks its links.
  std::map<std::pair<int, std::string>, Class> classes;
  const auto expected_of = [&](const Judged& j) {
    if (j.figure.metric == Metric::latency) return e.latency_ns;
    return j.figure.cls == kLocalClass ? e.local_bytes_per_s : e.bw_bytes_per_s;
  };
  const auto threshold_of = [&](const Judged& j) {
    if (j.figure.metric == Metric::latency) return o.latency_threshold_pct;
    return j.figure.cls == kLocalClass ? o.local_threshold_pct : o.threshold_pct;
  };
  // Beyond: the whole interval past the expected figure by more than the threshold.
  const auto beyond = [&](const Judged& j, double lo, double hi) {
    const double x = expected_of(j), t = threshold_of(j) / 100;
    return j.figure.metric == Metric::latency ? lo > x * (1 + t) : hi < x * (1 - t);
  };
  for (const Judged& j : judged) {
    if (j.figure.pass != 1 || j.figure.dev_src >= 0 || j.figure.samples.empty() || expected_of(j) <= 0) continue;
    Class& c = classes[{static_cast<int>(j.figure.metric), j.figure.cls}];
    if (!c.any) c.any = &j;
    c.medians.push_back(j.median);
    c.beyond += beyond(j, j.lo, j.hi) ? 1 : 0;
  }
  std::vector<Finding> found;
  for (const auto& [key, c] : classes) {
    const Judged& j = *c.any;
    const std::string& cls = key.second;
    // The whole class's median and its interval, every figure in (a Judged's class figures
    // leave its own link out).
    const double med = median(c.medians);
    const analyze::MedianInterval mi = analyze::median_interval(c.medians);
    if (!beyond(j, mi.lo_ns, mi.hi_ns)) continue;
    const double x = expected_of(j);
    Finding f;
    f.kind = "expect";
    f.ratio = med / x, f.ratio_lo = mi.lo_ns / x, f.ratio_hi = mi.hi_ns / x;
    const bool lat = j.figure.metric == Metric::latency;
    const std::string figure = lat ? format_duration_ns(x) : expected_rate_text(x);
    f.text = fmt::format("the whole class '{}' at {:.0f} % of the expected {} [{:.0f}, {:.0f} %] (--expect {}), "
                         "{} of its {} figures beyond it on their own: every {} alike, so not one host or link but "
                         "what they share (switches, MTU, drivers, settings)",
                         cls, 100 * f.ratio, figure, 100 * f.ratio_lo, 100 * f.ratio_hi, e.text, c.beyond, c.medians.size(),
                         cls == kLocalClass ? "host" : "link");
    found.push_back(std::move(f));
  }
  if (found.empty()) return;
  v.headline = fmt::format("below --expect: {}{}; peers among themselves: {}", found.front().text,
                           found.size() > 1 ? fmt::format(" (and {} more class{})", found.size() - 1,
                                                          found.size() == 2 ? "" : "es")
                                            : "",
                           v.headline);
  v.findings.insert(v.findings.begin(), found.begin(), found.end());
}

}  // namespace p2pscope::survey
