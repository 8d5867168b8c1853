// The nccl backend with one process per GPU, as mpirun, srun or torchrun launch it
// (`mpirun -np 2 p2pscope bench gpu --backend nccl`). Device numbers are ranks. Each
// rank drives its own GPU; the bootstrap carries the NCCL unique id, a barrier
// before every timed region, and each side's samples to every rank, so all ranks
// return the same results and rank 0 reports them.
//
// Timing: each side records events on its own stream around every iteration, its
// work held behind a spin kernel until all of it is queued and every rank has passed
// the barrier (the blocking start). A one-way sample is the later of the sender's
// and the receiver's durations: the transfer is done when both sides are.
//
// A rank that dies must not leave the others spinning in a GPU wait: every wait
// goes through RankComm, whose watchdog aborts the communicator (rank_comm.hpp).
#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/bounded_json.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/rank_record.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/device_clock.hpp"
#include "transport/cuda/kernels.hpp"
#include "transport/nccl/nccl_util.hpp"
#include "transport/nccl/rank_comm.hpp"
#include "bench/pair_support.hpp"
#include "bench/rank_op.hpp"

namespace p2pscope::bench {
namespace {
using namespace cuda;

std::string pack(const std::vector<double>& v) { return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double)}; }
std::vector<double> unpack(const std::string& s) {
  std::vector<double> v(s.size() / sizeof(double));
  if (!v.empty()) std::memcpy(v.data(), s.data(), v.size() * sizeof(double));
  return v;
}

class NcclRanksBackend final : public Backend, public DeviceTimer, public Heater {
 public:
  explicit NcclRanksBackend(const BackendOptions& o)
      : rc_(std::make_unique<nccl::RankComm>(o.bootstrap, o.rank_device, "backend nccl")),
        rank_(rc_->rank()), size_(rc_->size()), gpu_(rc_->gpu()) {
    flag_ = pinned_alloc(64, gpu_);
    clock_ = pinned_alloc(kClockWords * 8, gpu_);
    stamps_ = pinned_alloc(64, gpu_);
    release_ = static_cast<volatile int*>(flag_.get());
    *release_ = 0;
  }

  std::string name() const override { return "nccl"; }
  int device_count() const override { return size_; }
  std::string device_name(int d) const override {
    check_device(d);
    return rc_->describe(d);
  }
  DeviceLocation device_location(int d) const override {
    check_device(d);
    const auto& j = rc_->peer(d);
    const std::string host = j.value("hostname", "");
    return {true, host == rc_->peer(rank_).value("hostname", ""), host, j.value("bus", "")};
  }
  PairSupport support(int src, int dst) const override {
    return distinct_pair(src, dst, [this](int d) { check_device(d); }, "rank");
  }

  void prepare(const std::vector<int>& devices, std::uint64_t max_bytes) override {
    const bool mine = std::find(devices.begin(), devices.end(), rank_) != devices.end();
    const std::string why = mine ? nccl::memory_shortfall(gpu_, max_bytes) : std::string();
    rc_->agree_or_throw(why);  // every rank stops with the same error
    rc_->init_comm();
    prepared_ = devices;
    max_bytes_ = max_bytes;
    if (!mine) return;
    send_ = device_alloc(gpu_, max_bytes);
    recv_ = device_alloc(gpu_, max_bytes);
    scratch_ = device_alloc(gpu_, 64);
    meet_ = device_alloc(gpu_, 64);
    blk_a_ = make_event(gpu_);
    blk_b_ = make_event(gpu_);
    launch_fill(send_.get(), max_bytes, rank_, stream(), gpu_);  // the pattern of device number = rank
    P2P_CUDA(cudaMemsetAsync(recv_.get(), 0xA5, max_bytes, stream()), gpu_);
    wait("filling the buffers");
  }

