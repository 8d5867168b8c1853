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
// A rank that dies must not leave the others spinning in a GPU wait: a watchdog
// thread watches NCCL's asynchronous error and the bootstrap's sockets during every
// wait and aborts the communicator, with an error naming what happened.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/kernels.hpp"
#include "transport/nccl/nccl_util.hpp"

namespace p2pscope::bench {
namespace {
using namespace cuda;

constexpr double kWaitLimitS = 600;  // a GPU wait with live peers but no progress

std::string pack(const std::vector<double>& v) { return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double)}; }
std::vector<double> unpack(const std::string& s) {
  std::vector<double> v(s.size() / sizeof(double));
  if (!v.empty()) std::memcpy(v.data(), s.data(), v.size() * sizeof(double));
  return v;
}

class NcclRanksBackend final : public Backend {
 public:
  explicit NcclRanksBackend(const BackendOptions& o) : boot_(o.bootstrap), rank_(boot_->rank()), size_(boot_->size()) {
    nlohmann::json me;
    // NCCL tells hosts apart by NCCL_HOSTID when set (else the host name): so must the
    // duplicate-GPU check, or two "hosts" sharing one GPU on purpose would be refused.
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const char* host_id = std::getenv("NCCL_HOSTID");
    me["host"] = host_id && *host_id ? fmt::format("{} (NCCL_HOSTID={})", host, host_id) : std::string(host);
    int visible = 0;
    if (const cudaError_t e = cudaGetDeviceCount(&visible); e != cudaSuccess || visible == 0) {
      cudaGetLastError();
      me["error"] = std::string("no usable GPU (") + (e == cudaSuccess ? "the driver sees none" : cudaGetErrorString(e)) + ")";
    } else {
      gpu_ = (o.rank_device >= 0 ? o.rank_device : rank_) % visible;
      cudaDeviceProp p{};
      char bus[32] = {};
      cudaGetDeviceProperties(&p, gpu_);
      cudaDeviceGetPCIBusId(bus, sizeof bus, gpu_);
      me["gpu"] = gpu_;
      me["name"] = p.name;
      me["bus"] = bus;
    }
    const auto all = boot_->allgather(me.dump());
    for (int r = 0; r < size_; ++r) {
      const auto j = nlohmann::json::parse(all[static_cast<std::size_t>(r)]);
      if (j.contains("error")) throw Error(fmt::format("backend nccl: rank {} on {}: {}", r, j.value("host", "?"), j.value("error", "")));
      for (int q = 0; q < r; ++q)
        if (peers_[static_cast<std::size_t>(q)]["host"] == j["host"] && peers_[static_cast<std::size_t>(q)]["bus"] == j["bus"])
          throw UsageError(fmt::format("backend nccl: ranks {} and {} both use GPU {} on {}: NCCL needs one rank per GPU "
                                       "(start at most as many processes per host as it has GPUs)",
                                       q, r, j.value("bus", "?"), j.value("host", "?")));
      peers_.push_back(j);
    }
    P2P_CUDA(cudaSetDevice(gpu_), gpu_);
    flag_ = pinned_alloc(64, gpu_);
    release_ = static_cast<volatile int*>(flag_.get());
    *release_ = 0;
    dog_ = std::thread([this] { watchdog(); });
  }
  ~NcclRanksBackend() override {
    {
      std::lock_guard<std::mutex> lk(dog_m_);
      quit_ = true;
    }
    dog_cv_.notify_all();
    if (dog_.joinable()) dog_.join();
    if (comm_) ncclCommDestroy(comm_);
  }

  std::string name() const override { return "nccl"; }
  int device_count() const override { return size_; }
  std::string device_name(int d) const override {
    check_device(d);
    const auto& j = peers_[static_cast<std::size_t>(d)];
    return fmt::format("rank {} GPU {} ({}, {}, host {})", d, j.value("gpu", -1), j.value("name", "?"), j.value("bus", "?"),
                       j.value("host", "?"));
  }
  PairSupport support(int src, int dst) const override {
    check_device(src);
    check_device(dst);
    if (src == dst) return {false, "source and destination are the same rank"};
    return {};
  }

