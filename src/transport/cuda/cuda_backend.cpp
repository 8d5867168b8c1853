// The CUDA backends: ce (copy engine, cudaMemcpyPeerAsync), sm (16-byte copy kernels,
// push = source SMs write remote memory, pull = destination SMs read it) and staged
// (through pinned host memory; device N, one past the GPUs, is host pinned memory, so
// N:0 is host->GPU 0). Timing: a spin kernel holds every stream until all timed work
// is queued, then a host-mapped flag releases it; CUDA events around each iteration.
#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "bench/pattern.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/cuda_util.hpp"
#include "transport/cuda/kernels.hpp"

namespace p2pscope::bench {
namespace {
using namespace cuda;

constexpr std::uint64_t kStageChunk = 256ull << 20;

struct Lane {  // one stream's share of an iteration; all lanes' streams on one device
  cudaStream_t stream;
  std::function<void()> issue;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::string kind, const BackendOptions& o) : kind_(std::move(kind)), opts_(o) {
    const cudaError_t e = cudaGetDeviceCount(&gpus_);
    if (e != cudaSuccess || gpus_ == 0) {
      cudaGetLastError();
      throw Error(fmt::format("backend {}: no usable GPU ({})", kind_, e == cudaSuccess ? "the driver sees none" : cudaGetErrorString(e)));
    }
    pull_ = o.variant.rfind("pull", 0) == 0 || o.variant.rfind("read", 0) == 0;
    if (!o.variant.empty() && !pull_ && o.variant.rfind("push", 0) != 0 && o.variant.rfind("write", 0) != 0)
      throw UsageError("backend " + kind_ + ": unknown variant '" + o.variant + "': use push or pull (push@N: N blocks per SM)");
    if (auto at = o.variant.find('@'); at != std::string::npos)
      blocks_per_sm_ = static_cast<int>(parse_int(o.variant.substr(at + 1), "blocks per SM"));
    dev_.resize(static_cast<std::size_t>(gpus_));
    for (int d = 0; d < gpus_; ++d) {
      cudaDeviceProp p{};
      P2P_CUDA(cudaGetDeviceProperties(&p, d), d);
      names_.push_back(p.name);
      sms_.push_back(p.multiProcessorCount);
    }
    flag_ = pinned_alloc(64);
    release_ = static_cast<volatile int*>(flag_.get());
    *release_ = 0;
  }

  std::string name() const override { return kind_; }
  int device_count() const override { return kind_ == "staged" ? gpus_ + 1 : gpus_; }
  std::string device_name(int d) const override {
    check_device(d);
    return is_host(d) ? "host pinned memory" : fmt::format("GPU {} ({})", d, names_[static_cast<std::size_t>(d)]);
  }
  PairSupport support(int src, int dst) const override {
    check_device(src);
    check_device(dst);
    if (src == dst) return {false, "source and destination are the same device"};
    if (kind_ == "staged") return {};
    int a = 0, b = 0;
    P2P_CUDA(cudaDeviceCanAccessPeer(&a, src, dst), src);
    P2P_CUDA(cudaDeviceCanAccessPeer(&b, dst, src), dst);
    if (!a || !b) return {false, "no peer access"};
    return {};
  }

  void prepare(const std::vector<int>& devices, std::uint64_t max_bytes) override {
    for (int d : devices) {
      check_device(d);
      if (is_host(d)) continue;
      DeviceGuard g(d);
      std::size_t free_b = 0, total_b = 0;
      P2P_CUDA(cudaMemGetInfo(&free_b, &total_b), d);
      const std::uint64_t need = 2 * max_bytes + (64ull << 20);
      if (need > free_b)
        throw UsageError(fmt::format("{} per buffer needs {} on GPU {} (send + receive + 64 MiB) but only {} of {} is free; "
                                     "choose smaller --sizes", format_size(max_bytes), format_size(need), d,
                                     format_size(free_b), format_size(total_b)));
    }
    for (int a : devices)
      for (int b : devices)
        if (a != b && !is_host(a) && !is_host(b)) {
          int ok = 0;
          P2P_CUDA(cudaDeviceCanAccessPeer(&ok, a, b), a);
          if (!ok) continue;
          DeviceGuard g(a);
          const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
          if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
          else P2P_CUDA(e, a);
        }
    for (int d : devices) {
      if (is_host(d)) {
        host_send_ = pinned_alloc(max_bytes);
        host_recv_ = pinned_alloc(max_bytes);
        auto* w = static_cast<unsigned char*>(host_send_.get());
        for (std::uint64_t i = 0; i < max_bytes / 8; ++i) reinterpret_cast<std::uint64_t*>(w)[i] = pattern_word(d, i);
        for (std::uint64_t i = max_bytes / 8 * 8; i < max_bytes; ++i) w[i] = pattern_byte(d, i);
        std::memset(host_recv_.get(), 0xA5, max_bytes);
        continue;
      }
      auto& x = dev_[static_cast<std::size_t>(d)];
      DeviceGuard g(d);
      x.send = device_alloc(d, max_bytes);
      x.recv = device_alloc(d, max_bytes);
      x.scratch = device_alloc(d, 1 << 16);
      x.s0 = make_stream(d);
      x.s1 = make_stream(d);
      launch_fill(x.send.get(), max_bytes, d, x.s0.get(), d);
      P2P_CUDA(cudaMemsetAsync(x.recv.get(), 0xA5, max_bytes, x.s0.get()), d);
      P2P_CUDA(cudaStreamSynchronize(x.s0.get()), d);
    }
    if (kind_ == "staged") {
      bounce_ = pinned_alloc(2 * std::min(max_bytes, kStageChunk));
    }
    max_bytes_ = max_bytes;
  }

