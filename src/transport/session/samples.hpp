#pragma once
// Per-channel timing samples (chunk latencies, pings) in bounded memory. A session may
// ask for 100000 rounds of 4M chunks: keeping every sample grew a server from 8 to 172 MB
// in 40 rounds outside --max-memory (issue 32 item 10). The store keeps at most `cap`
// samples, a uniform subset of all it was given, in the order they came.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace p2pscope::session {

// Threshold sampling: sample i is kept while the top `level_` bits of a hash of i are
// zero; when the store is full the level rises and about half the kept samples go. So
// the kept set is a function of the indices alone: truncate(n) gives what the store
// would hold had only the first n samples come (a failed round's samples undone).
class LatencySamples {
 public:
  // The stated cap of one session: kSessionSamples over its channels, each between
  // kMinPerChannel and kMaxPerChannel (16 bytes a sample).
  static constexpr std::size_t kSessionSamples = std::size_t{1} << 18;
  static constexpr std::size_t kMinPerChannel = 64, kMaxPerChannel = std::size_t{1} << 16;
  static constexpr std::size_t kBytesPerSample = 16;
  static std::size_t cap_for(std::uint64_t channels);

  explicit LatencySamples(std::size_t cap = kMaxPerChannel) : cap_(cap < 2 ? 2 : cap) {}
  void push(double value_ns);
  void append(const LatencySamples& o);  // o's kept values, as new samples
  void truncate(std::uint64_t seen);     // forget samples from index `seen` on
  std::uint64_t seen() const { return seen_; }
  std::size_t size() const { return kept_.size(); }
  std::size_t cap() const { return cap_; }
  std::vector<double> values() const;

 private:
  struct Entry {
    std::uint64_t index;
    double value_ns;
  };
  bool keeps(std::uint64_t index) const;
  std::size_t cap_;
  unsigned level_ = 0;
  std::uint64_t seen_ = 0;
  std::vector<Entry> kept_;
};

}  // namespace p2pscope::session
