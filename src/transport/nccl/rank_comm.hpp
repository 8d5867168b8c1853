#pragma once
// One rank's share of a one-process-per-GPU NCCL run, as mpirun, srun or torchrun
// start it: which GPU this rank drives, who the other ranks are, the communicator,
// and a stream wait that a dead peer cannot hang. The nccl ranks backend (`bench gpu`,
// `profile`) and the multi-process collectives (`bench nccl`) stand on it.
//
// Every call marked collective must be made by every rank in the same order.
#include <nccl.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/bootstrap.hpp"
#include "transport/cuda/cuda_util.hpp"

namespace p2pscope::bench::nccl {

class RankComm {
 public:
  // Collective. Picks GPU rank_device (or the rank when < 0) modulo the visible ones,
  // tells every rank about it, and refuses two ranks on one GPU of one host (NCCL
  // would). `who` starts every error ("backend nccl", "bench nccl").
  RankComm(std::shared_ptr<Bootstrap> boot, int rank_device, std::string who);
  ~RankComm();
  RankComm(const RankComm&) = delete;
  RankComm& operator=(const RankComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int gpu() const { return gpu_; }
  Bootstrap& boot() { return *boot_; }
  // How its GPU waits hold the CPU: "auto" (CUDA's choice), or "yield" where this rank
  // may run on two CPUs or fewer (set_wait_mode), or what P2PSCOPE_CUDA_WAIT forced.
  const std::string& wait_mode() const { return wait_mode_; }
  // Rank r's host (as NCCL tells hosts apart), hostname, gpu, name and bus id, as it told them.
  const nlohmann::json& peer(int r) const { return peers_.at(static_cast<std::size_t>(r)); }
  std::string describe(int r) const;  // "rank 1 GPU 0 (NVIDIA H200, 0000:..., host h)"

  // Collective: each rank says why it cannot go on ("" when it can); every rank then
  // throws the same UsageError, naming the first rank that cannot.
  void agree_or_throw(const std::string& why_not);
  // Collective the first time: the communicator over all ranks (rank 0's unique id).
  void init_comm();
  // Null before init_comm() and after the watchdog aborted it.
  ncclComm_t comm() const { return comm_; }
  // This rank's stream, created on first use (from any thread).
  cudaStream_t stream();

  // Waits for the stream. A dead peer or an NCCL error would leave a plain
  // synchronize spinning forever, so a watchdog thread checks NCCL's asynchronous
  // error and the bootstrap's sockets meanwhile and aborts the communicator (which
  // ends NCCL's kernels and so the wait); then this throws, naming what happened.
  void wait(const std::string& what);
  // Runs `enqueue` (calls that queue work on this rank's stream) under the same watchdog:
  // a long batch fills CUDA's launch queue, and the enqueue then blocks inside NCCL
  // behind kernels that a dead peer never ends (seen over NVLink, where NCCL reports
  // no error of its own). The abort unblocks it; this then throws, naming what happened.
  void queue(const std::string& what, const std::function<void()>& enqueue);

 private:
  void set_wait_mode();
  void watchdog();
  void arm();
  std::string disarm();  // the watchdog's reason for an abort meanwhile, "" if none
  [[noreturn]] void throw_aborted(const std::string& why, const std::string& what) const;

  std::shared_ptr<Bootstrap> boot_;
  std::string who_;
  int rank_, size_;
  int gpu_ = 0;
  std::vector<nlohmann::json> peers_;
  cuda::Stream stream_;
  std::mutex stream_m_;
  ncclComm_t comm_ = nullptr;  // aborted by the watchdog, under dog_m_, only while armed_
  std::thread dog_;
  std::mutex dog_m_;
  std::condition_variable dog_cv_;
  bool armed_ = false, quit_ = false;
  std::int64_t armed_at_ns_ = 0;
  std::string dog_why_;
  std::string wait_mode_ = "auto";
};

}  // namespace p2pscope::bench::nccl
