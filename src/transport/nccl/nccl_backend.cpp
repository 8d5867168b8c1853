// The nccl backend: ncclSend/ncclRecv between GPUs of one process (ncclCommInitAll).
// MPI launch (one rank per GPU) is not built here: this binary has no MPI.
// Timing: events on the sender's stream; the receiver's completion is joined back
// into it by an event, so one iteration = send posted .. data received. A spin kernel
// holds both streams until every iteration is queued (the blocking start).
#include <algorithm>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/kernels.hpp"
#include "transport/nccl/nccl_util.hpp"
#include "bench/pair_support.hpp"

namespace p2pscope::bench {
namespace {
using namespace cuda;

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(const BackendOptions& o) : opts_(o) {
    const cudaError_t e = cudaGetDeviceCount(&gpus_);
    if (e != cudaSuccess || gpus_ == 0) {
      cudaGetLastError();
      throw Error(std::string("backend nccl: no usable GPU (") + (e == cudaSuccess ? "the driver sees none" : gpu::cuda_error_text(e)) + ")");
    }
    flag_ = pinned_alloc(64);
    release_ = static_cast<volatile int*>(flag_.get());
    *release_ = 0;
  }
  std::string name() const override { return "nccl"; }
  int device_count() const override { return gpus_; }
  std::string device_name(int d) const override {
    check_device(d);
    cudaDeviceProp p{};
    P2P_CUDA(cudaGetDeviceProperties(&p, d), d);
    return fmt::format("GPU {} ({})", d, p.name);
  }
  PairSupport support(int src, int dst) const override {
    return distinct_pair(src, dst, [this](int d) { check_device(d); });
  }

  void prepare(const std::vector<int>& devices, std::uint64_t max_bytes) override {
    for (int d : devices) {
      check_device(d);
      if (const std::string why = nccl::memory_shortfall(d, max_bytes); !why.empty()) throw UsageError(why);
    }
    comms_ = std::make_unique<nccl::Comms>(devices);
    warmed_.clear();  // new communicators: connect and load again
    dev_.clear();
    dev_.resize(static_cast<std::size_t>(gpus_));
    for (int d : devices) {
      { DeviceGuard g(d); preload_kernels(d); }  // the spin kernel must not load lazily behind NCCL's
      auto& x = dev_[static_cast<std::size_t>(d)];
      x.send = device_alloc(d, max_bytes);
      x.recv = device_alloc(d, max_bytes);
      x.scratch = device_alloc(d, 64);
      x.s = make_stream(d);
      x.done = make_event(d);
      DeviceGuard g(d);
      launch_fill(x.send.get(), max_bytes, d, x.s.get(), d);
      P2P_CUDA(cudaMemsetAsync(x.recv.get(), 0xA5, max_bytes, x.s.get()), d);
      P2P_CUDA(cudaStreamSynchronize(x.s.get()), d);
    }
    max_bytes_ = max_bytes;
  }

