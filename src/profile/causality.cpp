#include "profile/causality.hpp"

#include <algorithm>
#include <cmath>

namespace p2pscope::profile {

CausalityCheck check_causality(const std::vector<OpSpan>& ops, DriftFit* fit) {
  CausalityCheck c;
  if (!fit || !fit->ok) return c;
  // The sync's interval for the offset, relative to the line's device_ref_ns; an
  // unbounded fit allows its stated uncertainty either side.
  const double u = fit->uncertainty_ns();
  const double lo = fit->bounded ? fit->offset_lo_ns : -u;
  const double hi = fit->bounded ? fit->offset_hi_ns : u;
  c.uncertainty_before_ns = c.uncertainty_after_ns = (hi - lo) / 2;
  // An op says: offset <= its start's device time minus its host issue (the GPU
  // starts after the host issued), and offset >= its end's device time minus its
  // host completion. Both in the line's frame: device - ref - slope * (host - host_ref).
  const auto frame = [&](std::int64_t device, std::int64_t host) {
    return static_cast<double>(device - fit->device_ref_ns) - fit->slope * static_cast<double>(host - fit->host_ref_ns);
  };
  double ops_lo = -INFINITY, ops_hi = INFINITY;
  for (const auto& op : ops) {
    if (op.device_start_ns < 0 || op.device_end_ns < op.device_start_ns) continue;
    ++c.ops_checked;
    const double upper = frame(op.device_start_ns, op.host_start_ns) + op.stamp_error_ns;
    const double lower = frame(op.device_end_ns, op.host_end_ns) - op.stamp_error_ns;
    ops_lo = std::max(ops_lo, lower);
    ops_hi = std::min(ops_hi, upper);
    const double out = std::max(lo - upper, lower - hi);  // > 0: no allowed offset fits this op
    if (out > 0) {
      ++c.violations;
      if (out > c.worst_violation_ns) {
        c.worst_violation_ns = out;
        c.worst_op = op.name;
      }
    }
  }
  if (c.ops_checked == 0) return c;
  if (c.violations == 0) {
    const double nlo = std::max(lo, ops_lo), nhi = std::min(hi, ops_hi);
    if (nlo <= nhi) {
      c.refined = nhi - nlo < hi - lo;
      fit->bounded = true;
      fit->offset_lo_ns = nlo;
      fit->offset_hi_ns = nhi;
      fit->shift_offset((nlo + nhi) / 2);
      c.uncertainty_after_ns = (nhi - nlo) / 2;
    }
  }
  // Slack with the final line (0 offset in its frame after the shift).
  c.min_start_slack_ns = INFINITY;
  c.min_end_slack_ns = INFINITY;
  for (const auto& op : ops) {
    if (op.device_start_ns < 0 || op.device_end_ns < op.device_start_ns) continue;
    c.min_start_slack_ns = std::min(c.min_start_slack_ns, frame(op.device_start_ns, op.host_start_ns));
    c.min_end_slack_ns = std::min(c.min_end_slack_ns, -frame(op.device_end_ns, op.host_end_ns));
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
