#pragma once
// The support() answer of a backend whose transfers join two distinct devices of its
// own, and the checks that open its run_batch: written once so every such backend
// refuses the same way.
#include <string>
#include <string_view>

#include "p2pscope/backend.hpp"

namespace p2pscope::bench {

// `check_device(d)` throws UsageError for a device the backend does not have (each
// backend words it with its own device list); src == dst is a result, not an error.
// `unit` names a device in the reason: "device", "rank".
template <class CheckDevice>
PairSupport distinct_pair(int src, int dst, CheckDevice&& check_device, std::string_view unit = "device") {
  check_device(src);
  check_device(dst);
  if (src == dst) return {false, "source and destination are the same " + std::string(unit)};
  return {};
}

// run_batch's first step: sets r.support from b.support(); false (return r as it is)
// for a pair the backend does not support, else runs the backend's own
// `check_prepared(src, dst, bytes)` (UsageError when prepare() did not cover them).
template <class CheckPrepared>
bool start_batch(const Backend& b, const BatchSpec& s, BatchResult& r, CheckPrepared&& check_prepared) {
  r.support = b.support(s.src, s.dst);
  if (!r.support.ok) return false;
  check_prepared(s.src, s.dst, s.bytes);
  return true;
}

}  // namespace p2pscope::bench
