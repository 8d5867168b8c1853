#pragma once
// Device timer against host CLOCK_MONOTONIC: sampling and a least-squares line fit,
// for clock_drift.json and for mapping GPU timestamps onto the host time line.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"

namespace p2pscope::profile {

struct TimerPoint {
  std::int64_t host_ns = 0;    // midpoint of the host reads around the device read
  std::int64_t device_ns = 0;
  std::int64_t bracket_ns = 0; // host_after - host_before: the reading's uncertainty
  // The device read happened between these host times (causality: the GPU saw the
  // host's poke, the host saw the GPU's answer).
  std::int64_t host_before_ns() const { return host_ns - bracket_ns / 2; }
  std::int64_t host_after_ns() const { return host_before_ns() + bracket_ns; }
};
TimerPoint timer_point(const bench::Backend::TimerReading& r);

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
  // Bounds on the offset: every reading says the device read lies inside its host
  // bracket (and inside one timer step after the value read). Intersecting them
  // over all readings bounds device_ref_ns to [device_ref_ns + offset_lo_ns,
  // device_ref_ns + offset_hi_ns]; the fit is centred in it. When the intersection
  // is empty (a clock that jumped, drift that is not a line), bounded is false,
  // inconsistency_ns says by how much, and the least-squares line stays.
  bool bounded = false;
  double offset_lo_ns = 0, offset_hi_ns = 0;
  double inconsistency_ns = 0;
  std::int64_t step_ns = 0;         // the device timer's update step, as measured
  std::int64_t min_bracket_ns = 0;  // the tightest reading's host bracket
  // How far a mapped device time may be off the host clock (ns): half the bounded
  // interval, or for an unbounded fit half the tightest bracket plus the inconsistency.
  double uncertainty_ns() const;
  // Host time of a device timestamp.
  double host_of_device(std::int64_t device_ns) const;
  // Moves the line by delta_ns on the device axis, keeping the bounds where they are.
  void shift_offset(double delta_ns);
};

// Drops readings whose bracket is more than twice the median (preempted reads),
// then fits. A single window shorter than ~1 ms cannot give a meaningful slope:
// callers then force slope 1 (offset only) via `offset_only`.
DriftFit fit_timer_points(const std::vector<TimerPoint>& pts, bool offset_only = false, std::int64_t step_ns = 0);

// One device's readings of a sampling window, with how they were taken.
struct TimerSamples {
  std::vector<TimerPoint> points;
  std::int64_t step_ns = 0;
  std::string method, note;
};
// Reads every device's timer round-robin in bursts for `window_s` seconds (at least
// `min_rounds` bursts per device). Devices without a timer give no points. Stops
// early when *stop becomes true.
std::vector<TimerSamples> sample_timers(bench::Backend& b, const std::vector<int>& devices, double window_s,
                                        int min_rounds, const std::atomic<bool>* stop);

}  // namespace p2pscope::profile
