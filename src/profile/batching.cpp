#include "profile/batching.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::profile {

std::string to_string(Timing t) { return enum_name(kTimingNames, t); }
Timing parse_timing(const std::string& text) { return parse_enum(kTimingNames, text, "--timing"); }

double parse_min_sample_time(const std::string& text) {
  double s = 0;
  try {
    s = parse_duration_s(text);
  } catch (const UsageError& e) {
    throw UsageError(std::string("--min-sample-time: ") + e.what());
  }
  if (!(s > 0)) throw UsageError("--min-sample-time '" + text + "' must be above 0, e.g. 50us");
  if (s > 1.0)
    throw UsageError("--min-sample-time '" + text + "' is over 1 s: a sample that long makes a campaign of 31 sizes "
                     "take hours; 50us-10ms is the useful range");
  return s * 1e9;
}

int batch_size_for(double per_transfer_ns, double min_sample_ns, int max_batch) {
  if (!(per_transfer_ns > 0) || !std::isfinite(per_transfer_ns) || !(min_sample_ns > 0)) return 1;
  const double k = std::ceil(min_sample_ns / per_transfer_ns);
  return static_cast<int>(std::clamp(k, 1.0, static_cast<double>(std::max(1, max_batch))));
}

}  // namespace p2pscope::profile
