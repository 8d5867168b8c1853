// The GPU ping-pong of the latency pattern (cuda_base.hpp): a kernel on each GPU
// writes the message and a flag into the peer and spins on its own flag, launched
// once per slice of samples so that a stop request is seen between slices.
#include <algorithm>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/stats.hpp"
#include "transport/cuda/cuda_base.hpp"
#include "transport/cuda/kernels.hpp"

namespace p2pscope::bench::cuda {
namespace {
// Scratch: [0] verify's slot, words 8.. flags, 16.. samples; the last 32 bytes: the LL lines.
constexpr int kMaxLatencySamples = static_cast<int>(kScratchBytes / 8) - 24;
constexpr std::size_t kLlLinesOffset = kScratchBytes - 32;  // [0]: the ping's line, [1]: the pong's
constexpr int kLlPayloadBytes = 8;                           // one line carries 8 bytes
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
  if (msg <= kLlPayloadBytes && !stopped()) {
    // The LL ping-pong is the result; the fenced one is kept beside it in the note.
    const std::vector<double> fenced = std::move(r.elapsed_ns);
    r.elapsed_ns.clear();
    auto* la = static_cast<unsigned char*>(a.scratch.get()) + kLlLinesOffset;
    auto* lb = same ? la : static_cast<unsigned char*>(b.scratch.get()) + kLlLinesOffset;
    unsigned char* ping_line = la;       // the ping waits here, the pong writes here
    unsigned char* pong_line = lb + 16;  // and the other way round
    { DeviceGuard g(s.src); P2P_CUDA(cudaMemsetAsync(la, 0, 32, a.s0.get()), s.src); P2P_CUDA(cudaStreamSynchronize(a.s0.get()), s.src); }
    { DeviceGuard g(s.dst); P2P_CUDA(cudaMemsetAsync(lb, 0, 32, pong_stream), s.dst); P2P_CUDA(cudaStreamSynchronize(pong_stream), s.dst); }
    { DeviceGuard g(s.dst); launch_ll_pong(pong_line, ping_line, static_cast<long long>(samples) * rounds, pong_stream, s.dst); }
    { DeviceGuard g(s.src); launch_ll_ping(ping_line, pong_line, a.send.get(), samples, rounds, out, a.s0.get(), s.src); }
    std::vector<unsigned long long> ll(static_cast<std::size_t>(samples));
    { DeviceGuard g(s.src);
      P2P_CUDA(cudaStreamSynchronize(a.s0.get()), s.src);
      P2P_CUDA(cudaMemcpy(ll.data(), out, ll.size() * sizeof(ll[0]), cudaMemcpyDeviceToHost), s.src); }
    { DeviceGuard g(s.dst); P2P_CUDA(cudaStreamSynchronize(pong_stream), s.dst); }
    for (auto v : ll)
      if (v == ~0ull)
        throw Error(fmt::format("GPU LL ping-pong {} <-> {} timed out: the peer's line never arrived", s.src, s.dst));
    for (std::size_t i = static_cast<std::size_t>(s.warmup); i < ll.size(); ++i)
      r.elapsed_ns.push_back(static_cast<double>(ll[i]) / rounds / 2.0);
    r.note = fmt::format(
        "GPU LL ping-pong (NCCL's low-latency line): one thread on each GPU writes the {} B message and its flags "
        "with one 16-byte store into the peer's memory, no fence; the peer spins on that line and answers with the "
        "data it got; {} round trips per sample timed by %globaltimer; one-way = rtt/2. Beside it, the fenced "
        "ping-pong ({} block(s) x {} threads: payload stores, a system fence, then a flag store: what a sender "
        "pays that must order data before a separate flag): one-way p50 {:.0f} ns, p99 {:.0f} ns{}",
        msg, rounds, ping.blocks, ping.threads, median(fenced), percentile(fenced, 0.99),
        same ? " (one GPU: no link crossed)" : "");
    return;
  }
  r.note = fmt::format("GPU ping-pong: a kernel of {} block(s) x {} threads on each GPU writes {} B (16-byte stores) + a "
                       "flag into the peer and spins on its own flag; {} round trips per sample timed by %globaltimer; "
                       "one-way = rtt/2{}", ping.blocks, ping.threads, msg, rounds,
                       same ? " (one GPU: two kernels on two streams, no link crossed, GPU-scope fences)" : "");
}

}  // namespace p2pscope::bench::cuda
