#include "profile/drift.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "p2pscope/clock.hpp"
#include "p2pscope/stats.hpp"

namespace p2pscope::profile {

double DriftFit::host_of_device(std::int64_t device_ns) const {
  if (bounded) {
    const auto r = region.host_range(static_cast<double>(device_ns - device_ref_ns));
    return static_cast<double>(host_ref_ns) + (r[0] + r[1]) / 2;
  }
  return static_cast<double>(host_ref_ns) + static_cast<double>(device_ns - device_ref_ns) / slope;
}

double DriftFit::uncertainty_over(std::int64_t h0, std::int64_t h1) const {
  if (!bounded) return static_cast<double>(min_bracket_ns) / 2 + static_cast<double>(step_ns) + inconsistency_ns;
  // The spread of a convex set of lines is largest at an end of the interval.
  double u = 0;
  for (const std::int64_t h : {h0, h1}) {
    const auto r = region.device_range(static_cast<double>(h - host_ref_ns));
    u = std::max(u, (r[1] - r[0]) / 2);
  }
  return u;
}

void DriftFit::shift_offset(double delta_ns) { device_ref_ns += static_cast<std::int64_t>(std::llround(delta_ns)); }

TimerPoint timer_point(const bench::TimerReading& r) {
  return {r.host_before_ns + (r.host_after_ns - r.host_before_ns) / 2, r.device_ns, r.host_after_ns - r.host_before_ns};
}

DriftFit fit_timer_points(const std::vector<TimerPoint>& all, bool offset_only, std::int64_t step_ns) {
  DriftFit f;
  if (all.empty()) return f;
  std::vector<double> brackets;
  for (const auto& p : all) brackets.push_back(static_cast<double>(p.bracket_ns));
  const std::int64_t limit = std::max<std::int64_t>(std::llround(2 * median(brackets)), 1000);
  std::vector<TimerPoint> pts;
  for (const auto& p : all)
    if (p.bracket_ns <= limit) pts.push_back(p);
  if (pts.empty()) return f;
  f.points = pts.size();
  f.step_ns = std::max<std::int64_t>(step_ns, 0);
  // Work relative to the first point: absolute ns (GPU global timer ~1.7e18) exceed
  // a double's 53-bit mantissa.
  f.host_ref_ns = pts.front().host_ns;
  f.device_ref_ns = pts.front().device_ns;
  double sx = 0, sy = 0;
  for (const auto& p : pts) {
    sx += static_cast<double>(p.host_ns - f.host_ref_ns);
    sy += static_cast<double>(p.device_ns - f.device_ref_ns);
  }
  const double n = static_cast<double>(pts.size());
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (const auto& p : pts) {
    const double x = static_cast<double>(p.host_ns - f.host_ref_ns) - mx;
    const double y = static_cast<double>(p.device_ns - f.device_ref_ns) - my;
    sxx += x * x;
    sxy += x * y;
  }
  f.slope = (!offset_only && pts.size() >= 2 && sxx > 0) ? sxy / sxx : 1.0;
  // Re-anchor the line at its mean so the reference point lies on the fit.
  const double intercept = my - f.slope * mx;  // device offset at host_ref
  f.device_ref_ns += static_cast<std::int64_t>(std::llround(intercept));

  // The bounds, from every reading (a wide bracket is a weak bound, never a wrong one):
  // device = ref + c + (1 + u) * (h - host_ref) with h in [before, after] and the true
  // device time in [read, read + step].
  f.min_bracket_ns = all.front().bracket_ns;
  f.span_from_ns = all.front().host_before_ns();
  f.span_to_ns = all.front().host_after_ns();
  f.region = FeasibleLines(-1e7, 1e7, f.slope - 1 - 2e-4, f.slope - 1 + 2e-4);
  f.bounded = true;
  double lo = -INFINITY, hi = INFINITY;  // the offset at the least-squares rate, for the inconsistency
  for (const auto& p : all) {
    f.min_bracket_ns = std::min(f.min_bracket_ns, p.bracket_ns);
    f.span_from_ns = std::min(f.span_from_ns, p.host_before_ns());
    f.span_to_ns = std::max(f.span_to_ns, p.host_after_ns());
    const double d = static_cast<double>(p.device_ns - f.device_ref_ns);
    const double before = static_cast<double>(p.host_before_ns() - f.host_ref_ns);
    const double after = static_cast<double>(p.host_after_ns() - f.host_ref_ns);
    lo = std::max(lo, d - f.slope * after);
    hi = std::min(hi, d + static_cast<double>(f.step_ns) - f.slope * before);
    if (f.bounded) f.bounded = f.region.keep_below(before, d + static_cast<double>(f.step_ns)) && f.region.keep_above(after, d);
  }
  if (!f.bounded) {
    f.region = FeasibleLines();
    f.inconsistency_ns = std::max(lo - hi, 0.0);
  } else if (lo <= hi) {
    f.shift_offset((lo + hi) / 2);  // the reported line in the middle of what its rate allows
    f.region.shift_c(-std::llround((lo + hi) / 2));
  }
  for (const auto& p : pts) {
    const double pred = f.slope * static_cast<double>(p.host_ns - f.host_ref_ns);  // relative to device_ref
    f.residual_max_ns = std::max(f.residual_max_ns, std::fabs(pred - static_cast<double>(p.device_ns - f.device_ref_ns)));
  }
  f.ok = true;
  return f;
}

std::vector<TimerSamples> sample_timers(bench::Backend& b, const std::vector<int>& devices, double window_s,
                                        int min_rounds, const std::atomic<bool>* stop) {
  constexpr int kBurst = 16;  // pokes per round: a few are always tight
  std::vector<TimerSamples> out(devices.size());
  const std::int64_t t0 = monotonic_ns();
  const std::int64_t window_ns = static_cast<std::int64_t>(window_s * 1e9);
  // ~200 rounds per device over a long window is plenty for a line fit.
  const auto period = std::chrono::nanoseconds(std::max<std::int64_t>(window_ns / 200, 0));
  bench::DeviceTimer* timer = b.device_timer();
  std::vector<bool> has_timer(devices.size(), timer != nullptr);  // none: every device has no timer
  for (int round = 0;; ++round) {
    bool any = false;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (!has_timer[i]) continue;
      const auto burst = timer->read_device_timer_burst(devices[i], kBurst);
      if (!burst.note.empty()) out[i].note = burst.note;
      if (burst.readings.empty()) {
        has_timer[i] = false;
        continue;
      }
      any = true;
      out[i].method = burst.method;
      out[i].step_ns = std::max(out[i].step_ns, burst.step_ns);
      for (const auto& r : burst.readings) out[i].points.push_back(timer_point(r));
    }
    if (!any) break;
    if (stop && stop->load()) break;
    const bool time_up = monotonic_ns() - t0 >= window_ns;
    if (time_up && round + 1 >= min_rounds) break;
    if (!time_up && period.count() > 0) std::this_thread::sleep_for(period);
  }
  return out;
}

}  // namespace p2pscope::profile
