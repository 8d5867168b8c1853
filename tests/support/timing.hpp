#pragma once
// Elapsed time in tests that bound how long something takes (a refusal, a timeout).
#include <chrono>

namespace p2pscope::test {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace p2pscope::test
