// One rank of a one-process-per-GPU NCCL run: GPU choice, peers, communicator and
// the watched stream wait (rank_comm.hpp).
#include "transport/nccl/rank_comm.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "p2pscope/affinity.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/rank_record.hpp"
#include "p2pscope/text.hpp"
#include "transport/cuda/kernels.hpp"
#include "transport/nccl/nccl_util.hpp"

namespace p2pscope::bench::nccl {
namespace {
constexpr double kWaitLimitS = 600;  // a GPU wait with live peers but no progress
constexpr std::uint32_t kGpuRecordBytes = 64u << 10;  // a rank's host, GPU name, bus id, CUDA_VISIBLE_DEVICES
}

RankComm::RankComm(std::shared_ptr<Bootstrap> boot, int rank_device, std::string who)
    : boot_(std::move(boot)), who_(std::move(who)), rank_(boot_->rank()), size_(boot_->size()) {
  nlohmann::json me;
  // NCCL tells hosts apart by NCCL_HOSTID when set (else the host name): so must the
  // duplicate-GPU check, or two "hosts" sharing one GPU on purpose would be refused.
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const char* host_id = std::getenv("NCCL_HOSTID");
  me["host"] = host_id && *host_id ? fmt::format("{} (NCCL_HOSTID={})", host, host_id) : std::string(host);
  me["hostname"] = std::string(host);  // the machine, whatever NCCL is told
  int visible = 0;
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  me["cvd"] = cvd ? std::string(cvd) : std::string("(unset)");
  me["want"] = rank_device >= 0 ? rank_device : rank_;
  if (const cudaError_t e = cudaGetDeviceCount(&visible); e != cudaSuccess || visible == 0) {
    cudaGetLastError();
    me["error"] = std::string("no usable GPU (") + (e == cudaSuccess ? "the driver sees none" : gpu::cuda_error_text(e)) +
                  ") with CUDA_VISIBLE_DEVICES=" + me["cvd"].get<std::string>();
  } else {
    gpu_ = (rank_device >= 0 ? rank_device : rank_) % visible;
    cudaDeviceProp p{};
    char bus[32] = {};
    cudaGetDeviceProperties(&p, gpu_);
    cudaDeviceGetPCIBusId(bus, sizeof bus, gpu_);
    me["gpu"] = gpu_;
    me["visible"] = visible;
    me["name"] = p.name;
    me["bus"] = bus;
  }
  const std::string what = "a GPU record (host, GPU, bus)";
  const auto all = boot_->allgather_bounded(me.dump(), kGpuRecordBytes, what);
  for (int r = 0; r < size_; ++r) {
    // Another rank's bytes (a stranger's, without a token): bounded and typed, never a
    // json exception ("internal error") from value() below (issue 43 item 4).
    auto j = rank_record(all[static_cast<std::size_t>(r)], r, what, kGpuRecordBytes);
    rank_fields_typed(j, r, what, {"host", "bus", "name", "cvd", "error"}, {"gpu", "visible", "want"});
    for (const char* key : {"host", "bus", "name", "cvd", "error"})
      if (j.contains(key)) j[key] = external_text(j[key].get<std::string>(), 256);  // printed below
    if (j.contains("error")) throw Error(fmt::format("{}: rank {} on {}: {}", who_, r, j.value("host", "?"), j.value("error", "")));
    for (int q = 0; q < r; ++q)
      if (peers_[static_cast<std::size_t>(q)]["host"] == j["host"] && peers_[static_cast<std::size_t>(q)]["bus"] == j["bus"])
        throw UsageError(fmt::format(
            "{}: ranks {} and {} both use GPU {} on {}: NCCL needs one rank per GPU (start at most as many "
            "processes per host as it has GPUs). Rank {} wants GPU {} of the {} that CUDA_VISIBLE_DEVICES={} shows it; "
            "rank {} wants GPU {} of the {} that CUDA_VISIBLE_DEVICES={} shows it: a rank's GPU is its local rank "
            "modulo the GPUs it sees, so give each rank its own GPU, or all of them",
            who_, q, r, j.value("bus", "?"), j.value("host", "?"), q, peers_[static_cast<std::size_t>(q)].value("want", -1),
            peers_[static_cast<std::size_t>(q)].value("visible", 0), peers_[static_cast<std::size_t>(q)].value("cvd", "?"),
            r, j.value("want", -1), j.value("visible", 0), j.value("cvd", "?")));
    peers_.push_back(j);
  }
  P2P_CUDA(cudaSetDevice(gpu_), gpu_);
  set_wait_mode();
  dog_ = std::thread([this] { watchdog(); });
}

RankComm::~RankComm() {
  {
    std::lock_guard<std::mutex> lk(dog_m_);
    quit_ = true;
  }
  dog_cv_.notify_all();
  if (dog_.joinable()) dog_.join();
  // A dead peer may leave kernels waiting on it, which a destroy would wait for too. NCCL
  // may see the death first ("remote process exited" from a send) while the bootstrap has
  // not yet: then the communicator holds an error, and destroying it hung rank 0 for good
  // after it had printed its rows (one run of three on one H200). Abort it too.
  if (comm_) {
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    (async == ncclSuccess && boot_->dead_peer() < 0) ? ncclCommDestroy(comm_) : ncclCommAbort(comm_);
  }
}

std::string RankComm::describe(int r) const {
  const auto& j = peer(r);
  return fmt::format("rank {} GPU {} ({}, {}, host {})", r, j.value("gpu", -1), j.value("name", "?"), j.value("bus", "?"),
                     j.value("host", "?"));
}

void RankComm::agree_or_throw(const std::string& why_not) {
  const auto whys = boot_->allgather(why_not);
  for (int r = 0; r < size_; ++r)
    if (!whys[static_cast<std::size_t>(r)].empty())
      throw UsageError(fmt::format("rank {}: {}", r, external_text(whys[static_cast<std::size_t>(r)], 2000)));
}

void RankComm::init_comm() {
  if (comm_) return;
  ncclUniqueId id{};
  if (rank_ == 0) P2P_NCCL(ncclGetUniqueId(&id), gpu_);
  const std::string got = boot_->broadcast(0, std::string(reinterpret_cast<const char*>(&id), sizeof id));
  rank_part_size(got, 0, "an NCCL unique id", sizeof id);
  std::memcpy(&id, got.data(), sizeof id);
  cuda::preload_kernels(gpu_);  // the spin kernel must not load lazily behind NCCL's
  ncclComm_t c = nullptr;
  P2P_NCCL(ncclCommInitRank(&c, size_, id, rank_), gpu_);
  std::lock_guard<std::mutex> lk(dog_m_);
  comm_ = c;
}

cudaStream_t RankComm::stream() {
  std::lock_guard<std::mutex> lk(stream_m_);
  if (!stream_.get()) stream_ = cuda::make_stream(gpu_);
  return stream_.get();
}

void RankComm::arm() {
  {
    std::lock_guard<std::mutex> lk(dog_m_);
    armed_ = true;
    armed_at_ns_ = monotonic_ns();
  }
  dog_cv_.notify_all();
}

std::string RankComm::disarm() {
  std::lock_guard<std::mutex> lk(dog_m_);
  armed_ = false;
  return std::exchange(dog_why_, std::string());
}

void RankComm::throw_aborted(const std::string& why, const std::string& what) const {
  throw Error(fmt::format("{}, rank {} (GPU {}): {} during {}; the NCCL communicator was aborted", who_, rank_, gpu_, why, what));
}

// Where this rank may run on one or two CPUs (mpirun binds each of np <= 2 ranks to a
// core; a namespace host of the survey's test cluster is pinned to one), CUDA's default
// wait spins on the CPU that NCCL's proxy thread needs to move the bytes: an 8-byte
// send/recv between two namespace hosts on one CPU each took 4.5 ms a sample (18 ms in
// the survey, its bootstrap spinning too), and 13.4 us with the wait yielding or
// blocking on that same CPU (bench/results/survey-nccl.md). There the waits yield.
// P2PSCOPE_CUDA_WAIT=spin|yield|block sets it (to measure the difference).
void RankComm::set_wait_mode() {
  const char* forced = std::getenv("P2PSCOPE_CUDA_WAIT");
  std::string mode = forced && *forced ? forced : (allowed_cpus().size() <= 2 ? "yield" : "auto");
  unsigned flag = cudaDeviceScheduleAuto;
  if (mode == "spin") flag = cudaDeviceScheduleSpin;
  else if (mode == "yield") flag = cudaDeviceScheduleYield;
  else if (mode == "block") flag = cudaDeviceScheduleBlockingSync;
  else if (mode != "auto")
    throw UsageError(fmt::format("P2PSCOPE_CUDA_WAIT={}: expected spin, yield, block or auto", external_text(mode, 40)));
  wait_mode_ = mode;
  P2P_CUDA(cudaSetDeviceFlags(flag), gpu_);
}

void RankComm::wait(const std::string& what) {
  // A plain synchronize, not a polling loop: polling measured 4 ms per small op when
  // mpirun bound the rank to one core, starving NCCL's proxy thread.
  cudaStream_t s = stream();
  arm();
  const cudaError_t e = cudaStreamSynchronize(s);
  const std::string why = disarm();
  if (!why.empty()) throw_aborted(why, what);
  P2P_CUDA(e, gpu_);
}

void RankComm::queue(const std::string& what, const std::function<void()>& enqueue) {
  arm();
  try {
    enqueue();
  } catch (...) {
    // After an abort the next NCCL call fails on the null communicator: the reason is
    // the watchdog's, not that call's.
    const std::string why = disarm();
    if (!why.empty()) throw_aborted(why, "queueing " + what);
    throw;
  }
  const std::string why = disarm();
  if (!why.empty()) throw_aborted(why, "queueing " + what);
}

void RankComm::watchdog() {
  std::unique_lock<std::mutex> lk(dog_m_);
  while (!quit_) {
    dog_cv_.wait_for(lk, std::chrono::milliseconds(10));
    if (!armed_ || !comm_) continue;
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    std::string why;
    if (async != ncclSuccess && async != ncclInProgress) why = std::string("NCCL reported: ") + ncclGetErrorString(async);
    else if (const int dead = boot_->dead_peer(); dead >= 0)
      why = fmt::format("rank {} on {} is gone (its process ended or was killed)", dead,
                        peers_.at(static_cast<std::size_t>(dead)).value("host", "?"));
    else if (monotonic_ns() - armed_at_ns_ > static_cast<std::int64_t>(kWaitLimitS * 1e9))
      why = fmt::format("no progress in {:.0f} s", kWaitLimitS);
    if (why.empty()) continue;
    ncclCommAbort(std::exchange(comm_, nullptr));
    dog_why_ = why;
    armed_ = false;
  }
}

}  // namespace p2pscope::bench::nccl
