// The ce backend's copies (ce_copy.hpp).
#include "transport/cuda/ce_copy.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "bench/copy_slices.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::bench::cuda {

CeMode parse_ce_variant(const std::string& text) {
  CeMode m;
  std::string variant = text;
  if (const auto plus = text.find('+'); plus != std::string::npos) {
    const std::string path = text.substr(plus + 1);
    variant = text.substr(0, plus);
    if (path.rfind("host", 0) != 0)
      throw UsageError("backend ce: unknown path '+" + path + "': use +host (8 % through pinned host memory) or +hostP");
    m.host_pct = path == "host" ? 8 : static_cast<int>(parse_int(path.substr(4), "the share after +host"));
    if (m.host_pct < 1 || m.host_pct > 50) throw UsageError("ce variant: the +host share must be 1-50 (percent)");
  }
  const auto at = variant.find('@');
  const std::string v = variant.substr(0, at);
  const auto engine = v.empty() ? std::optional<CeEngine>(CeEngine::source) : find_enum(kCeEngineNames, v);
  if (!engine)
    throw UsageError("backend ce: unknown variant '" + variant + "': use " + enum_choices(kCeEngineNames) +
                     ", optionally @N (N copy streams, 1-16) and +host[P] (P % through pinned host memory at once)");
  m.engine = *engine;
  if (at != std::string::npos) {
    const long long n = parse_int(variant.substr(at + 1), "the number after @");
    if (n < 1 || n > 16) throw UsageError("ce variant: the number of copy streams must be 1-16");
    m.streams = static_cast<int>(n);
  }
  return m;
}

std::string CeCopier::name() const {
  std::string n = mode_.engine == CeEngine::source ? "ce" : "ce-" + enum_name(kCeEngineNames, mode_.engine);
  if (mode_.streams > 1) n += fmt::format("@{}", mode_.streams);
  if (mode_.host_pct > 0) n += fmt::format("+host{}", mode_.host_pct);
  return n;
}

std::uint64_t CeCopier::host_share(int src, int dst, std::uint64_t n) const {
  if (mode_.host_pct == 0 || src == dst || n < kHostPathMin) return 0;
  return n * static_cast<std::uint64_t>(mode_.host_pct) / 100 / kHostPathChunk * kHostPathChunk;
}

std::string CeCopier::describe(int src, int dst) const {
  if (src == dst) return "cudaMemcpyAsync device-local" + (sliced() ? fmt::format(", {} slices", slices()) : "");
  const char* engine = mode_.engine == CeEngine::destination ? "the destination's" :
                       mode_.engine == CeEngine::both        ? "both GPUs'" : "the source's";
  std::string d = fmt::format("cudaMemcpyPeerAsync by {} copy engine", engine);
  if (sliced())
    d += fmt::format(" ({} and more: {} slices on {} streams{})", format_size(kCeMinSliced), slices(), slices(),
                     mode_.engine == CeEngine::both ? ", alternating source and destination" : "");
  if (mode_.host_pct > 0)
    d += fmt::format("; at the same time {}% of copies of {} and more through pinned host memory (GPU {} -> host -> "
                     "GPU {}, {} chunks): two paths, not one link",
                     mode_.host_pct, format_size(kHostPathMin), src, dst, format_size(kHostPathChunk));
  return d;
}

void CeCopier::issue(void* to, int dst, const void* from, int src, std::uint64_t n, cudaStream_t lane) {
  const auto one = [&](int engine, std::uint64_t off, std::uint64_t len, cudaStream_t st) {
    DeviceGuard g(engine);
    auto* t = static_cast<unsigned char*>(to) + off;
    const auto* f = static_cast<const unsigned char*>(from) + off;
    if (src == dst) P2P_CUDA(cudaMemcpyAsync(t, f, len, cudaMemcpyDeviceToDevice, st), engine);
    else P2P_CUDA(cudaMemcpyPeerAsync(t, dst, f, src, len, st), engine);
  };
  const int lane_dev = initiator(src, dst);
  // Unsliced: straight onto the lane, no fork or join (plan_copy_slices would give the
  // same one piece, but through a slice stream).
  if (!sliced() || n < kCeMinSliced) {
    one(lane_dev, 0, n, lane);
    return;
  }
  Slices& s = slices_for(lane, src, dst);
  { DeviceGuard g(lane_dev); P2P_CUDA(cudaEventRecord(s.fork.get(), lane), lane_dev); }
  for (const CopySlice& piece : plan_copy_slices(n, slices(), kCeMinSliced)) {
    const auto k = static_cast<std::size_t>(piece.slot);
    const int e = s.dev[k];
    cudaStream_t st = s.streams[k].get();
    { DeviceGuard g(e); P2P_CUDA(cudaStreamWaitEvent(st, s.fork.get(), 0), e); }
    one(e, piece.offset, piece.bytes, st);
    { DeviceGuard g(e); P2P_CUDA(cudaEventRecord(s.join[k].get(), st), e); }
    DeviceGuard g(lane_dev);
    P2P_CUDA(cudaStreamWaitEvent(lane, s.join[k].get(), 0), lane_dev);
  }
}

CeCopier::Slices& CeCopier::slices_for(cudaStream_t lane, int src, int dst) {
  std::lock_guard<std::mutex> lock(mu_);
  Slices& s = slices_[{lane, src, dst}];
  if (s.streams.empty()) {
    s.fork = make_event(initiator(src, dst));
    for (int k = 0; k < slices(); ++k) {
      const int e = mode_.engine == CeEngine::both ? (k % 2 == 0 ? src : dst) : initiator(src, dst);
      s.dev.push_back(e);
      s.streams.push_back(make_stream(e));
      s.join.push_back(make_event(e));
    }
  }
  return s;
}

void CeCopier::synchronize() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, s] : slices_)
    for (std::size_t k = 0; k < s.streams.size(); ++k) {
      DeviceGuard g(s.dev[k]);
      P2P_CUDA(cudaStreamSynchronize(s.streams[k].get()), s.dev[k]);
    }
}

}  // namespace p2pscope::bench::cuda
