#pragma once
// The causality check of a campaign's timeline: a GPU interval, mapped onto the host
// clock, must lie inside its host issue..completion interval. Checked for every op
// that carries GPU timer stamps; a violation beyond the clock sync's bounds means the
// tool's clock mapping or stamps are wrong, and is reported as such. Where every op
// agrees, the ops also narrow the set of allowed lines (an op's start bounds them from
// one side, its end from the other).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profile/drift.hpp"

namespace p2pscope::profile {

struct OpSpan {  // one logged op: host CLOCK_MONOTONIC bracket and GPU timer stamps
  std::int64_t host_start_ns = 0, host_end_ns = 0;
  std::int64_t device_start_ns = -1, device_end_ns = -1;
  double stamp_error_ns = 0;  // how far the stamps may be off the GPU timer
  std::string name;           // for the report: the op's event name
};

struct CausalityCheck {
  std::size_t ops_checked = 0;
  std::size_t violations = 0;       // ops outside their host interval for every offset the sync allows
  double worst_violation_ns = 0;    // by how much the worst one sticks out
  std::string worst_op;
  bool refined = false;             // the ops narrowed the offset interval
  double uncertainty_before_ns = 0, uncertainty_after_ns = 0;
  // Slack of the ops inside their host interval, with the final offset: the least
  // time between host issue and GPU start, and between GPU end and host completion.
  double min_start_slack_ns = 0, min_end_slack_ns = 0;
};

// Checks `ops` against `fit` (a bounded or unbounded sync fit of the stamping GPU)
// and, when no op violates, narrows `fit`'s allowed lines by the ops. Uncertainties
// are over the ops' host span.
CausalityCheck check_causality(const std::vector<OpSpan>& ops, DriftFit* fit);

nlohmann::json to_json(const CausalityCheck& c);

}  // namespace p2pscope::profile
