#pragma once
// The campaign's clocks: the sync windows at start and end (drift.hpp), the fits that
// map each GPU's timer onto the host clock with bounds on their error, and the
// causality check of every logged op (causality.hpp). Writes clock_drift.json's
// content and says which GPUs could not be aligned, so the trace shows their lanes
// as unaligned rather than guessed.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"
#include "p2pscope/profile.hpp"
#include "profile/clock_map.hpp"
#include "profile/drift.hpp"
#include "profile/execution_log.hpp"

namespace p2pscope::profile {

struct DriftWindow {
  std::map<int, TimerSamples> samples;  // device -> readings (devices with a timer)
  std::map<int, std::string> no_timer;  // device -> why it gave no readings
  double window_s = 0;
};
// Without a window (0 s), 20 quick bursts give the offset; the start and end windows
// together still give the slope over the campaign.
DriftWindow measure_drift(bench::Backend& b, const std::vector<int>& devices, double window_s,
                          const std::atomic<bool>* stop);

// The bursts taken while measuring (every ~0.25 s), which let the clock map follow a
// rate that wanders (clock_map.hpp).
class SyncDuringRun {
 public:
  static constexpr std::int64_t kPeriodNs = 250'000'000;
  static constexpr int kPokes = 16;
  SyncDuringRun(bench::Backend& b, std::vector<int> devices) : b_(b), devices_(std::move(devices)) {}
  // Takes a burst on every device when the last one is older than kPeriodNs.
  void maybe_sync();
  const DriftWindow& window() const { return w_; }

 private:
  bench::Backend& b_;
  std::vector<int> devices_;
  DriftWindow w_;
  std::int64_t last_ns_ = 0;
  std::map<int, bool> dead_;  // devices that gave no readings: not asked again
};

struct Alignment {
  nlohmann::json report;                 // clock_drift.json
  std::map<int, ClockMap> to_host;       // GPU -> host clock, for the trace
  std::map<int, std::string> unaligned;  // GPUs whose ops carry stamps that cannot be placed, and why
  std::vector<std::string> warnings;     // for metadata.json and the report's findings
};

// `clock_device(src, dst)`: whose timer stamped an op (the backend's clock_device).
// `single_stamp_error_ns`: the event-calibration error of single-timing stamps.
Alignment align_clocks(const std::string& backend, const DriftWindow& start, const DriftWindow& during,
                       const DriftWindow& end, const Plan& plan,
                       const std::vector<LogRow>& rows, const std::function<int(int, int)>& clock_device,
                       double single_stamp_error_ns);

}  // namespace p2pscope::profile
