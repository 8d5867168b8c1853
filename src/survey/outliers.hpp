#pragma once
// Which figures of a survey stand out from their peers. A figure is one link in one
// direction (bandwidth) or one pair (latency), measured several times; its peers are
// the figures of the same class (same metric, same NIC speed at both ends), so no table
// of expected rates is needed. A figure is flagged only when all three hold:
//   - it differs from its class's median by at least the threshold (5 % of bandwidth);
//   - its interval and the class median's interval do not overlap (the distribution-free
//     interval of a median that `analyze` uses, analyze/campaign.hpp);
//   - it lies more than mad_k scaled MADs from the class median (robust to the flagged
//     figures themselves: a slow host's 14 slow links do not move the median of 56).
// So run-to-run noise, which widens the intervals, cannot raise a flag by itself, and a
// link 6 % slow with tight intervals is still found.
#include <string>
#include <vector>

namespace p2pscope::survey {

enum class Metric { bandwidth, latency };  // bytes/s (higher is better), ns (lower is better)
// The class of the hosts' local ceilings (from = to = the host, rail -1).
inline constexpr const char* kLocalClass = "local ceiling";

struct Figure {
  Metric metric = Metric::bandwidth;
  int pass = 1;             // 1: the survey's rounds; 2: a suspect against a good partner
  int from = 0, to = 0;     // ranks; bandwidth: data from -> to; latency: the pair, from < to
  int rail = 0;
  std::string cls;          // the class: figures are compared only within one
  std::vector<double> samples;  // bandwidth: one per timed round; latency: one per ping
  int dev_src = -1, dev_dst = -1;  // a device pair inside host `from` (= `to`), else -1
};
// The classes of device pairs inside hosts: "device pair ce 0->1"; each pair is judged
// against the same pair on the other hosts (one SKU: the same wiring).
inline constexpr const char* kDevicePairPrefix = "device pair ";

struct Judged {
  Figure figure;
  double median = 0, lo = 0, hi = 0, level = 0;    // the figure's median and its interval
  double p99 = 0;                                   // latency: the 99th percentile
  double class_median = 0, class_lo = 0, class_hi = 0, class_mad = 0;
  int class_size = 0;
  double ratio = 0, ratio_lo = 0, ratio_hi = 0;     // median / class median, with its interval
  bool flagged = false;
  std::string why;  // a flag's three reasons, or what kept a figure from one
};

struct OutlierOptions {
  double threshold_pct = 5;           // bandwidth
  double latency_threshold_pct = 50;  // a p50 this much above its class (jitter is larger)
  // A host's own ceiling (bench tcp over loopback) is a figure of its CPUs and memory,
  // which other work moves by tens of %: only a gross deficit is a finding.
  double local_threshold_pct = 50;  // ... and device pairs of host memory (the host backend)
  double device_threshold_pct = 10;  // GPU device pairs inside a host
  double mad_k = 3;
  int min_class = 3;  // smaller classes are shown but never flagged
};

// Judges pass-1 figures against their class; pass-2 figures (rechecks) against the
// class of pass 1 (the healthy reference), so a recheck's verdict means the same.
std::vector<Judged> judge(const std::vector<Figure>& figures, const OutlierOptions& options);

}  // namespace p2pscope::survey
