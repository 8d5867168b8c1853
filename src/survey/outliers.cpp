#include "survey/outliers.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/stats.hpp"

namespace p2pscope::survey {
namespace {

struct ClassStats {
  double median = 0, lo = 0, hi = 0, mad = 0;
  int size = 0;
};

ClassStats class_stats(const std::vector<double>& medians) {
  ClassStats c;
  c.size = static_cast<int>(medians.size());
  if (medians.empty()) return c;
  c.median = median(medians);
  const analyze::MedianInterval mi = analyze::median_interval(medians);
  c.lo = mi.lo_ns, c.hi = mi.hi_ns;
  std::vector<double> dev;
  for (double m : medians) dev.push_back(std::abs(m - c.median));
  c.mad = median(dev);
  return c;
}

// A host's own figures move with other work on its CPUs and memory: the local ceiling and
// host-memory device pairs need a gross deficit (4 namespace hosts on a loaded 2-core
// machine: a host copy pair at 92 % of its class, with intervals that did not overlap).
// GPU copies are steadier, but clocks and placement still move them more than a NIC.
double threshold_for(const Figure& f, const OutlierOptions& o) {
  if (f.cls == kLocalClass) return o.local_threshold_pct;
  if (f.dev_src >= 0)
    return f.cls.rfind(std::string(kDevicePairPrefix) + "host ", 0) == 0 ? o.local_threshold_pct : o.device_threshold_pct;
  return f.metric == Metric::bandwidth ? o.threshold_pct : o.latency_threshold_pct;
}

// j set against its class `c` (its peers): the ratios, and flagged only where the whole
// interval is past the threshold, beyond both intervals and beyond o.mad_k MADs.
void judge_against(Judged& j, const ClassStats& c, const OutlierOptions& o) {
  const Figure& f = j.figure;
  j.class_median = c.median, j.class_lo = c.lo, j.class_hi = c.hi, j.class_mad = c.mad, j.class_size = c.size;
  if (c.median > 0) {
    j.ratio = j.median / c.median, j.ratio_lo = j.lo / c.median, j.ratio_hi = j.hi / c.median;
  }
  if (c.size < o.min_class) {
    j.why = fmt::format("class of {} figures (fewer than {}): not judged", c.size, o.min_class);
    return;
  }
  const bool bw = f.metric == Metric::bandwidth;
  // Signed so that "worse" is positive for both metrics.
  const double worse_pct = c.median > 0 ? (bw ? c.median - j.median : j.median - c.median) / c.median * 100 : 0;
  // The threshold is met by the whole interval, not the median alone: on a link whose
  // rounds swing (16 shaped namespace hosts: rounds of one healthy link from 18 to 25
  // MB/s), a median 7-18 % under a class pinned at the line rate came up in 5 of 20
  // healthy surveys, twice in a row for the same link, with its interval reaching to
  // within 0.1 % of the class. A link whose best plausible figure is within the
  // threshold is not shown to be slower by it.
  const double surely_worse_pct =
      c.median > 0 ? (bw ? c.median - j.hi : j.lo - c.median) / c.median * 100 : 0;
  const double threshold = threshold_for(f, o);
  const bool beyond_threshold = surely_worse_pct >= threshold;
  const bool beyond_intervals = bw ? j.hi < c.lo : j.lo > c.hi;
  const double scaled_mad = 1.4826 * c.mad;
  const bool beyond_mad = std::abs(j.median - c.median) > o.mad_k * scaled_mad;
  j.flagged = beyond_threshold && beyond_intervals && beyond_mad;
  if (j.flagged)
    j.why = fmt::format("{:.1f} % {} than its class, beyond both intervals and {:.0f} MADs", worse_pct,
                        bw ? "slower" : "higher", o.mad_k);
  else if (!beyond_threshold && worse_pct >= threshold)
    j.why = fmt::format("{:.1f} % {}, but its interval reaches within {:.1f} % of its class (under the {:.0f} % "
                        "threshold): its rounds swung",
                        worse_pct, bw ? "slower" : "higher", std::max(0.0, surely_worse_pct), threshold);
  else if (!beyond_threshold)
    j.why = worse_pct > 0 ? fmt::format("{:.1f} % {}: under the {:.0f} % threshold", worse_pct, bw ? "slower" : "higher",
                                        threshold)
                          : "normal";
  else if (!beyond_intervals)
    j.why = fmt::format("{:.1f} % {}, but its interval meets the class's: noise", worse_pct, bw ? "slower" : "higher");
  else
    j.why = fmt::format("{:.1f} % {}, but within {:.0f} MADs of its class", worse_pct, bw ? "slower" : "higher",
                        o.mad_k);
}

}  // namespace

std::vector<Judged> judge(const std::vector<Figure>& figures, const OutlierOptions& o) {
  std::vector<Judged> out;
  std::map<std::pair<int, std::string>, std::vector<double>> pass1, pass2;  // (metric, class) -> medians
  // ... and which link each median is of, to leave a link's both directions out at once.
  std::map<std::pair<int, std::string>, std::vector<std::tuple<int, int, int>>> links1, links2;
  const auto link_of = [](const Figure& f) { return std::tuple{std::min(f.from, f.to), std::max(f.from, f.to), f.rail}; };
  for (const Figure& f : figures) {
    Judged j;
    j.figure = f;
    if (!f.samples.empty()) {
      j.median = median(f.samples);
      const analyze::MedianInterval mi = analyze::median_interval(f.samples);
      j.lo = mi.lo_ns, j.hi = mi.hi_ns, j.level = mi.level;
      j.p99 = percentile(f.samples, 0.99);
      (f.pass == 1 ? pass1 : pass2)[{static_cast<int>(f.metric), f.cls}].push_back(j.median);
      (f.pass == 1 ? links1 : links2)[{static_cast<int>(f.metric), f.cls}].push_back(link_of(f));
    }
    out.push_back(std::move(j));
  }
  std::map<std::pair<int, std::string>, ClassStats> classes;
  for (const auto& [key, medians] : pass1) classes[key] = class_stats(medians);
  // A figure is set against its peers, itself left out: in a small class (4 hosts' local
  // ceilings) the class's [min, max] would hold the outlier itself. Past kWholeClass
  // figures one figure moves nothing, and leaving each out would cost n^2.
  constexpr std::size_t kWholeClass = 64;
  // A second-pass class the first pass never measured (the adaptive mode's first pass
  // ran in groups; its rechecks run alone) is its own reference, each figure left out.
  std::map<std::pair<int, std::string>, ClassStats> own_pass2;
  for (const auto& [key, medians] : pass2)
    if (!classes.count(key)) own_pass2[key] = class_stats(medians);
  const auto peers_of = [&](const Judged& j, const ClassStats& whole) {
    const bool alone = j.figure.pass == 2 && own_pass2.count({static_cast<int>(j.figure.metric), j.figure.cls});
    const std::pair<int, std::string> key{static_cast<int>(j.figure.metric), j.figure.cls};
    const auto& medians = (alone ? pass2 : pass1)[key];
    const auto& links = (alone ? links2 : links1)[key];
    if (medians.size() > kWholeClass || (j.figure.pass != 1 && !alone)) return whole;
    // Both directions of the figure's link are left out: a link slow both ways would
    // otherwise be its own peer.
    std::vector<double> others;
    for (std::size_t i = 0; i < medians.size(); ++i)
      if (links[i] != link_of(j.figure)) others.push_back(medians[i]);
    ClassStats c = class_stats(others);
    c.size = whole.size;
    return c;
  };

  for (Judged& j : out) {
    const Figure& f = j.figure;
    if (f.samples.empty()) {
      j.why = "not measured";
      continue;
    }
    const std::pair<int, std::string> key{static_cast<int>(f.metric), f.cls};
    const ClassStats* whole = nullptr;
    if (const auto a = classes.find(key); a != classes.end()) whole = &a->second;
    else if (const auto b = own_pass2.find(key); b != own_pass2.end()) whole = &b->second;
    if (!whole) {
      j.why = "no figure of its class in the first pass";
      continue;
    }
    judge_against(j, peers_of(j, *whole), o);
  }
  return out;
}

}  // namespace p2pscope::survey
