#pragma once
// trace.json in Chrome trace event format (Perfetto, chrome://tracing): one complete
// ("X") event per op on the host track, and on the source GPU's track where the op
// carries GPU global-timer stamps, mapped to host time through the clock map.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "p2pscope/profile.hpp"
#include "profile/clock_map.hpp"
#include "profile/execution_log.hpp"

namespace p2pscope::profile {

// ts/dur in microseconds relative to the first op's host start (kept in otherData).
// An op's GPU event goes on the lane of clock_device(src, dst), the GPU whose timer
// stamped it. GPUs in `unaligned` (no clock sync: reason) get a lane marked
// unaligned, its first stamp put at the first op's host start: order and durations
// hold there, absolute placement does not. Rows timed `single` carry their event
// stamps' error (`single_stamp_error_ns`) in args: their GPU events may cross the host
// event by that much.
nlohmann::json make_trace(const Plan& plan, const std::vector<LogRow>& rows, const std::map<int, ClockMap>& device_to_host,
                          const std::function<int(int, int)>& clock_device, const std::map<int, std::string>& unaligned,
                          double single_stamp_error_ns = 0);
void write_trace(const std::string& path, const nlohmann::json& trace);

}  // namespace p2pscope::profile