  BatchResult run_batch(const BatchSpec& s) override {
    BatchResult r;
    if (!start_batch(*this, s, r, [this](int a, int b, std::uint64_t n) { check_prepared(a, b, n); })) return r;
    const nccl::SampleShape shape = nccl::sample_shape(s.pattern);
    const bool part = rank_ == s.src || rank_ == s.dst;
    const int peer = rank_ == s.src ? s.dst : s.src;
    auto one = [&] {
      for (int k = 0; k < shape.rounds; ++k) side(s, peer);
    };
    std::vector<Event> a, b;
    const bool hold = shape.hold(s.iters);
    const int gen = ++generation_;
    const std::string what = fmt::format("{} {} -> {}", to_string(s.pattern), s.src, s.dst);
    if (part) {
      rc_->queue("the warmup of " + what, [&] {
        for (int i = 0; i < std::max(1, s.warmup); ++i) one();  // also loads NCCL's kernels
      });
      wait("warmup");
      for (int i = 0; i < s.iters; ++i) a.push_back(make_event(gpu_)), b.push_back(make_event(gpu_));
      if (hold) launch_spin_until(release_, gen, stream(), gpu_);
      rc_->queue(what, [&] {
        for (int i = 0; i < s.iters; ++i) {
          P2P_CUDA(cudaEventRecord(a[static_cast<std::size_t>(i)].get(), stream()), gpu_);
          one();
          P2P_CUDA(cudaEventRecord(b[static_cast<std::size_t>(i)].get(), stream()), gpu_);
        }
      });
    }
    rc_->boot().barrier();  // both sides' work is queued: start them together
    std::vector<double> mine;
    if (part) {
      *release_ = gen;
      wait(what);
      for (int i = 0; i < s.iters; ++i) mine.push_back(elapsed_ms(a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)]) * 1e6);
    }
    // A rank's samples: exactly --iters doubles from each side (a stranger's frame is
    // refused by its size, not read as samples).
    const std::string timings = "the timings of " + what;
    const std::size_t want = static_cast<std::size_t>(std::max(0, s.iters)) * sizeof(double);
    const auto all = rc_->boot().allgather_bounded(pack(mine), static_cast<std::uint32_t>(want), timings);
    for (const int r : {s.src, s.dst})
      rank_part_size(all[static_cast<std::size_t>(r)], r, timings, want);
    const auto S = unpack(all[static_cast<std::size_t>(s.src)]), D = unpack(all[static_cast<std::size_t>(s.dst)]);
    for (std::size_t i = 0; i < S.size() && i < D.size(); ++i) {
      if (shape.lat) {
        r.elapsed_ns.push_back(S[i] / shape.rounds / 2.0);
      } else if (shape.bidir) {
        r.elapsed_ns.push_back(S[i]);
        r.reverse_elapsed_ns.push_back(D[i]);
        r.total_elapsed_ns.push_back(std::max(S[i], D[i]));
      } else {
        r.elapsed_ns.push_back(std::max(S[i], D[i]));
      }
    }
    r.note = fmt::format("one process per GPU ({} ranks); ", size_) +
             (shape.lat ? fmt::format("ncclSend/ncclRecv ping-pong timed on rank {}, {} round trips per sample, one-way = rtt/2", s.src, shape.rounds)
              : shape.bidir ? "ncclSend+ncclRecv in one group on each rank; each direction timed on its sender, total = the later"
                      : "ncclSend / ncclRecv, each side event-timed; a sample is the later of the two");
    if (!hold) r.note += ", no blocking start (too many queued ops)";
    return r;
  }

  OpTiming run_blocking(int src, int dst, std::uint64_t bytes) override { return run_blocking_batch(src, dst, bytes, 1); }

  // Collective. The two sides meet on the GPUs (meet()), not over the bootstrap: one
  // allgather per batch is all the control traffic (rank_op.hpp). Each side queues
  // behind a spin kernel: a timer read, `count` transfers between two events, a timer
  // read; the device duration is the later side's, the stamps the source's timer.
  OpTiming run_blocking_batch(int src, int dst, std::uint64_t bytes, int count) override {
    check_prepared(src, dst, bytes);
    if (src == dst) throw UsageError("nccl: source and destination are the same rank");
    if (count < 1) throw UsageError("a batch needs at least one transfer");
    BatchSpec s;
    s.src = src;
    s.dst = dst;
    s.bytes = bytes;
    return op_among_ranks(rc_->boot(), src, dst, clock_device(src, dst), [&] {
      const int peer = rank_ == src ? dst : src;
      auto* stamps = static_cast<unsigned long long*>(stamps_.get());
      stamps[0] = stamps[1] = 0;
      // The first transfer of a size with a peer runs alone, unheld: NCCL connects and
      // loads its kernels then, which must not happen behind the spin kernel. Both sides
      // see the first use at the same op.
      if (warmed_.insert({peer, bytes}).second) {
        rc_->queue(fmt::format("the first transfer {} -> {}", src, dst), [&] {
          meet(peer);
          side(s, peer);
        });
        wait("the first transfer");
      }
      const bool hold = nccl::sample_shape(Pattern::unidirectional).hold(count);
      const int gen = ++generation_;
      SideTiming me;
      me.host_start_ns = monotonic_ns();
      rc_->queue(fmt::format("a batch of {} {} -> {}", count, src, dst), [&] {
        if (hold) launch_spin_until(release_, gen, stream(), gpu_);
        meet(peer);
        launch_globaltimer(stamps, stream(), gpu_);
        P2P_CUDA(cudaEventRecord(blk_a_.get(), stream()), gpu_);
        for (int i = 0; i < count; ++i) side(s, peer);
        P2P_CUDA(cudaEventRecord(blk_b_.get(), stream()), gpu_);
        launch_globaltimer(stamps + 1, stream(), gpu_);
      });
      *release_ = gen;
      wait("a blocking transfer");
      me.host_end_ns = monotonic_ns();
      me.device_ns = elapsed_ms(blk_a_, blk_b_) * 1e6;
      me.device_start_ns = static_cast<std::int64_t>(stamps[0]);
      me.device_end_ns = static_cast<std::int64_t>(stamps[1]);
      return me;
    });
  }

  DeviceTimer* device_timer() override { return this; }
  Heater* heater() override { return this; }

  // Collective: the device's own rank reads its GPU timer and tells everyone. The
  // host times are that rank's CLOCK_MONOTONIC: comparable with rank 0's on one host.
  TimerReading read_device_timer(int device) override {
    check_device(device);
    nlohmann::json mine;
    if (device == rank_) {
        auto* ts = static_cast<unsigned long long*>(flag_.get()) + 4;
      TimerReading r;
      r.host_before_ns = monotonic_ns();
      launch_globaltimer(ts, stream(), gpu_);
      P2P_CUDA(cudaStreamSynchronize(stream()), gpu_);
      r.host_after_ns = monotonic_ns();
      r.device_ns = static_cast<std::int64_t>(ts[0]);
      mine = {{"device_ns", r.device_ns}, {"before", r.host_before_ns}, {"after", r.host_after_ns}};
    }
    const std::string what = "a device timer reading";
    const auto j = rank_record(rc_->boot().broadcast(device, mine.dump()), device, what, 4096);
    rank_fields_typed(j, device, what, {}, {"device_ns", "before", "after"});
    return {j.value("device_ns", std::int64_t{-1}), j.value("before", std::int64_t{0}), j.value("after", std::int64_t{0})};
  }

  // Collective: the device's own rank pokes its GPU's timer (device_clock.hpp) and
  // tells everyone. Host times are that rank's CLOCK_MONOTONIC (shared on one host).
  TimerBurst read_device_timer_burst(int device, int count) override {
    check_device(device);
    nlohmann::json mine;
    if (device == rank_) {
      const TimerBurst b = poke_device_timer(gpu_, stream(), static_cast<volatile unsigned long long*>(clock_.get()), count);
      nlohmann::json r = nlohmann::json::array();
      for (const auto& x : b.readings) r.push_back({x.device_ns, x.host_before_ns, x.host_after_ns});
      mine = {{"step", b.step_ns}, {"method", b.method}, {"note", b.note}, {"readings", r}};
    }
    const std::string what = "a burst of device timer readings";
    const std::string text = rc_->boot().broadcast(device, mine.dump());
    JsonLimits limits;  // readings are [device, before, after] triples: one level deeper than a record
    limits.max_bytes = 16u << 20;
    limits.max_depth = 3;
    limits.max_elements = 1u << 20;
    const BoundedJson bj = parse_json_bounded(text, limits);
    if (!bj.ok() || !bj.value.is_object())
      throw UsageError(rank_refusal(device, what, fmt::format("{} bytes that are no JSON record", text.size())));
    const nlohmann::json& j = bj.value;
    rank_fields_typed(j, device, what, {"method", "note"}, {"step"});
    TimerBurst out;
    out.step_ns = j.value("step", std::int64_t{0});
    out.method = external_text(j.value("method", std::string()), 200);
    out.note = external_text(j.value("note", std::string()), 500);
    const auto readings = j.find("readings");
    if (readings != j.end() && !readings->is_array())
      throw UsageError(rank_refusal(device, what, "a record whose 'readings' is not a list"));
    for (const auto& x : readings == j.end() ? nlohmann::json::array() : *readings) {
      if (!x.is_array() || x.size() != 3 || !x[0].is_number_integer() || !x[1].is_number_integer() ||
          !x[2].is_number_integer())
        throw UsageError(rank_refusal(device, what, "a reading that is not three whole numbers"));
      out.readings.push_back({x[0].get<std::int64_t>(), x[1].get<std::int64_t>(), x[2].get<std::int64_t>()});
    }
    return out;
  }

  // Collective, and it heats every rank's GPU, not only `device`'s: the warm-up calls
  // it from one thread per device, and the calls take turns on the bootstrap, so
  // heating only the named GPU would leave each GPU idle most of the time. Extra heat
  // for a GPU already warm does not matter to a warm-up.
  void busy_compute(int device, double seconds) override {
    check_device(device);
    heat_own_gpu(seconds);
    rc_->boot().barrier();
  }

  std::int64_t verify(int src, int dst, std::uint64_t bytes) override {
    check_prepared(src, dst, bytes);
    long long out = LLONG_MAX;
    if (rank_ == dst) {
      const long long init = LLONG_MAX;
      auto* bad = static_cast<long long*>(scratch_.get());
      P2P_CUDA(cudaMemcpyAsync(bad, &init, sizeof init, cudaMemcpyHostToDevice, stream()), gpu_);
      launch_verify(recv_.get(), bytes, src, bad, stream(), gpu_);
      P2P_CUDA(cudaMemcpyAsync(&out, bad, sizeof out, cudaMemcpyDeviceToHost, stream()), gpu_);
      wait("the data check");
    }
    const std::string got = rc_->boot().broadcast(dst, std::to_string(out));
    // A number in text, as this rank sent its own: std::stoll's invalid_argument was an
    // "internal error" for anything else.
    const bool number = !got.empty() && got.size() <= 20 &&
                        std::all_of(got.begin() + (got[0] == '-' ? 1 : 0), got.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                        got != "-";
    if (!number) throw UsageError(rank_refusal(dst, "the data check's first bad offset", std::to_string(got.size()) + " bytes that are no number"));
    try {
      out = std::stoll(got);
    } catch (const std::out_of_range&) {
      throw UsageError(rank_refusal(dst, "the data check's first bad offset", "a number out of range"));
    }
    return out == LLONG_MAX ? -1 : out;
  }

 private:
  void heat_own_gpu(double seconds) {
    if (!heat_.get()) heat_ = device_alloc(gpu_, 64 << 10);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu_);
    const auto end = monotonic_ns() + static_cast<std::int64_t>(seconds * 1e9);
    while (monotonic_ns() < end) {
      for (int i = 0; i < 20; ++i) launch_fma(static_cast<float*>(heat_.get()), std::max(1, sms) * 8, 4, stream(), gpu_);
      P2P_CUDA(cudaStreamSynchronize(stream()), gpu_);
    }
  }

  // This rank's half of one transfer between it and `peer` (src sends, dst receives;
  // bidirectional: both in one group; latency: the sender's ping and the answer).
  void side(const BatchSpec& s, int peer) {
    const std::size_t n = s.bytes;
    const bool src = rank_ == s.src;
    if (s.pattern == Pattern::bidirectional) {
      P2P_NCCL(ncclGroupStart(), gpu_);
      P2P_NCCL(ncclSend(send_.get(), n, ncclInt8, peer, comm(), stream()), gpu_);
      P2P_NCCL(ncclRecv(recv_.get(), n, ncclInt8, peer, comm(), stream()), gpu_);
      P2P_NCCL(ncclGroupEnd(), gpu_);
      return;
    }
    const bool pong = s.pattern == Pattern::latency;
    if (src) {
      P2P_NCCL(ncclSend(send_.get(), n, ncclInt8, peer, comm(), stream()), gpu_);
      if (pong) P2P_NCCL(ncclRecv(recv_.get(), n, ncclInt8, peer, comm(), stream()), gpu_);
    } else {
      P2P_NCCL(ncclRecv(recv_.get(), n, ncclInt8, peer, comm(), stream()), gpu_);
      if (pong) P2P_NCCL(ncclSend(send_.get(), n, ncclInt8, peer, comm(), stream()), gpu_);
    }
  }

  // 8 bytes each way in one group: it ends on each side only once the other side has
  // started, so the timed part starts on both GPUs within a one-way latency.
  void meet(int peer) {
    auto* m = static_cast<char*>(meet_.get());
    P2P_NCCL(ncclGroupStart(), gpu_);
    P2P_NCCL(ncclSend(m, 8, ncclInt8, peer, comm(), stream()), gpu_);
    P2P_NCCL(ncclRecv(m + 32, 8, ncclInt8, peer, comm(), stream()), gpu_);
    P2P_NCCL(ncclGroupEnd(), gpu_);
  }

  void wait(const std::string& what) { rc_->wait(what); }
  ncclComm_t comm() const { return rc_->comm(); }
  cudaStream_t stream() const { return rc_->stream(); }

  void check_device(int d) const {
    if (d < 0 || d >= size_)
      throw UsageError(fmt::format("rank {} does not exist: this run has {} rank(s), one GPU each, numbered 0-{}", d, size_, size_ - 1));
  }
  void check_prepared(int src, int dst, std::uint64_t bytes) const {
    for (int d : {src, dst}) {
      check_device(d);
      if (!comm() || std::find(prepared_.begin(), prepared_.end(), d) == prepared_.end())
        throw UsageError(fmt::format("rank {} was not prepared: call prepare() with it first", d));
    }
    if (bytes > max_bytes_) throw UsageError(fmt::format("{} is more than the {} prepared", format_size(bytes), format_size(max_bytes_)));
  }

  // First: the fields below are set from it. It is destroyed last, after the
  // buffers, which NCCL holds no reference to between calls.
  std::unique_ptr<nccl::RankComm> rc_;
  int rank_, size_, gpu_;
  int generation_ = 0;
  PinnedBuffer flag_, clock_, stamps_;
  Event blk_a_, blk_b_;
  volatile int* release_ = nullptr;
  DeviceBuffer send_, recv_, scratch_, heat_, meet_;
  std::vector<int> prepared_;
  std::uint64_t max_bytes_ = 0;
  std::set<std::pair<int, std::uint64_t>> warmed_;  // (peer, bytes) transferred once already
};

}  // namespace

std::unique_ptr<Backend> make_nccl_ranks_backend(const BackendOptions& opts) {
  return std::make_unique<NcclRanksBackend>(opts);
}

}  // namespace p2pscope::bench
