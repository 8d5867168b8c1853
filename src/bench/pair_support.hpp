#pragma once
// The support() answer of a backend whose transfers join two distinct devices of its
// own: written once so every such backend refuses the same way.
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

}  // namespace p2pscope::bench