  BatchResult run_batch(const BatchSpec& s) override {
    BatchResult r;
    r.support = support(s.src, s.dst);
    if (!r.support.ok) return r;
    check_prepared(s.src, s.dst, s.bytes);
    if (s.pattern == Pattern::latency) {
      if (kind_ == "staged") {
        r.support = {false, "latency ping-pong needs peer access (use ce or sm)"};
        return r;
      }
      run_latency(s, r);
      return r;
    }
    const int ev_dev = initiator(s.src, s.dst);
    std::vector<Lane> lanes{{stream0(ev_dev), [this, &s] { issue(s.src, s.dst, s.bytes, stream0(initiator(s.src, s.dst))); }}};
    if (s.pattern == Pattern::bidirectional) {
      // The reverse direction runs on a second stream of the same device, so all
      // events share one clock and the total is exact.
      cudaStream_t rs = stream1(ev_dev);
      lanes.push_back({rs, [this, &s, rs] { issue(s.dst, s.src, s.bytes, rs, /*force_pull_side=*/true); }});
    }
    auto t = run_timed(ev_dev, lanes, s.warmup, s.iters);
    r.elapsed_ns = std::move(t[0]);
    if (s.pattern == Pattern::bidirectional) {
      r.reverse_elapsed_ns = std::move(t[1]);
      r.total_elapsed_ns = std::move(t[2]);
    }
    r.note = note(s.src, s.dst) + (hold_ ? ", blocking start" : ", no blocking start (too many queued ops)");
    return r;
  }

  OpTiming run_blocking(int src, int dst, std::uint64_t bytes) override {
    const auto sup = support(src, dst);
    if (!sup.ok) throw UsageError(fmt::format("backend {} cannot copy {} -> {}: {}", kind_, src, dst, sup.reason));
    check_prepared(src, dst, bytes);
    const int d = initiator(src, dst);
    DeviceGuard g(d);
    cudaStream_t st = stream0(d);
    auto* ts = static_cast<unsigned long long*>(flag_.get()) + 2;
    Event a = make_event(d), b = make_event(d);
    OpTiming t;
    t.host_start_ns = monotonic_ns();
    launch_globaltimer(ts, st, d);
    P2P_CUDA(cudaEventRecord(a.get(), st), d);
    issue(src, dst, bytes, st);
    P2P_CUDA(cudaEventRecord(b.get(), st), d);
    launch_globaltimer(ts + 1, st, d);
    P2P_CUDA(cudaStreamSynchronize(st), d);
    t.host_end_ns = monotonic_ns();
    t.device_duration_ns = elapsed_ms(a, b) * 1e6;
    t.device_start_ns = static_cast<std::int64_t>(ts[0]);
    t.device_end_ns = static_cast<std::int64_t>(ts[1]);
    return t;
  }