  BatchResult run_batch(const BatchSpec& s) override {
    BatchResult r;
    if (!start_batch(*this, s, r, [this](int a, int b, std::uint64_t n) { check_prepared(a, b, n); })) return r;
    const nccl::SampleShape shape = nccl::sample_shape(s.pattern);
    const bool bidir = shape.bidir, lat = shape.lat;
    const int rounds = shape.rounds;
    auto one = [&] {
      for (int k = 0; k < rounds; ++k) {
        exchange(s.src, s.dst, s.bytes, bidir);
        if (lat) exchange(s.dst, s.src, s.bytes, false);
      }
      join(s.src, s.dst);
    };
    // At least one untimed round: NCCL's kernels load at first launch, which must not
    // happen behind the blocking-start spin kernel.
    for (int i = 0; i < std::max(1, s.warmup); ++i) one();
    sync(s.src);
    sync(s.dst);
    std::vector<Event> a, b;
    for (int i = 0; i < s.iters; ++i) {
      a.push_back(make_event(s.src));
      b.push_back(make_event(s.src));
    }
    const bool hold = shape.hold(s.iters);
    const int gen = ++generation_;
    if (hold)
      for (int d : {s.src, s.dst}) {
        DeviceGuard g(d);
        launch_spin_until(release_, gen, stream(d), d);
      }
    for (int i = 0; i < s.iters; ++i) {
      { DeviceGuard g(s.src); P2P_CUDA(cudaEventRecord(a[static_cast<std::size_t>(i)].get(), stream(s.src)), s.src); }
      one();
      { DeviceGuard g(s.src); P2P_CUDA(cudaEventRecord(b[static_cast<std::size_t>(i)].get(), stream(s.src)), s.src); }
    }
    *release_ = gen;
    sync(s.src);
    sync(s.dst);
    for (int i = 0; i < s.iters; ++i) {
      const double ns = elapsed_ms(a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)]) * 1e6;
      r.elapsed_ns.push_back(lat ? ns / rounds / 2.0 : ns);
      if (bidir) {
        r.reverse_elapsed_ns.push_back(ns);
        r.total_elapsed_ns.push_back(ns);
      }
    }
    r.note = lat ? fmt::format("ncclSend/ncclRecv ping-pong, {} round trips per sample, one-way = rtt/2", rounds)
                 : bidir ? "ncclSend/ncclRecv both ways in one group: each direction's time is the group's"
                         : "ncclSend/ncclRecv in one group, events on the sender's stream";
    if (!hold) r.note += ", no blocking start (too many queued ops)";
    return r;
  }

  OpTiming run_blocking(int src, int dst, std::uint64_t bytes) override {
    check_prepared(src, dst, bytes);
    if (src == dst) throw UsageError("nccl: source and destination are the same GPU");
    Event a = make_event(src), b = make_event(src);
    OpTiming t;
    t.host_start_ns = monotonic_ns();
    { DeviceGuard g(src); P2P_CUDA(cudaEventRecord(a.get(), stream(src)), src); }
    exchange(src, dst, bytes, false);
    join(src, dst);
    { DeviceGuard g(src); P2P_CUDA(cudaEventRecord(b.get(), stream(src)), src); }
    sync(src);
    t.host_end_ns = monotonic_ns();
    t.device_duration_ns = elapsed_ms(a, b) * 1e6;
    return t;
  }

  // `count` transfers back to back behind a blocking start on both streams, as the
  // ranks backend times a batch (nccl_ranks_backend.cpp), so that one process and one
  // process per GPU measure the same thing for the same plan. Stamps: the source's timer.
  OpTiming run_blocking_batch(int src, int dst, std::uint64_t bytes, int count) override {
    check_prepared(src, dst, bytes);
    if (src == dst) throw UsageError("nccl: source and destination are the same GPU");
    if (count < 1) throw UsageError("a batch needs at least one transfer");
    if (!stamps_.get()) stamps_ = pinned_alloc(64);
    auto* stamps = static_cast<unsigned long long*>(stamps_.get());
    stamps[0] = stamps[1] = 0;
    auto& x = dev_[static_cast<std::size_t>(src)];
    if (!x.blk_a.get()) {
      x.blk_a = make_event(src);
      x.blk_b = make_event(src);
    }
    // The first transfer of a size on a pair runs alone, unheld (NCCL connects and loads
    // its kernels then, which must not happen behind the spin kernel).
    if (warmed_.insert({src, dst, bytes}).second) {
      exchange(src, dst, bytes, false);
      join(src, dst);
      sync(src);
      sync(dst);
    }
    const bool hold = nccl::sample_shape(Pattern::unidirectional).hold(count);
    const int gen = ++generation_;
    OpTiming t;
    t.host_start_ns = monotonic_ns();
    if (hold)
      for (int d : {src, dst}) {
        DeviceGuard g(d);
        launch_spin_until(release_, gen, stream(d), d);
      }
    {
      DeviceGuard g(src);
      launch_globaltimer(stamps, stream(src), src);
      P2P_CUDA(cudaEventRecord(x.blk_a.get(), stream(src)), src);
    }
    for (int i = 0; i < count; ++i) exchange(src, dst, bytes, false);
    join(src, dst);
    {
      DeviceGuard g(src);
      P2P_CUDA(cudaEventRecord(x.blk_b.get(), stream(src)), src);
      launch_globaltimer(stamps + 1, stream(src), src);
    }
    *release_ = gen;
    sync(src);
    sync(dst);
    t.host_end_ns = monotonic_ns();
    t.device_duration_ns = elapsed_ms(x.blk_a, x.blk_b) * 1e6;
    t.device_start_ns = static_cast<std::int64_t>(stamps[0]);
    t.device_end_ns = static_cast<std::int64_t>(stamps[1]);
    return t;
  }

  std::int64_t verify(int src, int dst, std::uint64_t bytes) override {
    check_prepared(src, dst, bytes);
    auto& x = dev_[static_cast<std::size_t>(dst)];
    DeviceGuard g(dst);
    return first_bad_offset(x.recv.get(), bytes, src, x.scratch.get(), x.s.get(), dst);
  }

 private:
  struct Dev {
    DeviceBuffer send, recv, scratch;
    Stream s;
    Event done, blk_a, blk_b;
  };
  cudaStream_t stream(int d) const { return dev_[static_cast<std::size_t>(d)].s.get(); }
  void sync(int d) const {
    DeviceGuard g(d);
    P2P_CUDA(cudaStreamSynchronize(stream(d)), d);
  }
  // src sends to dst (and, with both, dst to src) in one NCCL group.
  void exchange(int src, int dst, std::uint64_t n, bool both) {
    const int rs = comms_->rank_of(src), rd = comms_->rank_of(dst);
    P2P_NCCL(ncclGroupStart(), src);
    P2P_NCCL(ncclSend(dev_[static_cast<std::size_t>(src)].send.get(), n, ncclInt8, rd, comms_->at(static_cast<std::size_t>(rs)), stream(src)), src);
    P2P_NCCL(ncclRecv(dev_[static_cast<std::size_t>(dst)].recv.get(), n, ncclInt8, rs, comms_->at(static_cast<std::size_t>(rd)), stream(dst)), dst);
    if (both) {
      P2P_NCCL(ncclSend(dev_[static_cast<std::size_t>(dst)].send.get(), n, ncclInt8, rs, comms_->at(static_cast<std::size_t>(rd)), stream(dst)), dst);
      P2P_NCCL(ncclRecv(dev_[static_cast<std::size_t>(src)].recv.get(), n, ncclInt8, rd, comms_->at(static_cast<std::size_t>(rs)), stream(src)), src);
    }
    P2P_NCCL(ncclGroupEnd(), src);
  }
  // The sender's stream waits for the receiver's, so its end event means "received".
  void join(int src, int dst) {
    auto& y = dev_[static_cast<std::size_t>(dst)];
    { DeviceGuard g(dst); P2P_CUDA(cudaEventRecord(y.done.get(), y.s.get()), dst); }
    DeviceGuard g(src);
    P2P_CUDA(cudaStreamWaitEvent(stream(src), y.done.get(), 0), src);
  }
  void check_device(int d) const {
    if (d < 0 || d >= gpus_)
      throw UsageError(fmt::format("GPU {} does not exist: backend nccl sees {} GPU(s), numbered 0-{}", d, gpus_, gpus_ - 1));
  }
  void check_prepared(int src, int dst, std::uint64_t bytes) const {
    for (int d : {src, dst}) {
      check_device(d);
      if (!comms_ || comms_->rank_of(d) < 0) throw UsageError(fmt::format("GPU {} was not prepared: call prepare() with it first", d));
    }
    if (bytes > max_bytes_) throw UsageError(fmt::format("{} is more than the {} prepared", format_size(bytes), format_size(max_bytes_)));
  }

  BackendOptions opts_;
  int gpus_ = 0;
  int generation_ = 0;
  PinnedBuffer flag_, stamps_;
  volatile int* release_ = nullptr;
  std::vector<Dev> dev_;  // declared before comms_: communicators go first
  std::unique_ptr<nccl::Comms> comms_;
  std::uint64_t max_bytes_ = 0;
  std::set<std::tuple<int, int, std::uint64_t>> warmed_;  // (src, dst, bytes) transferred once already
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(const BackendOptions& opts) { return std::make_unique<NcclBackend>(opts); }

}  // namespace p2pscope::bench
