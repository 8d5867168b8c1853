// The GPU ping-pong of the latency pattern (cuda_base.hpp): a kernel on each GPU
// writes the message and a flag into the peer and spins on its own flag, launched
// once per slice of samples so that a stop request is seen between slices.
#include <algorithm>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "transport/cuda/cuda_base.hpp"
#include "transport/cuda/kernels.hpp"

namespace p2pscope::bench::cuda {
namespace {
constexpr int kMaxLatencySamples = static_cast<int>(kScratchBytes / 8) - 16;
}

void CudaBase::run_latency(const BatchSpec& s, BatchResult& r) {
  const int rounds = s.bytes <= 4096 ? 1000 : 50;
  const int samples = s.warmup + s.iters;
  if (samples > kMaxLatencySamples)
    throw UsageError(fmt::format("latency: at most {} warmup + iterations", kMaxLatencySamples));
  const int msg = static_cast<int>(std::min<std::uint64_t>(s.bytes, 1u << 20));
  auto& a = dev_[static_cast<std::size_t>(s.src)];
  auto& b = dev_[static_cast<std::size_t>(s.dst)];
  auto* fa = static_cast<unsigned long long*>(a.scratch.get()) + 8;  // [0]: verify's slot
  // One GPU (src == dst): the two kernels run on two streams and use two flag words.
  const bool same = s.src == s.dst;
  auto* fb = same ? fa + 1 : static_cast<unsigned long long*>(b.scratch.get()) + 8;
  auto* out = fa + 8;
  cudaStream_t pong_stream = same ? b.s1.get() : b.s0.get();
  // Each sender counts its blocks' arrivals in a word of its own GPU, cleared with the flags.
  PingShape ping = ping_shape_for(msg, sms_[static_cast<std::size_t>(s.src)]);
  PingShape pong = ping_shape_for(msg, sms_[static_cast<std::size_t>(s.dst)]);
  ping.arrivals = reinterpret_cast<unsigned int*>(fa + 2);
  pong.arrivals = reinterpret_cast<unsigned int*>(same ? fa + 3 : fb + 2);
  ping.system_scope = pong.system_scope = !same;

  // One ping and pong launch per slice of samples, about kSliceNs long (sized from the
  // samples so far; the first slice is the warm-up and one sample), so a stop request
  // waits for one slice at most. A slice after the first starts with one more untimed
  // sample: the kernels' start, as the warm-up absorbs it in the first.
  const auto run_slice = [&](int lead, int n) {
    const int k = lead + n;
    // Flags cleared on the kernels' own streams and waited for: a cudaMemset on the
    // legacy stream is not ordered before work on non-blocking streams.
    { DeviceGuard g(s.src); P2P_CUDA(cudaMemsetAsync(fa, 0, 64, a.s0.get()), s.src); P2P_CUDA(cudaStreamSynchronize(a.s0.get()), s.src); }
    { DeviceGuard g(s.dst); P2P_CUDA(cudaMemsetAsync(fb, 0, same ? 8 : 64, pong_stream), s.dst); P2P_CUDA(cudaStreamSynchronize(pong_stream), s.dst); }
    { DeviceGuard g(s.dst);
      launch_pong(fb, fa, static_cast<unsigned char*>(a.recv.get()), static_cast<const unsigned char*>(b.send.get()), msg,
                  static_cast<long long>(k) * rounds, pong, pong_stream, s.dst); }
    { DeviceGuard g(s.src);
      launch_ping(fa, fb, static_cast<unsigned char*>(b.recv.get()), static_cast<const unsigned char*>(a.send.get()), msg,
                  k, rounds, out, ping, a.s0.get(), s.src); }
    std::vector<unsigned long long> ns(static_cast<std::size_t>(k));
    { DeviceGuard g(s.src);
      P2P_CUDA(cudaStreamSynchronize(a.s0.get()), s.src);
      P2P_CUDA(cudaMemcpy(ns.data(), out, ns.size() * sizeof(ns[0]), cudaMemcpyDeviceToHost), s.src); }
    { DeviceGuard g(s.dst); P2P_CUDA(cudaStreamSynchronize(pong_stream), s.dst); }
    for (auto v : ns)
      if (v == ~0ull)
        throw Error(fmt::format("GPU ping-pong {} <-> {} timed out: the peer's flag writes never arrived", s.src, s.dst));
    ns.erase(ns.begin(), ns.begin() + lead);
    return ns;
  };
  const auto stopped = [&s] { return s.stop != nullptr && s.stop->load(std::memory_order_relaxed); };
  std::vector<unsigned long long> ns;  // per sample, warm-up included
  double per_sample_ns = 0;
  while (static_cast<int>(ns.size()) < samples && !stopped()) {
    const int taken = static_cast<int>(ns.size()), lead = taken == 0 ? 0 : 1;
    const double fit = per_sample_ns > 0 ? kSliceNs / per_sample_ns : s.warmup + 1;
    const int n = std::clamp(static_cast<int>(std::min<double>(fit, samples)), 1, samples - taken);
    const auto got = run_slice(lead, n);
    double sum = 0;
    for (auto v : got) sum += static_cast<double>(v);
    per_sample_ns = sum / static_cast<double>(got.size());
    ns.insert(ns.end(), got.begin(), got.end());
  }
  for (std::size_t i = static_cast<std::size_t>(s.warmup); i < ns.size(); ++i)
    r.elapsed_ns.push_back(static_cast<double>(ns[i]) / rounds / 2.0);
  r.note = fmt::format("GPU ping-pong: a kernel of {} block(s) x {} threads on each GPU writes {} B (16-byte stores) + a "
                       "flag into the peer and spins on its own flag; {} round trips per sample timed by %globaltimer; "
                       "one-way = rtt/2{}", ping.blocks, ping.threads, msg, rounds,
                       same ? " (one GPU: two kernels on two streams, no link crossed, GPU-scope fences)" : "");
}

}  // namespace p2pscope::bench::cuda