  void prepare(const std::vector<int>& devices, std::uint64_t max_bytes) override {
    const bool mine = std::find(devices.begin(), devices.end(), rank_) != devices.end();
    const std::string why = mine ? nccl::memory_shortfall(gpu_, max_bytes) : std::string();
    const auto whys = boot_->allgather(why);  // every rank stops with the same error
    for (int r = 0; r < size_; ++r)
      if (!whys[static_cast<std::size_t>(r)].empty()) throw UsageError(fmt::format("rank {}: {}", r, whys[static_cast<std::size_t>(r)]));
    if (!comm_) {
      ncclUniqueId id{};
      if (rank_ == 0) P2P_NCCL(ncclGetUniqueId(&id), gpu_);
      const std::string got = boot_->broadcast(0, std::string(reinterpret_cast<const char*>(&id), sizeof id));
      std::memcpy(&id, got.data(), std::min(got.size(), sizeof id));
      preload_kernels(gpu_);  // the spin kernel must not load lazily behind NCCL's
      P2P_NCCL(ncclCommInitRank(&comm_, size_, id, rank_), gpu_);
    }
    prepared_ = devices;
    max_bytes_ = max_bytes;
    if (!mine) return;
    send_ = device_alloc(gpu_, max_bytes);
    recv_ = device_alloc(gpu_, max_bytes);
    scratch_ = device_alloc(gpu_, 64);
    ensure_stream();
    launch_fill(send_.get(), max_bytes, rank_, stream_.get(), gpu_);  // the pattern of device number = rank
    P2P_CUDA(cudaMemsetAsync(recv_.get(), 0xA5, max_bytes, stream_.get()), gpu_);
    wait("filling the buffers");
  }

