#pragma once
// Buffer set-up in slices (PrepareSpec): fills of host memory run 16 MiB at a time with
// the stop flag read between slices, so Ctrl-C during the set-up of 1 GiB buffers ends
// it within a slice instead of after the whole fill (20-44 s for four 1 GiB buffers).
// 16 MiB: on a 2-core VM at load 6, first-touching 64 MiB took up to 1 s (page faults),
// 16 MiB a quarter of that; a slice costs one flag read and one clock read. It also says what is set up, once, when
// the whole is expected to take long, and how long it took.
// One pacer per prepare call; run() may be called from any one thread at a time.
#include <cstdint>
#include <functional>
#include <string>

#include "p2pscope/backend.hpp"

namespace p2pscope::bench {

inline constexpr std::uint64_t kSetupSliceBytes = 16ull << 20;

class SetupPacer {
 public:
  // `total_bytes`: every byte the set-up will fill (for the estimate); `what`: the buffers,
  // e.g. "2 x 1 GiB host buffers (2 GiB on NUMA node 0)".
  SetupPacer(const PrepareSpec& spec, std::uint64_t total_bytes, std::string what);
  // Calls fill(offset, n) over [0, bytes) slice by slice. False once the stop flag is up
  // (before the first slice too), with the rest left unfilled.
  bool run(std::uint64_t bytes, const std::function<void(std::uint64_t offset, std::uint64_t n)>& fill);
  bool stopped() const;
  // Says how long the set-up took, if it was announced. Call once, at the end.
  void done();

 private:
  void maybe_announce();
  const PrepareSpec& spec_;
  std::uint64_t total_, filled_ = 0;
  std::string what_;
  std::int64_t t0_;
  bool announced_ = false;
};

}  // namespace p2pscope::bench
