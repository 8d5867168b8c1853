#include "transport/session/samples.hpp"

#include <algorithm>

namespace p2pscope::session {
namespace {

// splitmix64's finaliser: neighbouring indices get unrelated hashes, so the kept set is
// not every k-th chunk (which, at a window's period, would keep one position of each).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::size_t LatencySamples::cap_for(std::uint64_t channels) {
  const std::uint64_t per = kSessionSamples / std::max<std::uint64_t>(channels, 1);
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(per, kMinPerChannel, kMaxPerChannel));
}

bool LatencySamples::keeps(std::uint64_t index) const { return level_ == 0 || mix(index) >> (64 - level_) == 0; }

void LatencySamples::push(double value_ns) {
  const std::uint64_t i = seen_++;
  if (!keeps(i)) return;
  kept_.push_back({i, value_ns});
  while (kept_.size() > cap_ && level_ < 63) {  // full: keep about half, in their order
    ++level_;
    std::erase_if(kept_, [this](const Entry& e) { return !keeps(e.index); });
  }
}

void LatencySamples::append(const LatencySamples& o) {
  for (const Entry& e : o.kept_) push(e.value_ns);
}

void LatencySamples::truncate(std::uint64_t seen) {
  if (seen >= seen_) return;
  seen_ = seen;
  while (!kept_.empty() && kept_.back().index >= seen) kept_.pop_back();
}

std::vector<double> LatencySamples::values() const {
  std::vector<double> out;
  out.reserve(kept_.size());
  for (const Entry& e : kept_) out.push_back(e.value_ns);
  return out;
}

}  // namespace p2pscope::session
