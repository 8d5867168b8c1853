// The CUDA backends: ce (copy engines, cudaMemcpyPeerAsync: ce_copy.hpp), sm (16-byte copy kernels,
// push = source SMs write remote memory, pull = destination SMs read it) and staged
// (through pinned host memory; device N, one past the GPUs, is host pinned memory, so
// N:0 is host->GPU 0). ce and sm also accept src == dst: a device-local copy.
// Timing: timed_lanes.hpp (a blocking start, events around each iteration, the
// reverse lane of a bidirectional run chained to the first).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "bench/pattern.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/ce_copy.hpp"
#include "transport/cuda/cuda_util.hpp"
#include "transport/cuda/device_clock.hpp"
#include "transport/cuda/kernels.hpp"
#include "transport/cuda/timed_lanes.hpp"

namespace p2pscope::bench {
namespace {
using namespace cuda;

constexpr std::uint64_t kStageChunk = 64ull << 20;  // 2 slots per direction in pinned memory
constexpr std::size_t kScratchBytes = 1 << 16;      // flags, verify result, latency samples
constexpr int kMaxLatencySamples = static_cast<int>(kScratchBytes / 8) - 16;

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::string kind, const BackendOptions& o) : kind_(std::move(kind)), opts_(o) {
    parse_variant(o.variant);  // a usage error first, GPUs or not
    const cudaError_t e = cudaGetDeviceCount(&gpus_);
    if (e != cudaSuccess || gpus_ == 0) {
      cudaGetLastError();
      throw Error(fmt::format("backend {}: no usable GPU ({})", kind_, e == cudaSuccess ? "the driver sees none" : gpu::cuda_error_text(e)));
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

  std::string name() const override {
    if (kind_ == "sm") return pull_ ? "sm-pull" : "sm-push";
    return ce_ ? ce_->name() : kind_;
  }
  int device_count() const override { return kind_ == "staged" ? gpus_ + 1 : gpus_; }
  std::string device_name(int d) const override {
    check_device(d);
    return is_host(d) ? "host pinned memory" : fmt::format("GPU {} ({})", d, names_[static_cast<std::size_t>(d)]);
  }
  DeviceLocation device_location(int d) const override {
    check_device(d);
    DeviceLocation loc;
    loc.gpu = !is_host(d);  // the GPU's bus comes from the topology's CUDA index
    return loc;
  }
  PairSupport support(int src, int dst) const override {
    check_device(src);
    check_device(dst);
    if (kind_ == "staged") {
      if (src == dst) return {false, "source and destination are the same device"};
      return {};
    }
    if (src == dst) return {};  // device-local copy
    int a = 0, b = 0;
    P2P_CUDA(cudaDeviceCanAccessPeer(&a, src, dst), src);
    P2P_CUDA(cudaDeviceCanAccessPeer(&b, dst, src), dst);
    if (!a || !b) return {false, "no peer access"};
    return {};
  }

  void prepare(const std::vector<int>& devices, std::uint64_t max_bytes) override {
    // Every check before the first allocation.
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
    if (kind_ != "staged")
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
      auto& x = ensure_basics(d);
      DeviceGuard g(d);
      x.send = device_alloc(d, max_bytes);
      x.recv = device_alloc(d, max_bytes);
      launch_fill(x.send.get(), max_bytes, d, x.s0.get(), d);
      P2P_CUDA(cudaMemsetAsync(x.recv.get(), 0xA5, max_bytes, x.s0.get()), d);  // poison: not the pattern
      P2P_CUDA(cudaStreamSynchronize(x.s0.get()), d);
    }
    max_bytes_ = max_bytes;
  }

  BatchResult run_batch(const BatchSpec& s) override {
    BatchResult r;
    r.support = support(s.src, s.dst);
    if (!r.support.ok) return r;
    check_prepared(s.src, s.dst, s.bytes);
    if (s.iters < 1 || s.warmup < 0) throw UsageError("iterations must be >= 1 and warmup >= 0");
    if (s.pattern == Pattern::latency) {
      if (kind_ == "staged") {
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
    auto t = run_timed(lanes, s.warmup, s.iters, ops_per_transfer(s.src, s.dst));
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
  int blocking_initiator(int src, int dst, std::uint64_t bytes) {
    const auto sup = support(src, dst);
    if (!sup.ok) throw UsageError(fmt::format("backend {} cannot copy {} -> {}: {}", kind_, src, dst, sup.reason));
    check_prepared(src, dst, bytes);
    const int d = initiator(src, dst);
    auto& x = dev_[static_cast<std::size_t>(d)];
    if (!x.blk_a.get()) {
      x.blk_a = make_event(d);
      x.blk_b = make_event(d);
    }
    return d;
  }

  OpTiming run_blocking(int src, int dst, std::uint64_t bytes) override {
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
  OpTiming run_blocking_batch(int src, int dst, std::uint64_t bytes, int count) override {
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

  int clock_device(int src, int dst) const override { return initiator(src, dst); }

  TimerBurst read_device_timer_burst(int device, int count) override {
    check_device(device);
    if (is_host(device)) return {};
    auto& x = ensure_basics(device);
    DeviceGuard g(device);
    return poke_device_timer(device, x.s0.get(), static_cast<volatile unsigned long long*>(clock_.get()), count);
  }

  std::int64_t verify(int src, int dst, std::uint64_t bytes) override {
    check_prepared(src, dst, bytes);
    if (is_host(dst)) {
      const auto* p = static_cast<const unsigned char*>(host_recv_.get());
      const auto* w = reinterpret_cast<const std::uint64_t*>(p);  // pinned: page aligned
      for (std::uint64_t k = 0; k < bytes / 8; ++k)
        if (w[k] != pattern_word(src, k))
          for (std::uint64_t i = k * 8; i < k * 8 + 8; ++i)
            if (p[i] != pattern_byte(src, i)) return static_cast<std::int64_t>(i);
      for (std::uint64_t i = bytes / 8 * 8; i < bytes; ++i)
        if (p[i] != pattern_byte(src, i)) return static_cast<std::int64_t>(i);
      return -1;
    }
    auto& x = dev_[static_cast<std::size_t>(dst)];
    DeviceGuard g(dst);
    long long init = LLONG_MAX, out = 0;
    auto* bad = static_cast<long long*>(x.scratch.get());
    // Stream-ordered: a plain cudaMemcpy from pageable memory may still be in flight.
    P2P_CUDA(cudaMemcpyAsync(bad, &init, sizeof init, cudaMemcpyHostToDevice, x.s0.get()), dst);
    launch_verify(x.recv.get(), bytes, src, bad, x.s0.get(), dst);
    P2P_CUDA(cudaStreamSynchronize(x.s0.get()), dst);
    P2P_CUDA(cudaMemcpy(&out, bad, sizeof out, cudaMemcpyDeviceToHost), dst);
    return out == LLONG_MAX ? -1 : out;
  }

  TimerReading read_device_timer(int device) override {
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
  void busy_compute(int device, double seconds) override {
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

 private:
  struct Dev {
    DeviceBuffer send, recv, scratch;
    Stream s0, s1, down, up;  // lanes; staged: device->host and host->device work streams
    Event blk_a, blk_b, cal, cal_end;  // run_blocking's brackets; the calibration's events
    std::int64_t cal_device_ns = 0, cal_host_ns = 0;
    double cal_half_gap_ns = 0;
  };
  struct Stage {  // one direction GPU -> GPU through pinned memory
    PinnedBuffer bounce;
    Event kick;                   // on the lane's device
    std::vector<Event> down, up;  // per slot: on src, on dst
    std::uint64_t chunk = 0;
  };

  // Event `cal`, a %globaltimer read, event `cal_end`: the read lies between them.
  void calibrate_events(int d, Dev& x) {
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
  // Stream operations one transfer queues (for the blocking start's budget).
  std::size_t ops_per_transfer(int src, int dst) const {
    if (kind_ == "staged" && !is_host(src) && !is_host(dst)) return 8 + 6 * (max_bytes_ / kStageChunk + 1);
    if (!ce_) return 1;
    const std::uint64_t host_chunks = ce_->host_share(src, dst, max_bytes_) / kHostPathChunk;
    return ce_->ops_per_copy() + (host_chunks ? 3 + 6 * static_cast<std::size_t>(host_chunks) : 0);
  }

  Dev& ensure_basics(int d) {
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
  // sm: push|pull[@N] (N blocks per SM); ce: ce_copy.hpp.
  void parse_variant(const std::string& variant) {
    const auto at = variant.find('@');
    const std::string v = variant.substr(0, at);
    if (kind_ == "sm") {
      const long long n = at == std::string::npos ? 1 : parse_int(variant.substr(at + 1), "the number after @");
      pull_ = v == "pull" || v == "read";
      if (!v.empty() && !pull_ && v != "push" && v != "write")
        throw UsageError("backend sm: unknown variant '" + variant + "': use push or pull (push@N: N blocks per SM)");
      if (n < 1 || n > 32) throw UsageError("sm variant: blocks per SM must be 1-32");
      if (at != std::string::npos) blocks_per_sm_ = static_cast<int>(n);
    } else if (kind_ == "ce") {
      ce_.emplace(parse_ce_variant(variant));
    } else if (!variant.empty()) {
      throw UsageError("backend " + kind_ + " has no variants (they are for sm and ce)");
    }
  }
  bool is_host(int d) const { return d == gpus_; }
  void check_device(int d) const {
    if (d < 0 || d >= device_count()) {
      std::string list;
      for (int i = 0; i < device_count(); ++i)
        list += (i ? ", " : "") + (is_host(i) ? std::to_string(i) + " (host pinned memory)"
                                              : fmt::format("{} ({})", i, names_[static_cast<std::size_t>(i)]));
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
    if (ce_) return ce_->initiator(src, dst);
    return kind_ == "sm" && pull_ ? dst : src;  // staged: the source's stream
  }
  cudaStream_t stream0(int d) const { return dev_[static_cast<std::size_t>(d)].s0.get(); }
  cudaStream_t stream1(int d) const { return dev_[static_cast<std::size_t>(d)].s1.get(); }
  void* send_ptr(int d) const { return is_host(d) ? host_send_.get() : dev_[static_cast<std::size_t>(d)].send.get(); }
  void* recv_ptr(int d) const { return is_host(d) ? host_recv_.get() : dev_[static_cast<std::size_t>(d)].recv.get(); }
  int sm_blocks(int d) const { return sms_[static_cast<std::size_t>(d)] * blocks_per_sm_; }

  std::string note(int src, int dst) const {
    if (ce_) return ce_->describe(src, dst);
    if (kind_ == "sm")
      return fmt::format("{} kernel on GPU {}, up to {} blocks x 512 threads, 16-byte accesses", pull_ ? "pull" : "push",
                         initiator(src, dst), sm_blocks(initiator(src, dst)));
    if (is_host(src) || is_host(dst)) return "cudaMemcpyAsync between pinned host memory and the GPU";
    return fmt::format("staged through pinned host memory, {} chunks, 2 slots", format_size(std::min(kStageChunk, max_bytes_)));
  }

  // Queues one transfer src->dst on `st`, a stream of initiator(src, dst).
  void issue(int src, int dst, std::uint64_t n, cudaStream_t st) {
    const int d = initiator(src, dst);
    DeviceGuard g(d);
    if (ce_) {
      issue_ce(src, dst, n, st);
    } else if (kind_ == "sm") {
      launch_copy(recv_ptr(dst), send_ptr(src), n, sm_blocks(d), 512, st, d);
    } else if (is_host(src)) {
      P2P_CUDA(cudaMemcpyAsync(recv_ptr(dst), send_ptr(src), n, cudaMemcpyHostToDevice, st), d);
    } else if (is_host(dst)) {
      P2P_CUDA(cudaMemcpyAsync(recv_ptr(dst), send_ptr(src), n, cudaMemcpyDeviceToHost, st), d);
    } else {
      issue_staged_gpu(src, dst, n, st);
    }
  }

  // staged: 64 MiB chunks in 2 slots; the ce backend's +host path: 8 MiB in 4.
  Stage& stage_for(int src, int dst) {
    auto& sg = stage_[{src, dst}];
    if (!sg.bounce.get()) {
      const bool multipath = ce_.has_value();
      sg.chunk = std::max<std::uint64_t>(1, std::min(multipath ? kHostPathChunk : kStageChunk, max_bytes_));
      const int slots = multipath ? 4 : 2;
      sg.bounce = pinned_alloc(static_cast<std::uint64_t>(slots) * sg.chunk, src);
      sg.kick = make_event(initiator(src, dst));
      for (int k = 0; k < slots; ++k) {
        sg.down.push_back(make_event(src));
        sg.up.push_back(make_event(dst));
      }
    }
    return sg;
  }

  // GPU -> pinned bounce slots -> GPU for bytes [base, base + n), chunked: src's `down`
  // stream copies out, dst's `up` stream copies in, starting where `st` stands now.
  // Returns the event of the last chunk in, for `st` (or another stream) to wait on.
  cudaEvent_t queue_staged(int src, int dst, std::uint64_t base, std::uint64_t n, cudaStream_t st) {
    Stage& sg = stage_for(src, dst);
    const int lane_dev = initiator(src, dst);
    const std::size_t slots = sg.down.size();
    cudaStream_t down = dev_[static_cast<std::size_t>(src)].down.get();
    cudaStream_t up = dev_[static_cast<std::size_t>(dst)].up.get();
    { DeviceGuard g(lane_dev); P2P_CUDA(cudaEventRecord(sg.kick.get(), st), lane_dev); }
    { DeviceGuard g(src); P2P_CUDA(cudaStreamWaitEvent(down, sg.kick.get(), 0), src); }
    const std::uint64_t chunks = std::max<std::uint64_t>(1, (n + sg.chunk - 1) / sg.chunk);
    for (std::uint64_t k = 0; k < chunks; ++k) {
      const std::uint64_t off = base + k * sg.chunk, len = std::min(sg.chunk, base + n - off);
      const std::size_t slot_index = static_cast<std::size_t>(k % slots);
      auto* slot = static_cast<unsigned char*>(sg.bounce.get()) + slot_index * sg.chunk;
      {
        DeviceGuard g(src);
        if (k >= slots) P2P_CUDA(cudaStreamWaitEvent(down, sg.up[slot_index].get(), 0), src);  // slot free again
        P2P_CUDA(cudaMemcpyAsync(slot, static_cast<unsigned char*>(send_ptr(src)) + off, len, cudaMemcpyDeviceToHost, down), src);
        P2P_CUDA(cudaEventRecord(sg.down[slot_index].get(), down), src);
      }
      {
        DeviceGuard g(dst);
        P2P_CUDA(cudaStreamWaitEvent(up, sg.down[slot_index].get(), 0), dst);
        P2P_CUDA(cudaMemcpyAsync(static_cast<unsigned char*>(recv_ptr(dst)) + off, slot, len, cudaMemcpyHostToDevice, up), dst);
        P2P_CUDA(cudaEventRecord(sg.up[slot_index].get(), up), dst);
      }
    }
    return sg.up[static_cast<std::size_t>((chunks - 1) % slots)].get();
  }

  // `st`, a stream of initiator(src, dst), waits until the last staged chunk is in.
  void join_staged(int src, int dst, cudaStream_t st, cudaEvent_t last) {
    const int lane_dev = initiator(src, dst);
    DeviceGuard g(lane_dev);
    P2P_CUDA(cudaStreamWaitEvent(st, last, 0), lane_dev);
  }

  void issue_staged_gpu(int src, int dst, std::uint64_t n, cudaStream_t st) {
    join_staged(src, dst, st, queue_staged(src, dst, 0, n, st));
  }

  // The ce backend's +host: the tail of the buffer through host memory while the copy
  // engine moves the rest over the link; `st` waits for both.
  void issue_ce(int src, int dst, std::uint64_t n, cudaStream_t st) {
    const std::uint64_t h = ce_->host_share(src, dst, n);
    if (h == 0) {
      ce_->issue(recv_ptr(dst), dst, send_ptr(src), src, n, st);
      return;
    }
    cudaEvent_t last = queue_staged(src, dst, n - h, h, st);
    ce_->issue(recv_ptr(dst), dst, send_ptr(src), src, n - h, st);
    join_staged(src, dst, st, last);
  }

  void sync_all_streams() {
    for (int d = 0; d < gpus_; ++d) {
      auto& x = dev_[static_cast<std::size_t>(d)];
      if (!x.s0.get()) continue;
      DeviceGuard g(d);
      for (auto* s : {&x.s0, &x.s1, &x.down, &x.up}) P2P_CUDA(cudaStreamSynchronize(s->get()), d);
    }
    if (ce_) ce_->synchronize();
  }

  // Per-lane samples (ns) and, with 2 lanes, the per-iteration total as out[2].
  std::vector<std::vector<double>> run_timed(const std::vector<Lane>& lanes, int warmup, int iters, std::size_t ops_per_copy) {
    // The blocking start holds at most what the launch queue takes without blocking us.
    hold_ = static_cast<std::size_t>(iters) * lanes.size() * (3 + ops_per_copy) < 900;
    return run_timed_lanes(lanes, warmup, iters, hold_ ? release_ : nullptr, ++generation_, [this] { sync_all_streams(); });
  }

  void run_latency(const BatchSpec& s, BatchResult& r) {
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
    // Flags cleared on the kernels' own streams and waited for: a cudaMemset on the
    // legacy stream is not ordered before work on non-blocking streams.
    { DeviceGuard g(s.src); P2P_CUDA(cudaMemsetAsync(fa, 0, 64, a.s0.get()), s.src); P2P_CUDA(cudaStreamSynchronize(a.s0.get()), s.src); }
    { DeviceGuard g(s.dst); P2P_CUDA(cudaMemsetAsync(fb, 0, same ? 8 : 64, pong_stream), s.dst); P2P_CUDA(cudaStreamSynchronize(pong_stream), s.dst); }
    // Each sender counts its blocks' arrivals in a word of its own GPU, cleared above.
    PingShape ping = ping_shape_for(msg, sms_[static_cast<std::size_t>(s.src)]);
    PingShape pong = ping_shape_for(msg, sms_[static_cast<std::size_t>(s.dst)]);
    ping.arrivals = reinterpret_cast<unsigned int*>(fa + 2);
    pong.arrivals = reinterpret_cast<unsigned int*>(same ? fa + 3 : fb + 2);
    ping.system_scope = pong.system_scope = !same;
    { DeviceGuard g(s.dst);
      launch_pong(fb, fa, static_cast<unsigned char*>(a.recv.get()), static_cast<const unsigned char*>(b.send.get()), msg,
                  static_cast<long long>(samples) * rounds, pong, pong_stream, s.dst); }
    { DeviceGuard g(s.src);
      launch_ping(fa, fb, static_cast<unsigned char*>(b.recv.get()), static_cast<const unsigned char*>(a.send.get()), msg,
                  samples, rounds, out, ping, a.s0.get(), s.src); }
    std::vector<unsigned long long> ns(static_cast<std::size_t>(samples));
    { DeviceGuard g(s.src);
      P2P_CUDA(cudaStreamSynchronize(a.s0.get()), s.src);
      P2P_CUDA(cudaMemcpy(ns.data(), out, ns.size() * sizeof(ns[0]), cudaMemcpyDeviceToHost), s.src); }
    { DeviceGuard g(s.dst); P2P_CUDA(cudaStreamSynchronize(pong_stream), s.dst); }
    for (auto v : ns)
      if (v == ~0ull)
        throw Error(fmt::format("GPU ping-pong {} <-> {} timed out: the peer's flag writes never arrived", s.src, s.dst));
    for (int i = s.warmup; i < samples; ++i) r.elapsed_ns.push_back(static_cast<double>(ns[static_cast<std::size_t>(i)]) / rounds / 2.0);
    r.note = fmt::format("GPU ping-pong: a kernel of {} block(s) x {} threads on each GPU writes {} B (16-byte stores) + a "
                         "flag into the peer and spins on its own flag; {} round trips per sample timed by %globaltimer; "
                         "one-way = rtt/2{}", ping.blocks, ping.threads, msg, rounds,
                         same ? " (one GPU: two kernels on two streams, no link crossed, GPU-scope fences)" : "");
  }

  std::string kind_;
  BackendOptions opts_;
  int gpus_ = 0;
  bool pull_ = false;
  int blocks_per_sm_ = 4;
  std::optional<CeCopier> ce_;  // the ce backend's copies and their variant
  bool hold_ = true;
  int generation_ = 0;
  std::vector<std::string> names_;
  std::vector<int> sms_;
  std::mutex basics_mu_;
  std::vector<Dev> dev_;
  PinnedBuffer flag_, clock_, host_send_, host_recv_;
  std::map<std::pair<int, int>, Stage> stage_;
  volatile int* release_ = nullptr;
  std::uint64_t max_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_ce_backend(const BackendOptions& opts) { return std::make_unique<CudaBackend>("ce", opts); }
std::unique_ptr<Backend> make_sm_backend(const BackendOptions& opts) { return std::make_unique<CudaBackend>("sm", opts); }
std::unique_ptr<Backend> make_staged_backend(const BackendOptions& opts) {
  return std::make_unique<CudaBackend>("staged", opts);
}

}  // namespace p2pscope::bench