  BatchResult run_batch(const BatchSpec& s) override {
    BatchResult r;
    r.support = support(s.src, s.dst);
    if (!r.support.ok) return r;
    check_prepared(s.src, s.dst, s.bytes);
    const bool lat = s.pattern == Pattern::latency, bidir = s.pattern == Pattern::bidirectional;
    const int rounds = lat ? 100 : 1;
    const bool part = rank_ == s.src || rank_ == s.dst;
    const int peer = rank_ == s.src ? s.dst : s.src;
    auto one = [&] {
      for (int k = 0; k < rounds; ++k) side(s, peer);
    };
    std::vector<Event> a, b;
    const bool hold = static_cast<long>(s.iters) * rounds * 2 < 600;
    const int gen = ++generation_;
    if (part) {
      for (int i = 0; i < std::max(1, s.warmup); ++i) one();  // also loads NCCL's kernels
      wait("warmup");
      for (int i = 0; i < s.iters; ++i) a.push_back(make_event(gpu_)), b.push_back(make_event(gpu_));
      if (hold) launch_spin_until(release_, gen, stream_.get(), gpu_);
      for (int i = 0; i < s.iters; ++i) {
        P2P_CUDA(cudaEventRecord(a[static_cast<std::size_t>(i)].get(), stream_.get()), gpu_);
        one();
        P2P_CUDA(cudaEventRecord(b[static_cast<std::size_t>(i)].get(), stream_.get()), gpu_);
      }
    }
    boot_->barrier();  // both sides' work is queued: start them together
    std::vector<double> mine;
    if (part) {
      *release_ = gen;
      wait(fmt::format("{} {} -> {}", to_string(s.pattern), s.src, s.dst));
      for (int i = 0; i < s.iters; ++i) mine.push_back(elapsed_ms(a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)]) * 1e6);
    }
    const auto all = boot_->allgather(pack(mine));
    const auto S = unpack(all[static_cast<std::size_t>(s.src)]), D = unpack(all[static_cast<std::size_t>(s.dst)]);
    for (std::size_t i = 0; i < S.size() && i < D.size(); ++i) {
      if (lat) {
        r.elapsed_ns.push_back(S[i] / rounds / 2.0);
      } else if (bidir) {
        r.elapsed_ns.push_back(S[i]);
        r.reverse_elapsed_ns.push_back(D[i]);
        r.total_elapsed_ns.push_back(std::max(S[i], D[i]));
      } else {
        r.elapsed_ns.push_back(std::max(S[i], D[i]));
      }
    }
    r.note = fmt::format("one process per GPU ({} ranks); ", size_) +
             (lat ? fmt::format("ncclSend/ncclRecv ping-pong timed on rank {}, {} round trips per sample, one-way = rtt/2", s.src, rounds)
              : bidir ? "ncclSend+ncclRecv in one group on each rank; each direction timed on its sender, total = the later"
                      : "ncclSend / ncclRecv, each side event-timed; a sample is the later of the two");
    if (!hold) r.note += ", no blocking start (too many queued ops)";
    return r;
  }

  OpTiming run_blocking(int src, int dst, std::uint64_t bytes) override {
    check_prepared(src, dst, bytes);
    if (src == dst) throw UsageError("nccl: source and destination are the same rank");
    BatchSpec s;
    s.src = src;
    s.dst = dst;
    s.bytes = bytes;
    boot_->barrier();
    OpTiming t;
    nlohmann::json mine = {{"host_ns", 0}, {"dev_ns", 0.0}};
    t.host_start_ns = monotonic_ns();
    if (rank_ == src || rank_ == dst) {
      Event a = make_event(gpu_), b = make_event(gpu_);
      P2P_CUDA(cudaEventRecord(a.get(), stream_.get()), gpu_);
      side(s, rank_ == src ? dst : src);
      P2P_CUDA(cudaEventRecord(b.get(), stream_.get()), gpu_);
      wait("a blocking transfer");
      mine = {{"host_ns", monotonic_ns() - t.host_start_ns}, {"dev_ns", elapsed_ms(a, b) * 1e6}};
    }
    // Host clocks of different hosts do not compare: durations do.
    const auto all = boot_->allgather(mine.dump());
    std::int64_t host_ns = 0;
    double dev_ns = 0;
    for (int r : {src, dst}) {
      const auto j = nlohmann::json::parse(all[static_cast<std::size_t>(r)]);
      host_ns = std::max(host_ns, j.value("host_ns", std::int64_t{0}));
      dev_ns = std::max(dev_ns, j.value("dev_ns", 0.0));
    }
    t.host_end_ns = t.host_start_ns + host_ns;
    t.device_duration_ns = dev_ns;
    return t;
  }

  // Collective: the device's own rank reads its GPU timer and tells everyone. The
  // host times are that rank's CLOCK_MONOTONIC: comparable with rank 0's on one host.
  TimerReading read_device_timer(int device) override {
    check_device(device);
    nlohmann::json mine;
    if (device == rank_) {
      ensure_stream();
      auto* ts = static_cast<unsigned long long*>(flag_.get()) + 4;
      TimerReading r;
      r.host_before_ns = monotonic_ns();
      launch_globaltimer(ts, stream_.get(), gpu_);
      P2P_CUDA(cudaStreamSynchronize(stream_.get()), gpu_);
      r.host_after_ns = monotonic_ns();
      r.device_ns = static_cast<std::int64_t>(ts[0]);
      mine = {{"device_ns", r.device_ns}, {"before", r.host_before_ns}, {"after", r.host_after_ns}};
    }
    const auto j = nlohmann::json::parse(boot_->broadcast(device, mine.dump()));
    return {j.value("device_ns", std::int64_t{-1}), j.value("before", std::int64_t{0}), j.value("after", std::int64_t{0})};
  }

  // Collective, and it heats every rank's GPU, not only `device`'s: the warm-up calls
  // it from one thread per device, and the calls take turns on the bootstrap, so
  // heating only the named GPU would leave each GPU idle most of the time. Extra heat
  // for a GPU already warm does not matter to a warm-up.
  void busy_compute(int device, double seconds) override {
    check_device(device);
    heat_own_gpu(seconds);
    boot_->barrier();
  }

  std::int64_t verify(int src, int dst, std::uint64_t bytes) override {
    check_prepared(src, dst, bytes);
    long long out = LLONG_MAX;
    if (rank_ == dst) {
      const long long init = LLONG_MAX;
      auto* bad = static_cast<long long*>(scratch_.get());
      P2P_CUDA(cudaMemcpyAsync(bad, &init, sizeof init, cudaMemcpyHostToDevice, stream_.get()), gpu_);
      launch_verify(recv_.get(), bytes, src, bad, stream_.get(), gpu_);
      P2P_CUDA(cudaMemcpyAsync(&out, bad, sizeof out, cudaMemcpyDeviceToHost, stream_.get()), gpu_);
      wait("the data check");
    }
    out = std::stoll(boot_->broadcast(dst, std::to_string(out)));
    return out == LLONG_MAX ? -1 : out;
  }

 private:
  void heat_own_gpu(double seconds) {
    ensure_stream();
    if (!heat_.get()) heat_ = device_alloc(gpu_, 64 << 10);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu_);
    const auto end = monotonic_ns() + static_cast<std::int64_t>(seconds * 1e9);
    while (monotonic_ns() < end) {
      for (int i = 0; i < 20; ++i) launch_fma(static_cast<float*>(heat_.get()), std::max(1, sms) * 8, 4, stream_.get(), gpu_);
      P2P_CUDA(cudaStreamSynchronize(stream_.get()), gpu_);
    }
  }


  // This rank's half of one transfer between it and `peer` (src sends, dst receives;
  // bidirectional: both in one group; latency: the sender's ping and the answer).
  void side(const BatchSpec& s, int peer) {
    const std::size_t n = s.bytes;
    const bool src = rank_ == s.src;
    if (s.pattern == Pattern::bidirectional) {
      P2P_NCCL(ncclGroupStart(), gpu_);
      P2P_NCCL(ncclSend(send_.get(), n, ncclInt8, peer, comm_, stream_.get()), gpu_);
      P2P_NCCL(ncclRecv(recv_.get(), n, ncclInt8, peer, comm_, stream_.get()), gpu_);
      P2P_NCCL(ncclGroupEnd(), gpu_);
      return;
    }
    const bool pong = s.pattern == Pattern::latency;
    if (src) {
      P2P_NCCL(ncclSend(send_.get(), n, ncclInt8, peer, comm_, stream_.get()), gpu_);
      if (pong) P2P_NCCL(ncclRecv(recv_.get(), n, ncclInt8, peer, comm_, stream_.get()), gpu_);
    } else {
      P2P_NCCL(ncclRecv(recv_.get(), n, ncclInt8, peer, comm_, stream_.get()), gpu_);
      if (pong) P2P_NCCL(ncclSend(send_.get(), n, ncclInt8, peer, comm_, stream_.get()), gpu_);
    }
  }

  // Waits for this rank's stream the way the one-process backend does (a plain
  // synchronize: a polling loop here measured 4 ms per small op when mpirun bound the
  // rank to one core, starving NCCL's proxy thread). A dead peer or an NCCL error
  // would leave that synchronize spinning forever, so a watchdog thread checks NCCL's
  // asynchronous error and the bootstrap's sockets meanwhile and aborts the
  // communicator, which ends the NCCL kernels and so the wait.
  void wait(const std::string& what) {
    {
      std::lock_guard<std::mutex> lk(dog_m_);
      armed_ = true;
      armed_at_ns_ = monotonic_ns();
    }
    dog_cv_.notify_all();
    const cudaError_t e = cudaStreamSynchronize(stream_.get());
    std::string why;
    {
      std::lock_guard<std::mutex> lk(dog_m_);
      armed_ = false;
      why = std::exchange(dog_why_, std::string());
    }
    if (!why.empty())
      throw Error(fmt::format("backend nccl, rank {} (GPU {}): {} during {}; the NCCL communicator was aborted", rank_, gpu_, why, what));
    P2P_CUDA(e, gpu_);
  }

  void watchdog() {
    std::unique_lock<std::mutex> lk(dog_m_);
    while (!quit_) {
      dog_cv_.wait_for(lk, std::chrono::milliseconds(10));
      if (!armed_ || !comm_) continue;
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      std::string why;
      if (async != ncclSuccess && async != ncclInProgress) why = std::string("NCCL reported: ") + ncclGetErrorString(async);
      else if (!boot_->peers_alive()) why = "a peer rank is gone (its process ended or was killed)";
      else if (monotonic_ns() - armed_at_ns_ > static_cast<std::int64_t>(kWaitLimitS * 1e9))
        why = fmt::format("no progress in {:.0f} s", kWaitLimitS);
      if (why.empty()) continue;
      ncclCommAbort(std::exchange(comm_, nullptr));
      dog_why_ = why;
      armed_ = false;
    }
  }

  // The stream may be needed before prepare() (timer, warm-up), from several threads.
  void ensure_stream() {
    std::lock_guard<std::mutex> lk(stream_m_);
    if (!stream_.get()) stream_ = make_stream(gpu_);
  }

  void check_device(int d) const {
    if (d < 0 || d >= size_)
      throw UsageError(fmt::format("rank {} does not exist: this run has {} rank(s), one GPU each, numbered 0-{}", d, size_, size_ - 1));
  }
  void check_prepared(int src, int dst, std::uint64_t bytes) const {
    for (int d : {src, dst}) {
      check_device(d);
      if (!comm_ || std::find(prepared_.begin(), prepared_.end(), d) == prepared_.end())
        throw UsageError(fmt::format("rank {} was not prepared: call prepare() with it first", d));
    }
    if (bytes > max_bytes_) throw UsageError(fmt::format("{} is more than the {} prepared", format_size(bytes), format_size(max_bytes_)));
  }

  std::shared_ptr<Bootstrap> boot_;
  int rank_, size_;
  int gpu_ = 0;
  std::vector<nlohmann::json> peers_;  // per rank: host, gpu, name, bus
  int generation_ = 0;
  PinnedBuffer flag_;
  volatile int* release_ = nullptr;
  DeviceBuffer send_, recv_, scratch_, heat_;
  Stream stream_;
  std::mutex stream_m_;
  std::vector<int> prepared_;
  std::uint64_t max_bytes_ = 0;
  ncclComm_t comm_ = nullptr;  // destroyed in ~, before any member (the buffers) goes
  // The watchdog (see wait()); comm_ is aborted by it, under dog_m_, only while armed_.
  std::thread dog_;
  std::mutex dog_m_;
  std::condition_variable dog_cv_;
  bool armed_ = false, quit_ = false;
  std::int64_t armed_at_ns_ = 0;
  std::string dog_why_;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_ranks_backend(const BackendOptions& opts) {
  return std::make_unique<NcclRanksBackend>(opts);
}

}  // namespace p2pscope::bench