  std::int64_t verify(int src, int dst, std::uint64_t bytes) override {
    check_prepared(src, dst, bytes);
    if (is_host(dst)) {
      const auto* p = static_cast<const unsigned char*>(host_recv_.get());
      for (std::uint64_t i = 0; i < bytes; ++i)
        if (p[i] != pattern_byte(src, i)) return static_cast<std::int64_t>(i);
      return -1;
    }
    auto& x = dev_[static_cast<std::size_t>(dst)];
    DeviceGuard g(dst);
    long long init = LLONG_MAX, out = 0;
    auto* bad = static_cast<long long*>(x.scratch.get());
    P2P_CUDA(cudaMemcpy(bad, &init, sizeof init, cudaMemcpyHostToDevice), dst);
    launch_verify(x.recv.get(), bytes, src, bad, x.s0.get(), dst);
    P2P_CUDA(cudaStreamSynchronize(x.s0.get()), dst);
    P2P_CUDA(cudaMemcpy(&out, bad, sizeof out, cudaMemcpyDeviceToHost), dst);
    return out == LLONG_MAX ? -1 : out;
  }

  TimerReading read_device_timer(int device) override {
    check_device(device);
    if (is_host(device)) return {};
    DeviceGuard g(device);
    auto* ts = static_cast<unsigned long long*>(flag_.get()) + 4;
    cudaStream_t st = stream0(device);
    TimerReading r;
    r.host_before_ns = monotonic_ns();
    launch_globaltimer(ts, st, device);
    P2P_CUDA(cudaStreamSynchronize(st), device);
    r.host_after_ns = monotonic_ns();
    r.device_ns = static_cast<std::int64_t>(ts[0]);
    return r;
  }

  void busy_compute(int device, double seconds) override {
    check_device(device);
    if (is_host(device)) return;
    DeviceGuard g(device);
    cudaStream_t st = stream0(device);
    float* sink = static_cast<float*>(dev_[static_cast<std::size_t>(device)].scratch.get());
    const auto end = monotonic_ns() + static_cast<std::int64_t>(seconds * 1e9);
    while (monotonic_ns() < end) {
      for (int i = 0; i < 20; ++i) launch_fma(sink, sms_[static_cast<std::size_t>(device)] * 8, 4, st, device);
      P2P_CUDA(cudaStreamSynchronize(st), device);
    }
  }

 private:
  struct Dev {
    DeviceBuffer send, recv, scratch;
    Stream s0, s1;
  };

  bool is_host(int d) const { return d == gpus_; }
  void check_device(int d) const {
    if (d < 0 || d >= device_count()) {
      std::string list;
      for (int i = 0; i < device_count(); ++i) list += (i ? ", " : "") + std::to_string(i) + (is_host(i) ? " (host)" : "");
      throw UsageError(fmt::format("GPU {} does not exist: backend {} has devices {}", d, kind_, list));
    }
  }
  void check_prepared(int src, int dst, std::uint64_t bytes) const {
    for (int d : {src, dst})
      if (is_host(d) ? !host_send_.get() : !dev_[static_cast<std::size_t>(d)].send.get())
        throw UsageError(fmt::format("device {} was not prepared: call prepare() with it first", d));
    if (bytes > max_bytes_)
      throw UsageError(fmt::format("{} is more than the {} prepared", format_size(bytes), format_size(max_bytes_)));
  }
  // The device whose stream issues (and times) a transfer.
  int initiator(int src, int dst) const {
    if (is_host(src)) return dst;
    if (is_host(dst)) return src;
    if (kind_ == "ce") return src;  // cudaMemcpyPeerAsync from the source's stream (write)
    return pull_ ? dst : src;
  }
  cudaStream_t stream0(int d) const { return dev_[static_cast<std::size_t>(d)].s0.get(); }
  cudaStream_t stream1(int d) const { return dev_[static_cast<std::size_t>(d)].s1.get(); }
  void* send_ptr(int d) const { return is_host(d) ? host_send_.get() : dev_[static_cast<std::size_t>(d)].send.get(); }
  void* recv_ptr(int d) const { return is_host(d) ? host_recv_.get() : dev_[static_cast<std::size_t>(d)].recv.get(); }
  int sm_blocks(int d) const { return sms_[static_cast<std::size_t>(d)] * blocks_per_sm_; }

  std::string note(int src, int dst) const {
    if (kind_ == "ce") return "cudaMemcpyPeerAsync on the source's stream";
    if (kind_ == "sm")
      return fmt::format("{} kernel on GPU {}, {} blocks x 512 threads, 16-byte accesses", pull_ ? "pull" : "push",
                         initiator(src, dst), sm_blocks(initiator(src, dst)));
    return "staged through pinned host memory";
  }

