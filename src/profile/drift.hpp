#pragma once
// Device timer against host CLOCK_MONOTONIC: sampling and a least-squares line fit,
// for clock_drift.json and for mapping GPU timestamps onto the host time line.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "p2pscope/backend.hpp"
#include "profile/feasible_lines.hpp"

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
TimerPoint timer_point(const bench::TimerReading& r);

// device = host_ref-relative line: device_ns ~ device_ref + slope * (host_ns - host_ref),
// the least-squares line (its rate is what clock_drift.json reports), and around it
// every line the readings allow (feasible_lines.hpp), which is what maps and bounds.
struct DriftFit {
  bool ok = false;             // false: no usable points
  std::size_t points = 0;
  std::int64_t host_ref_ns = 0, device_ref_ns = 0;
  double slope = 1.0;
  double ppm() const { return (slope - 1.0) * 1e6; }
  // device - host at host_ref (ns).
  double offset_ns() const { return static_cast<double>(device_ref_ns - host_ref_ns); }
  double residual_max_ns = 0;  // worst |fit - reading| over the points used
  // The lines no reading contradicts: each reading puts the device read inside its
  // host bracket and inside one timer step after the value read. Relative to
  // (host_ref_ns, device_ref_ns). When they leave no line (a clock that jumped, drift
  // that bends within the window) bounded is false, inconsistency_ns says by how much
  // (at the least-squares rate), and the least-squares line maps.
  FeasibleLines region;
  bool bounded = false;
  double inconsistency_ns = 0;
  std::int64_t span_from_ns = 0, span_to_ns = 0;  // host times the readings cover
  std::int64_t step_ns = 0;         // the device timer's update step, as measured
  std::int64_t min_bracket_ns = 0;  // the tightest reading's host bracket
  // How far a device time mapped to host time may be off (ns), for device times
  // stamped between host times h0 and h1: half the spread of the allowed lines there.
  // Unbounded: half the tightest bracket plus a step plus the inconsistency.
  double uncertainty_over(std::int64_t h0, std::int64_t h1) const;
  double uncertainty_ns() const { return uncertainty_over(span_from_ns, span_to_ns); }
  // Host time of a device timestamp: the middle of the host times the allowed lines give.
  double host_of_device(std::int64_t device_ns) const;
  // Moves the mapping (line and region) by delta_ns on the device axis.
  void shift_offset(double delta_ns);
};

// Drops readings whose bracket is more than twice the median (preempted reads),
// then fits the least-squares line (slope 1 with `offset_only`: a window of a few ms
// gives no meaningful slope) and bounds it with every reading. The bounding region
// lets the rate vary within +-200 ppm of the fit whatever `offset_only` says, so a
// short window's bound honestly widens away from it.
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
