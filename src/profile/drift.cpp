#include "profile/drift.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "p2pscope/clock.hpp"

namespace p2pscope::profile {

double DriftFit::host_of_device(std::int64_t device_ns) const {
  return static_cast<double>(host_ref_ns) + static_cast<double>(device_ns - device_ref_ns) / slope;
}

DriftFit fit_timer_points(const std::vector<TimerPoint>& all, bool offset_only) {
  DriftFit f;
  if (all.empty()) return f;
  std::vector<std::int64_t> brackets;
  for (const auto& p : all) brackets.push_back(p.bracket_ns);
  std::nth_element(brackets.begin(), brackets.begin() + static_cast<long>(brackets.size() / 2), brackets.end());
  const std::int64_t limit = std::max<std::int64_t>(2 * brackets[brackets.size() / 2], 1000);
  std::vector<TimerPoint> pts;
  for (const auto& p : all)
    if (p.bracket_ns <= limit) pts.push_back(p);
  if (pts.empty()) return f;
  f.points = pts.size();
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
  for (const auto& p : pts) {
    const double pred = f.slope * static_cast<double>(p.host_ns - f.host_ref_ns);  // relative to device_ref
    f.residual_max_ns = std::max(f.residual_max_ns, std::fabs(pred - static_cast<double>(p.device_ns - f.device_ref_ns)));
  }
  f.ok = true;
  return f;
}

std::vector<std::vector<TimerPoint>> sample_timers(bench::Backend& b, const std::vector<int>& devices,
                                                   double window_s, int min_points,
                                                   const std::atomic<bool>* stop) {
  std::vector<std::vector<TimerPoint>> out(devices.size());
  const std::int64_t t0 = monotonic_ns();
  const std::int64_t window_ns = static_cast<std::int64_t>(window_s * 1e9);
  // ~200 readings per device over a long window is plenty for a line fit.
  const auto period = std::chrono::nanoseconds(std::max<std::int64_t>(window_ns / 200, 0));
  std::vector<bool> has_timer(devices.size(), true);
  for (int round = 0;; ++round) {
    bool any = false;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (!has_timer[i]) continue;
      const auto r = b.read_device_timer(devices[i]);
      if (r.device_ns < 0) {
        has_timer[i] = false;
        continue;
      }
      any = true;
      out[i].push_back({r.host_before_ns + (r.host_after_ns - r.host_before_ns) / 2, r.device_ns,
                        r.host_after_ns - r.host_before_ns});
    }
    if (!any) break;
    if (stop && stop->load()) break;
    const bool time_up = monotonic_ns() - t0 >= window_ns;
    if (time_up && round + 1 >= min_points) break;
    if (!time_up && period.count() > 0) std::this_thread::sleep_for(period);
  }
  return out;
}

}  // namespace p2pscope::profile
