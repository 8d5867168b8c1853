#pragma once
// Device timer against host CLOCK_MONOTONIC: sampling and a least-squares line fit,
// for clock_drift.json and for mapping GPU timestamps onto the host time line.
#include <atomic>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"

namespace p2pscope::profile {

struct TimerPoint {
  std::int64_t host_ns = 0;    // midpoint of the host reads around the device read
  std::int64_t device_ns = 0;
  std::int64_t bracket_ns = 0; // host_after - host_before: the reading's uncertainty
};

// device = host_ref-relative line: device_ns ~ device_ref + slope * (host_ns - host_ref).
struct DriftFit {
  bool ok = false;             // false: fewer than 2 usable points
  std::size_t points = 0;
  std::int64_t host_ref_ns = 0, device_ref_ns = 0;
  double slope = 1.0;
  double ppm() const { return (slope - 1.0) * 1e6; }
  // device - host at host_ref (ns).
  double offset_ns() const { return static_cast<double>(device_ref_ns - host_ref_ns); }
  double residual_max_ns = 0;  // worst |fit - reading| over the points used
  // Host time of a device timestamp.
  double host_of_device(std::int64_t device_ns) const;
};

// Drops readings whose bracket is more than twice the median (preempted reads),
// then fits. A single window shorter than ~1 ms cannot give a meaningful slope:
// callers then force slope 1 (offset only) via `offset_only`.
DriftFit fit_timer_points(const std::vector<TimerPoint>& pts, bool offset_only = false);

// Reads every device's timer round-robin for `window_s` seconds (at least `min_points`
// readings per device). Devices without a timer give no points. Stops early when
// *stop becomes true.
std::vector<std::vector<TimerPoint>> sample_timers(bench::Backend& b, const std::vector<int>& devices,
                                                   double window_s, int min_points,
                                                   const std::atomic<bool>* stop);

}  // namespace p2pscope::profile