  // Queues one transfer src->dst on `st` (a stream of the device that issues it).
  // reverse: the second lane of a bidirectional run, issued from the same device.
  void issue(int src, int dst, std::uint64_t n, cudaStream_t st, bool reverse = false) {
    const int d = reverse ? initiator(dst, src) : initiator(src, dst);
    DeviceGuard g(d);
    if (kind_ == "ce") {
      P2P_CUDA(cudaMemcpyPeerAsync(recv_ptr(dst), dst, send_ptr(src), src, n, st), d);
    } else if (kind_ == "sm") {
      // Forward lane: push from src (or pull by dst). Reverse lane from the same
      // device: that device reads the peer (pull) or, for pull, writes it (push).
      launch_copy(recv_ptr(dst), send_ptr(src), n, sm_blocks(d), 512, st, d);
    } else if (is_host(src)) {
      P2P_CUDA(cudaMemcpyAsync(recv_ptr(dst), send_ptr(src), n, cudaMemcpyHostToDevice, st), d);
    } else if (is_host(dst)) {
      P2P_CUDA(cudaMemcpyAsync(recv_ptr(dst), send_ptr(src), n, cudaMemcpyDeviceToHost, st), d);
    } else {
      issue_staged_gpu(src, dst, n, st);
    }
  }

  // GPU -> pinned bounce (2 slots) -> GPU, chunked; the destination's stream does the
  // upload and `st` (on the issuing device) waits for the last chunk.
  void issue_staged_gpu(int src, int dst, std::uint64_t n, cudaStream_t st) {
    const std::uint64_t chunk = std::min<std::uint64_t>(kStageChunk, std::max<std::uint64_t>(n, 1));
    if (ev_down_[0].get() == nullptr || ev_down_[0].device() != src || ev_up_[0].device() != dst)
      for (int k = 0; k < 2; ++k) {
        ev_down_[k] = make_event(src);
        ev_up_[k] = make_event(dst);
      }
    const int ps = d_of(st, src, dst);
    cudaStream_t up = stream1(dst);
    for (std::uint64_t off = 0, k = 0; off < n; off += chunk, ++k) {
      const std::uint64_t len = std::min(chunk, n - off);
      auto* slot = static_cast<unsigned char*>(bounce_.get()) + (k % 2) * chunk;
      { DeviceGuard g(src);
        if (k >= 2) P2P_CUDA(cudaStreamWaitEvent(st, ev_up_[k % 2].get(), 0), src);
        P2P_CUDA(cudaMemcpyAsync(slot, static_cast<unsigned char*>(send_ptr(src)) + off, len, cudaMemcpyDeviceToHost, st), src);
        P2P_CUDA(cudaEventRecord(ev_down_[k % 2].get(), st), src); }
      { DeviceGuard g(dst);
        P2P_CUDA(cudaStreamWaitEvent(up, ev_down_[k % 2].get(), 0), dst);
        P2P_CUDA(cudaMemcpyAsync(static_cast<unsigned char*>(recv_ptr(dst)) + off, slot, len, cudaMemcpyHostToDevice, up), dst);
        P2P_CUDA(cudaEventRecord(ev_up_[k % 2].get(), up), dst); }
      (void)ps;
      if (off + len >= n) {
        DeviceGuard g(src);
        P2P_CUDA(cudaStreamWaitEvent(st, ev_up_[k % 2].get(), 0), src);
      }
    }
  }
  static int d_of(cudaStream_t, int src, int) { return src; }

