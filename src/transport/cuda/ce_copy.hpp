#pragma once
// The ce backend's copies: cudaMemcpyPeerAsync driven by the copy engine of the
// source (push: the engine writes into the peer, nvbandwidth's write_ce), of the
// destination (pull: it reads from the peer, read_ce) or of both at once, and
// optionally cut into slices on several streams, so the driver may spread one copy
// over several copy engines. Variants: push|pull|both, each optionally @N streams
// ("pull@4", "@2" = push on 2 streams).
//
// A sliced copy forks from the lane stream (the stream its events time) through an
// event and joins back into it, so the lane's events time the whole copy.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "p2pscope/enum_names.hpp"
#include "transport/cuda/cuda_util.hpp"

namespace p2pscope::bench::cuda {

enum class CeEngine { source, destination, both };
// The variant's word for each ("" = push); names are "ce", "ce-pull", "ce-both".
inline constexpr std::array<EnumName<CeEngine>, 3> kCeEngineNames{{
    {CeEngine::source, "push", {"write"}, "the source's copy engine"},
    {CeEngine::destination, "pull", {"read"}, "the destination's"},
    {CeEngine::both, "both"},
}};

struct CeMode {
  CeEngine engine = CeEngine::source;
  int streams = 1;   // slices per copy; `both` uses at least 2 (one per engine)
  int host_pct = 0;  // multipath: this share of a large peer copy goes GPU -> pinned host -> GPU at once
};

// "", "push", "write", "pull", "read", "both", each optionally "@N" (1-16), then
// optionally "+host" (8 %: the best of 6-15 % on H200 NVLink4 + PCIe Gen5, uni and bidir) or
// "+hostP" (P % 1-50). UsageError otherwise.
CeMode parse_ce_variant(const std::string& variant);

// Copies smaller than this stay whole on the lane's own engine.
constexpr std::uint64_t kCeMinSliced = 1 << 20;
// Multipath: peer copies from this size on send a share through host memory, in chunks
// of kHostPathChunk (smaller copies would wait on the PCIe path's latency).
constexpr std::uint64_t kHostPathMin = 64ull << 20;
constexpr std::uint64_t kHostPathChunk = 8ull << 20;

class CeCopier {
 public:
  explicit CeCopier(CeMode m) : mode_(m) {}
  const CeMode& mode() const { return mode_; }
  std::string name() const;  // "ce", "ce-pull", "ce-both@4"
  // The device whose stream starts (and times) a copy src -> dst.
  int initiator(int src, int dst) const { return mode_.engine == CeEngine::destination ? dst : src; }
  std::string describe(int src, int dst) const;  // for the result's note
  // Bytes of an n-byte copy src -> dst that go through host memory (the tail of the
  // buffer, whole chunks); 0 without +host, for device-local and for small copies.
  std::uint64_t host_share(int src, int dst, std::uint64_t n) const;
  // Queues one copy of n bytes from `from` on GPU src to `to` on GPU dst on `lane`, a
  // stream of initiator(src, dst). src == dst: a device-local copy.
  void issue(void* to, int dst, const void* from, int src, std::uint64_t n, cudaStream_t lane);
  // Waits for every slice stream (the lanes are the caller's).
  void synchronize();
  // CUDA calls queued per copy (for the caller's limit on a held stream's queue): the
  // fork, then per slice a wait, the copy, its join and the lane's wait on it.
  std::size_t ops_per_copy() const { return sliced() ? 1 + 4 * static_cast<std::size_t>(slices()) : 1; }

 private:
  struct Slices {  // the slice streams of one (lane, src, dst), their fork and join events
    std::vector<int> dev;  // each slice's engine
    std::vector<Stream> streams;
    std::vector<Event> join;
    Event fork;
  };
  bool sliced() const { return slices() > 1; }
  int slices() const { return mode_.engine == CeEngine::both ? std::max(2, mode_.streams) : mode_.streams; }
  Slices& slices_for(cudaStream_t lane, int src, int dst);

  CeMode mode_;
  std::mutex mu_;
  std::map<std::tuple<cudaStream_t, int, int>, Slices> slices_;
};

}  // namespace p2pscope::bench::cuda
