// The CUDA backends' shared part (cuda_base.hpp).
// Timing: timed_lanes.hpp (a blocking start, events around each iteration, the
// reverse lane of a bidirectional run chained to the first).
#include "transport/cuda/cuda_base.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "p2pscope/clock.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/pattern.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/device_clock.hpp"
#include "transport/cuda/kernels.hpp"
#include "bench/pair_support.hpp"
#include "bench/setup_pacer.hpp"

namespace p2pscope::bench::cuda {

CudaBase::CudaBase(const char* kind, int host_devices) : host_devices_(host_devices) {
  const cudaError_t e = cudaGetDeviceCount(&gpus_);
  if (e != cudaSuccess || gpus_ == 0) {
    cudaGetLastError();
    throw Error(fmt::format("backend {}: no usable GPU ({})", kind, e == cudaSuccess ? "the driver sees none" : gpu::cuda_error_text(e)));
  }
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
  clock_ = pinned_alloc(kClockWords * 8 + 64);
}

PairSupport CudaBase::support(int src, int dst) const {
  check_device(src);
  check_device(dst);
  if (src == dst) return {};  // device-local copy
  int a = 0, b = 0;
  P2P_CUDA(cudaDeviceCanAccessPeer(&a, src, dst), src);
  P2P_CUDA(cudaDeviceCanAccessPeer(&b, dst, src), dst);
  if (!a || !b) return {false, "no peer access"};
  return {};
}

std::string CudaBase::device_name(int d) const {
  check_device(d);
  return is_host(d) ? "host pinned memory" : fmt::format("GPU {} ({})", d, names_[static_cast<std::size_t>(d)]);
}

Backend::DeviceLocation CudaBase::device_location(int d) const {
  check_device(d);
  DeviceLocation loc;
  loc.gpu = !is_host(d);  // the GPU's bus comes from the topology's CUDA index
  return loc;
}

void CudaBase::prepare(const std::vector<int>& devices, std::uint64_t max_bytes) {
  PrepareSpec spec;
  spec.devices = devices;
  spec.max_bytes = max_bytes;
  prepare_for(spec);
}

// The GPU side is quick (cudaMalloc, a fill kernel); the host side (pinned memory filled
// by the CPU) takes seconds per GiB, so it is filled in slices that a signal ends.
bool CudaBase::prepare_for(const PrepareSpec& spec) {
  const std::vector<int>& devices = spec.devices;
  const std::uint64_t max_bytes = spec.max_bytes;
  // Every check before the first allocation.
  for (int d : devices) {
    check_device(d);
    if (is_host(d)) continue;
    DeviceGuard g(d);
    std::size_t free_b = 0, total_b = 0;
    P2P_CUDA(cudaMemGetInfo(&free_b, &total_b), d);
    // What this device holds now is freed before the new buffers: it counts as free.
    const auto& x = dev_[static_cast<std::size_t>(d)];
    if (x.send.get()) free_b += static_cast<std::size_t>(2 * max_bytes_);
    const std::uint64_t need = 2 * max_bytes + (64ull << 20);
    if (need > free_b)
      throw UsageError(fmt::format("{} per buffer needs {} on GPU {} (send + receive + 64 MiB) but only {} of {} is free; "
                                   "choose smaller --sizes", format_size(max_bytes), format_size(need), d,
                                   format_size(free_b), format_size(total_b)));
  }
  if (uses_peer_access())
    for (int a : devices)
      for (int b : devices)
        if (a != b) {
          int ok = 0;
          P2P_CUDA(cudaDeviceCanAccessPeer(&ok, a, b), a);
          if (!ok) continue;  // support() reports the pair n/a
          DeviceGuard g(a);
          const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
          if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
          else P2P_CUDA(e, a);
        }
  stage_.clear();
  // The last set-up's buffers go before the next are allocated: never both at once.
  max_bytes_ = 0;
  host_send_.reset();
  host_recv_.reset();
  for (auto& x : dev_) x.send.reset(), x.recv.reset();
  const bool host = std::any_of(devices.begin(), devices.end(), [this](int d) { return is_host(d); });
  const std::size_t gpus = devices.size() - (host ? 1 : 0);
  std::string what = host ? fmt::format("2 x {} pinned host buffers", format_size(max_bytes)) : "";
  if (gpus > 0)
    what += fmt::format("{}2 x {} on each of {} GPU{}", host ? " and " : "", format_size(max_bytes), gpus, gpus > 1 ? "s" : "");
  SetupPacer pacer(spec, host ? 2 * max_bytes : 0, what);
  const auto stop = [&] {
    host_send_.reset();
    host_recv_.reset();
    for (auto& x : dev_) x.send.reset(), x.recv.reset();
    return false;
  };
  for (int d : devices) {
    if (pacer.stopped()) return stop();
    if (is_host(d)) {
      host_send_ = pinned_alloc(max_bytes);
      if (!pacer.run(max_bytes, [&](std::uint64_t off, std::uint64_t n) {
            pattern_fill(static_cast<unsigned char*>(host_send_.get()) + off, n, pattern_seed(d), off);
          }))
        return stop();
      host_recv_ = pinned_alloc(max_bytes);
      if (!pacer.run(max_bytes, [&](std::uint64_t off, std::uint64_t n) {
            std::memset(static_cast<unsigned char*>(host_recv_.get()) + off, 0xA5, n);
          }))
        return stop();
      continue;
    }
    auto& x = ensure_basics(d);
    DeviceGuard g(d);
    x.send = device_alloc(d, max_bytes);
    x.recv = device_alloc(d, max_bytes);
    launch_fill(x.send.get(), max_bytes, d, x.s0.get(), d);
    P2P_CUDA(cudaMemsetAsync(x.recv.get(), 0xA5, max_bytes, x.s0.get()), d);  // poison: not the pattern
    P2P_CUDA(cudaStreamSynchronize(x.s0.get()), d);
  }
  max_bytes_ = max_bytes;
  pacer.done();
  return !pacer.stopped();
}

BatchResult CudaBase::run_batch(const BatchSpec& s) {
  BatchResult r;
  if (!start_batch(*this, s, r, [this](int a, int b, std::uint64_t n) { check_prepared(a, b, n); })) return r;
  if (s.iters < 1 || s.warmup < 0) throw UsageError("iterations must be >= 1 and warmup >= 0");
  if (s.pattern == Pattern::latency) {
    if (!capabilities().latency) {
      r.support = {false, "latency ping-pong needs peer access (use ce or sm)"};
      return r;
    }
    run_latency(s, r);
    return r;
  }
  const int d0 = initiator(s.src, s.dst);
  std::vector<Lane> lanes{{d0, stream0(d0), nullptr}};
  lanes[0].issue = [this, &s, st = lanes[0].stream] { issue(s.src, s.dst, s.bytes, st); };
  if (s.pattern == Pattern::bidirectional) {
    const int d1 = initiator(s.dst, s.src);
    cudaStream_t st1 = d1 == d0 ? stream1(d1) : stream0(d1);
    lanes.push_back({d1, st1, [this, &s, st1] { issue(s.dst, s.src, s.bytes, st1); }});
  }
  auto t = run_timed(lanes, s, ops_per_transfer(s.src, s.dst));
  r.elapsed_ns = std::move(t[0]);
  if (s.pattern == Pattern::bidirectional) {
    r.reverse_elapsed_ns = std::move(t[1]);
    r.total_elapsed_ns = std::move(t[2]);
  }
  r.note = note(s.src, s.dst) + (hold_ ? ", blocking start" : ", no blocking start (too many queued ops)");
  return r;
}

// What both blocking paths check and set up first: the pair, the buffers, and the
// initiating GPU's two events; returns that GPU.
int CudaBase::blocking_initiator(int src, int dst, std::uint64_t bytes) {
  const auto sup = support(src, dst);
  if (!sup.ok) throw UsageError(fmt::format("backend {} cannot copy {} -> {}: {}", name(), src, dst, sup.reason));
  check_prepared(src, dst, bytes);
  const int d = initiator(src, dst);
  auto& x = dev_[static_cast<std::size_t>(d)];
  if (!x.blk_a.get()) {
    x.blk_a = make_event(d);
    x.blk_b = make_event(d);
  }
  return d;
}

OpTiming CudaBase::run_blocking(int src, int dst, std::uint64_t bytes) {
  const int d = blocking_initiator(src, dst, bytes);
  auto& x = dev_[static_cast<std::size_t>(d)];
  DeviceGuard g(d);
  cudaStream_t st = x.s0.get();
  // The op is bracketed by two events only, so the host waits for nothing but the op;
  // both are recorded after the host clock starts (an event recorded on an idle
  // stream before it could carry a GPU time earlier than the host's issue).
  // The op's place on the GPU timer comes from a calibration point renewed every
  // 0.5 s outside the timed window: event, %globaltimer read, event. The read lies
  // between the two events; taking their midpoint errs by at most half their gap,
  // reported with the op.
  if (!x.cal.get() || monotonic_ns() - x.cal_host_ns > 500'000'000) calibrate_events(d, x);
  OpTiming t;
  t.host_start_ns = monotonic_ns();
  P2P_CUDA(cudaEventRecord(x.blk_a.get(), st), d);
  issue(src, dst, bytes, st);
  P2P_CUDA(cudaEventRecord(x.blk_b.get(), st), d);
  P2P_CUDA(cudaStreamSynchronize(st), d);
  t.host_end_ns = monotonic_ns();
  t.device_duration_ns = elapsed_ms(x.blk_a, x.blk_b) * 1e6;
  t.device_start_ns = x.cal_device_ns + static_cast<std::int64_t>(std::llround(elapsed_ms(x.cal, x.blk_a) * 1e6 - x.cal_half_gap_ns));
  t.device_end_ns = t.device_start_ns + static_cast<std::int64_t>(std::llround(t.device_duration_ns));
  t.device_stamp_error_ns = x.cal_half_gap_ns;
  return t;
}

// Batch timing: a spin kernel holds the stream while the host queues a timer read,
// `count` transfers between two events and a second timer read, then releases it.
// The events time the transfers back to back; the timer reads place the batch on
// the GPU clock directly (no event calibration), inside the host's bracket.
OpTiming CudaBase::run_blocking_batch(int src, int dst, std::uint64_t bytes, int count) {
  if (count < 1) throw UsageError("a batch needs at least one transfer");
  const int d = blocking_initiator(src, dst, bytes);
  auto& x = dev_[static_cast<std::size_t>(d)];
  DeviceGuard g(d);
  cudaStream_t st = x.s0.get();
  auto* stamps = static_cast<unsigned long long*>(clock_.get()) + kClockWords;
  stamps[0] = stamps[1] = 0;
  // What the launch queue takes without blocking the host behind the held stream.
  const bool hold = static_cast<std::size_t>(count) * ops_per_transfer(src, dst) + 6 < 900;
  OpTiming t;
  t.host_start_ns = monotonic_ns();
  {
    Release release(hold ? release_ : nullptr, ++generation_);
    if (hold) launch_spin_until(release_, generation_, st, d);
    launch_globaltimer(stamps, st, d);
    P2P_CUDA(cudaEventRecord(x.blk_a.get(), st), d);
    for (int i = 0; i < count; ++i) issue(src, dst, bytes, st);
    P2P_CUDA(cudaEventRecord(x.blk_b.get(), st), d);
    launch_globaltimer(stamps + 1, st, d);
  }
  P2P_CUDA(cudaStreamSynchronize(st), d);
  t.host_end_ns = monotonic_ns();
  t.device_duration_ns = elapsed_ms(x.blk_a, x.blk_b) * 1e6;
  t.device_start_ns = static_cast<std::int64_t>(stamps[0]);
  t.device_end_ns = static_cast<std::int64_t>(stamps[1]);
  return t;
}

TimerBurst CudaBase::read_device_timer_burst(int device, int count) {
  check_device(device);
  if (is_host(device)) return {};
  auto& x = ensure_basics(device);
  DeviceGuard g(device);
  return poke_device_timer(device, x.s0.get(), static_cast<volatile unsigned long long*>(clock_.get()), count);
}

std::int64_t CudaBase::verify(int src, int dst, std::uint64_t bytes) {
  check_prepared(src, dst, bytes);
  if (is_host(dst)) {
    const std::uint64_t bad = pattern_first_mismatch(host_recv_.get(), bytes, pattern_seed(src));
    return bad == bytes ? -1 : static_cast<std::int64_t>(bad);
  }
  auto& x = dev_[static_cast<std::size_t>(dst)];
  DeviceGuard g(dst);
  return first_bad_offset(x.recv.get(), bytes, src, x.scratch.get(), x.s0.get(), dst);
}

TimerReading CudaBase::read_device_timer(int device) {
  check_device(device);
  if (is_host(device)) return {};
  auto& x = ensure_basics(device);
  DeviceGuard g(device);
  auto* ts = static_cast<unsigned long long*>(flag_.get()) + 4;
  TimerReading r;
  r.host_before_ns = monotonic_ns();
  launch_globaltimer(ts, x.s0.get(), device);
  P2P_CUDA(cudaStreamSynchronize(x.s0.get()), device);
  r.host_after_ns = monotonic_ns();
  r.device_ns = static_cast<std::int64_t>(ts[0]);
  return r;
}

// Called from one thread per device (profile's thermal warm-up), possibly before
// prepare(): each device's stream and scratch are created on first use.
void CudaBase::busy_compute(int device, double seconds) {
  check_device(device);
  if (is_host(device)) return;
  auto& x = ensure_basics(device);
  DeviceGuard g(device);
  float* sink = static_cast<float*>(x.scratch.get()) + 1024;
  const auto end = monotonic_ns() + static_cast<std::int64_t>(seconds * 1e9);
  while (monotonic_ns() < end) {
    for (int i = 0; i < 20; ++i) launch_fma(sink, sms_[static_cast<std::size_t>(device)] * 8, 4, x.s0.get(), device);
    P2P_CUDA(cudaStreamSynchronize(x.s0.get()), device);
  }
}

// Event `cal`, a %globaltimer read, event `cal_end`: the read lies between them.
void CudaBase::calibrate_events(int d, Dev& x) {
  if (!x.cal.get()) {
    x.cal = make_event(d);
    x.cal_end = make_event(d);
  }
  cudaStream_t st = x.s0.get();
  auto* ts = static_cast<unsigned long long*>(flag_.get()) + 2;
  P2P_CUDA(cudaEventRecord(x.cal.get(), st), d);
  launch_globaltimer(ts, st, d);
  P2P_CUDA(cudaEventRecord(x.cal_end.get(), st), d);
  P2P_CUDA(cudaStreamSynchronize(st), d);
  x.cal_device_ns = static_cast<std::int64_t>(ts[0]);
  x.cal_half_gap_ns = elapsed_ms(x.cal, x.cal_end) * 1e6 / 2;
  x.cal_host_ns = monotonic_ns();
}

CudaBase::Dev& CudaBase::ensure_basics(int d) {
  std::lock_guard<std::mutex> lock(basics_mu_);
  auto& x = dev_[static_cast<std::size_t>(d)];
  if (!x.s0.get()) {
    { DeviceGuard g(d); preload_kernels(d); }
    x.scratch = device_alloc(d, kScratchBytes);
    x.s0 = make_stream(d);
    x.s1 = make_stream(d);
    x.down = make_stream(d);
    x.up = make_stream(d);
  }
  return x;
}

void CudaBase::check_device(int d) const {
  if (d < 0 || d >= device_count()) {
    std::string list;
    for (int i = 0; i < device_count(); ++i)
      list += (i ? ", " : "") + (is_host(i) ? std::to_string(i) + " (host pinned memory)"
                                            : fmt::format("{} ({})", i, names_[static_cast<std::size_t>(i)]));
    throw UsageError(fmt::format("GPU {} does not exist: backend {} has devices {}", d, name(), list));
  }
}

void CudaBase::check_prepared(int src, int dst, std::uint64_t bytes) const {
  for (int d : {src, dst})
    if (is_host(d) ? !host_send_.get() : !dev_[static_cast<std::size_t>(d)].send.get())
      throw UsageError(fmt::format("device {} was not prepared: call prepare() with it first", d));
  if (bytes > max_bytes_)
    throw UsageError(fmt::format("{} is more than the {} prepared", format_size(bytes), format_size(max_bytes_)));
}

void CudaBase::sync_all_streams() {
  for (int d = 0; d < gpus_; ++d) {
    auto& x = dev_[static_cast<std::size_t>(d)];
    if (!x.s0.get()) continue;
    DeviceGuard g(d);
    for (auto* s : {&x.s0, &x.s1, &x.down, &x.up}) P2P_CUDA(cudaStreamSynchronize(s->get()), d);
  }
  sync_own_streams();
}

// Per-lane samples (ns) and, with 2 lanes, the per-iteration total as out[2].
std::vector<std::vector<double>> CudaBase::run_timed(const std::vector<Lane>& lanes, const BatchSpec& s,
                                                     std::size_t ops_per_copy) {
  // The blocking start holds at most what the launch queue takes without blocking us.
  hold_ = static_cast<std::size_t>(s.iters) * lanes.size() * (3 + ops_per_copy) < 900;
  return run_timed_lanes(lanes, s.warmup, s.iters, hold_ ? release_ : nullptr, &generation_, [this] { sync_all_streams(); },
                         s.stop);
}

}  // namespace p2pscope::bench::cuda
