#include "bench/setup_pacer.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "p2pscope/clock.hpp"

namespace p2pscope::bench {

SetupPacer::SetupPacer(const PrepareSpec& spec, std::uint64_t total_bytes, std::string what)
    : spec_(spec), total_(total_bytes), what_(std::move(what)), t0_(monotonic_ns()) {
  // A threshold of 0 says it before the first byte (scripts and tests wait for the line).
  if (spec_.announce && spec_.announce_after_s <= 0 && total_ > 0) {
    announced_ = true;
    spec_.announce("setting up " + what_ + "...");
  }
}

bool SetupPacer::stopped() const { return spec_.stop != nullptr && spec_.stop->load(std::memory_order_relaxed); }

// After each slice: the time so far, scaled to every byte, against the threshold. The
// first slice pays the page faults like every later one, so it predicts the rest.
void SetupPacer::maybe_announce() {
  if (announced_ || !spec_.announce || filled_ == 0) return;
  const double elapsed_s = static_cast<double>(monotonic_ns() - t0_) * 1e-9;
  const double expected_s = elapsed_s * static_cast<double>(total_) / static_cast<double>(filled_);
  if (expected_s <= spec_.announce_after_s) return;
  announced_ = true;
  spec_.announce(fmt::format("setting up {}: about {:.0f} s, Ctrl-C stops it", what_, std::max(1.0, expected_s)));
}

bool SetupPacer::run(std::uint64_t bytes, const std::function<void(std::uint64_t, std::uint64_t)>& fill) {
  for (std::uint64_t off = 0; off < bytes; off += kSetupSliceBytes) {
    if (stopped()) return false;
    const std::uint64_t n = std::min(kSetupSliceBytes, bytes - off);
    fill(off, n);
    filled_ += n;
    maybe_announce();
  }
  return !stopped();
}

void SetupPacer::done() {
  if (!announced_ || !spec_.announce) return;
  spec_.announce(fmt::format("{} set up in {:.1f} s", what_, static_cast<double>(monotonic_ns() - t0_) * 1e-9));
}

}  // namespace p2pscope::bench
