#pragma once
// `survey --expect`: what the links should carry, for the one fault that comparing peers
// cannot see. The outlier statistics judge each figure against its class's median, so a
// fleet whose every link runs at half its rate (a switch setting, an MTU, a driver) looks
// healthy: every link is like its peers. An expectation, optional and given by the user
// (no per-SKU table is built in), turns that into a finding: a class whose median and its
// interval lie below the expected figure by more than the threshold.
#include <string>
#include <string_view>
#include <vector>

#include "survey/outliers.hpp"
#include "survey/verdict.hpp"

namespace p2pscope::survey {

struct Expectation {
  double bw_bytes_per_s = 0;     // each direction of a link, as a survey's figures are
  double latency_ns = 0;         // one-way p50
  double local_bytes_per_s = 0;  // a host's own ceiling
  std::string text;              // as given, for the findings
  bool any() const { return bw_bytes_per_s > 0 || latency_ns > 0 || local_bytes_per_s > 0; }
};

// "bw=23MB/s,lat=50us,local=2GB/s", each part optional. Rates: B/s, KB/s, MB/s, GB/s
// (powers of 1000), KiB/s, MiB/s, GiB/s, and bits as tc and ethtool write them
// (kbit, Mbit, Gbit, Mbps, Gb/s ...). UsageError naming the part that does not parse.
Expectation parse_expect(std::string_view spec);
// A rate in bytes/s, in the forms above; UsageError naming `what`.
double parse_rate(std::string_view text, std::string_view what);

// One finding per pass-1 class whose median's interval lies wholly beyond the expected
// figure by more than the class's threshold ("expect"), appended to the verdict, worst
// first in its headline.
void apply_expectation(Verdict& v, const std::vector<Judged>& judged, const Expectation& e,
                       const OutlierOptions& o);

}  // namespace p2pscope::survey
