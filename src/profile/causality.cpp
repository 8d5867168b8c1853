#include "profile/causality.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace p2pscope::profile {

CausalityCheck check_causality(const std::vector<OpSpan>& ops, DriftFit* fit) {
  CausalityCheck c;
  if (!fit || !fit->ok) return c;
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& op : ops)
    if (op.device_start_ns >= 0 && op.device_end_ns >= op.device_start_ns) {
      first = std::min(first, op.host_start_ns);
      last = std::max(last, op.host_end_ns);
    }
  if (first > last) return c;
  // The lines the sync allows; for an unbounded fit, its line give or take its stated
  // uncertainty at the fitted rate.
  FeasibleLines lines = fit->region;
  if (!fit->bounded) {
    const double u = fit->uncertainty_ns();
    lines = FeasibleLines(-u, u, fit->slope - 1 - 1e-12, fit->slope - 1 + 1e-12);
  }
  c.uncertainty_before_ns = fit->uncertainty_over(first, last);
  // An op says: the line passes at or below its GPU start at its host issue (the GPU
  // starts after the host issued), and at or above its GPU end at its host completion.
  const auto x = [&](std::int64_t host) { return static_cast<double>(host - fit->host_ref_ns); };
  const auto y = [&](std::int64_t device) { return static_cast<double>(device - fit->device_ref_ns); };
  for (const auto& op : ops) {
    if (op.device_start_ns < 0 || op.device_end_ns < op.device_start_ns) continue;
    ++c.ops_checked;
    const double xs = x(op.host_start_ns), ys = y(op.device_start_ns) + op.stamp_error_ns;
    const double xe = x(op.host_end_ns), ye = y(op.device_end_ns) - op.stamp_error_ns;
    double out = std::max(lines.excess_below(xs, ys), lines.excess_above(xe, ye));
    if (out <= 0) {  // each end fits some allowed line; both together must fit one
      FeasibleLines both = lines;
      // No single line fits both ends, though each end alone is within the bounds:
      // a violation smaller than either end's own excess, counted as 1 ns.
      if (!both.keep_below(xs, ys) || !both.keep_above(xe, ye)) out = 1;
    }
    if (out > 0) {
      ++c.violations;
      if (out > c.worst_violation_ns) {
        c.worst_violation_ns = out;
        c.worst_op = op.name;
      }
    }
  }
  c.uncertainty_after_ns = c.uncertainty_before_ns;
  if (c.violations == 0 && fit->bounded) {
    // Every op holds: together they narrow the lines (unless they contradict each other).
    // An unbounded fit is not narrowed: its box around the line is a guess, not a bound.
    FeasibleLines narrowed = lines;
    bool fits = true;
    for (const auto& op : ops) {
      if (!fits || op.device_start_ns < 0 || op.device_end_ns < op.device_start_ns) continue;
      fits = narrowed.keep_below(x(op.host_start_ns), y(op.device_start_ns) + op.stamp_error_ns) &&
             narrowed.keep_above(x(op.host_end_ns), y(op.device_end_ns) - op.stamp_error_ns);
    }
    if (fits) {
      fit->region = narrowed;
      c.uncertainty_after_ns = fit->uncertainty_over(first, last);
      c.refined = c.uncertainty_after_ns < c.uncertainty_before_ns;
    }
  }
  // Slack with the final mapping: the least time from host issue to GPU start, and from
  // GPU end to host completion.
  c.min_start_slack_ns = INFINITY;
  c.min_end_slack_ns = INFINITY;
  for (const auto& op : ops) {
    if (op.device_start_ns < 0 || op.device_end_ns < op.device_start_ns) continue;
    c.min_start_slack_ns = std::min(c.min_start_slack_ns, fit->host_of_device(op.device_start_ns) - static_cast<double>(op.host_start_ns));
    c.min_end_slack_ns = std::min(c.min_end_slack_ns, static_cast<double>(op.host_end_ns) - fit->host_of_device(op.device_end_ns));
  }
  return c;
}

nlohmann::json to_json(const CausalityCheck& c) {
  const auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  return {{"ops_checked", c.ops_checked},
          {"violations", c.violations},
          {"worst_violation_ns", c.worst_violation_ns},
          {"worst_op", c.worst_op.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.worst_op)},
          {"offset_uncertainty_from_sync_ns", c.uncertainty_before_ns},
          {"offset_uncertainty_ns", c.uncertainty_after_ns},
          {"narrowed_by_ops", c.refined},
          {"min_start_slack_ns", num(c.min_start_slack_ns)},
          {"min_end_slack_ns", num(c.min_end_slack_ns)},
          {"rule", "an op's GPU interval, mapped to host time, lies inside its host issue..completion interval; "
                   "a violation is an op for which no offset allowed by the clock sync achieves that"}};
}

}  // namespace p2pscope::profile