  // Returns per-lane samples (ns) and, with 2 lanes, the per-iteration total as [2].
  std::vector<std::vector<double>> run_timed(int ev_dev, const std::vector<Lane>& lanes, int warmup, int iters) {
    DeviceGuard g(ev_dev);
    for (int i = 0; i < warmup; ++i)
      for (const auto& l : lanes) l.issue();
    for (const auto& l : lanes) P2P_CUDA(cudaStreamSynchronize(l.stream), ev_dev);
    if (kind_ == "staged")
      for (int d = 0; d < gpus_; ++d)
        if (dev_[static_cast<std::size_t>(d)].s1.get()) { DeviceGuard h(d); P2P_CUDA(cudaStreamSynchronize(stream1(d)), d); }
    const std::size_t L = lanes.size(), N = static_cast<std::size_t>(iters);
    std::vector<Event> start, end;
    for (std::size_t i = 0; i < L * N; ++i) {
      start.push_back(make_event(ev_dev));
      end.push_back(make_event(ev_dev));
    }
    Event ref = make_event(ev_dev);
    // The blocking start: never more queued work than the launch queue holds.
    hold_ = N * L * (kind_ == "staged" ? 12 : 3) < 900;
    const int gen = ++generation_;
    P2P_CUDA(cudaEventRecord(ref.get(), lanes[0].stream), ev_dev);
    if (hold_)
      for (const auto& l : lanes) launch_spin_until(release_, gen, l.stream, ev_dev);
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t l = 0; l < L; ++l) {
        P2P_CUDA(cudaEventRecord(start[l * N + i].get(), lanes[l].stream), ev_dev);
        lanes[l].issue();
        DeviceGuard h(ev_dev);
        P2P_CUDA(cudaEventRecord(end[l * N + i].get(), lanes[l].stream), ev_dev);
      }
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *release_ = gen;
    for (const auto& l : lanes) P2P_CUDA(cudaStreamSynchronize(l.stream), ev_dev);
    std::vector<std::vector<double>> out(L == 1 ? 1 : L + 1);
    for (std::size_t i = 0; i < N; ++i) {
      double lo = 1e300, hi = -1e300;
      for (std::size_t l = 0; l < L; ++l) {
        out[l].push_back(elapsed_ms(start[l * N + i], end[l * N + i]) * 1e6);
        if (L > 1) {
          lo = std::min(lo, static_cast<double>(elapsed_ms(ref, start[l * N + i])));
          hi = std::max(hi, static_cast<double>(elapsed_ms(ref, end[l * N + i])));
        }
      }
      if (L > 1) out[L].push_back((hi - lo) * 1e6);
    }
    return out;
  }

  void run_latency(const BatchSpec& s, BatchResult& r) {
    const int rounds = s.bytes <= 4096 ? 1000 : 50;
    const int samples = s.warmup + s.iters;
    const int msg = static_cast<int>(std::min<std::uint64_t>(s.bytes, 1u << 20));
    auto& a = dev_[static_cast<std::size_t>(s.src)];
    auto& b = dev_[static_cast<std::size_t>(s.dst)];
    auto* fa = static_cast<unsigned long long*>(a.scratch.get());
    auto* fb = static_cast<unsigned long long*>(b.scratch.get());
    auto* out = fa + 8;
    { DeviceGuard g(s.src); P2P_CUDA(cudaMemset(fa, 0, 64), s.src); }
    { DeviceGuard g(s.dst); P2P_CUDA(cudaMemset(fb, 0, 64), s.dst); }
    { DeviceGuard g(s.dst);
      launch_pong(fb, fa, static_cast<unsigned char*>(a.recv.get()), static_cast<const unsigned char*>(b.send.get()), msg,
                  static_cast<long long>(samples) * rounds, b.s0.get(), s.dst); }
    { DeviceGuard g(s.src);
      launch_ping(fa, fb, static_cast<unsigned char*>(b.recv.get()), static_cast<const unsigned char*>(a.send.get()), msg,
                  samples, rounds, out, a.s0.get(), s.src); }
    std::vector<unsigned long long> ns(static_cast<std::size_t>(samples));
    { DeviceGuard g(s.src);
      P2P_CUDA(cudaStreamSynchronize(a.s0.get()), s.src);
      P2P_CUDA(cudaMemcpy(ns.data(), out, ns.size() * sizeof(ns[0]), cudaMemcpyDeviceToHost), s.src); }
    { DeviceGuard g(s.dst); P2P_CUDA(cudaStreamSynchronize(b.s0.get()), s.dst); }
    for (int i = s.warmup; i < samples; ++i) r.elapsed_ns.push_back(static_cast<double>(ns[static_cast<std::size_t>(i)]) / rounds / 2.0);
    r.note = fmt::format("GPU ping-pong: a 1-warp kernel on each GPU writes {} B + a flag into the peer and spins on its own "
                         "flag; {} round trips per sample timed by %globaltimer; one-way = rtt/2", msg, rounds);
  }

  std::string kind_;
  BackendOptions opts_;
  int gpus_ = 0;
  bool pull_ = false;
  int blocks_per_sm_ = 4;
  bool hold_ = true;
  int generation_ = 0;
  std::vector<std::string> names_;
  std::vector<int> sms_;
  std::vector<Dev> dev_;
  PinnedBuffer flag_, host_send_, host_recv_, bounce_;
  volatile int* release_ = nullptr;
  Event ev_down_[2], ev_up_[2];
  std::uint64_t max_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const std::string& name, const BackendOptions& opts) {
  return std::make_unique<CudaBackend>(name, opts);
}

}  // namespace p2pscope::bench
