#pragma once
// What the CUDA backends share: the GPUs and their streams, buffers filled with the
// pattern, the timed loop (timed_lanes.hpp), blocking ops with their place on the GPU
// timer, the device-side data check, timer reads, the GPU ping-pong and the staging
// through pinned host memory. What differs is virtual: how a transfer is queued
// (issue), which GPU starts it (lane_device), which pairs work, and the note.
//   ce_backend.cpp      copy engines (ce_copy.hpp), optionally part through host memory
//   sm_backend.cpp      16-byte copy kernels, push or pull
//   staged_backend.cpp  through pinned host memory; device N (one past the GPUs) is host memory
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "p2pscope/backend.hpp"
#include "transport/cuda/cuda_util.hpp"
#include "transport/cuda/timed_lanes.hpp"

namespace p2pscope::bench::cuda {

constexpr std::size_t kScratchBytes = 1 << 16;  // flags, verify result, latency samples

// A GPU has a timer and can be heated: CudaBase offers both optional parts.
class CudaBase : public Backend, public DeviceTimer, public Heater {
 public:
  // Throws Error naming `kind` when CUDA sees no GPU. `host_devices`: 1 when device N
  // is host memory.
  CudaBase(const char* kind, int host_devices);

  int device_count() const override { return gpus_ + host_devices_; }
  std::string device_name(int d) const override;
  DeviceLocation device_location(int d) const override;
  // Device-local copies, and GPU pairs with peer access both ways.
  PairSupport support(int src, int dst) const override;
  void prepare(const std::vector<int>& devices, std::uint64_t max_bytes) override;
  bool prepare_for(const PrepareSpec& spec) override;
  BatchResult run_batch(const BatchSpec& s) override;
  OpTiming run_blocking(int src, int dst, std::uint64_t bytes) override;
  OpTiming run_blocking_batch(int src, int dst, std::uint64_t bytes, int count) override;
  int clock_device(int src, int dst) const override { return initiator(src, dst); }
  std::int64_t verify(int src, int dst, std::uint64_t bytes) override;
  DeviceTimer* device_timer() override { return this; }
  Heater* heater() override { return this; }
  TimerReading read_device_timer(int device) override;
  TimerBurst read_device_timer_burst(int device, int count) override;
  void busy_compute(int device, double seconds) override;

 protected:
  // Queues one transfer src->dst of n bytes on `st`, a stream of initiator(src, dst).
  virtual void issue(int src, int dst, std::uint64_t n, cudaStream_t st) = 0;
  // The GPU whose stream starts (and times) a GPU -> GPU transfer.
  virtual int lane_device(int src, int dst) const { (void)dst; return src; }
  // Stream operations one transfer queues (for the blocking start's budget).
  virtual std::size_t ops_per_transfer(int src, int dst) const { (void)src; (void)dst; return 1; }
  virtual std::string note(int src, int dst) const = 0;
  // Whether GPU pairs copy over peer access (enabled in prepare).
  virtual bool uses_peer_access() const { return true; }
  // Waits for streams of the backend's own besides the per-device ones.
  virtual void sync_own_streams() {}

  // Staging through pinned host memory: `chunk`-byte pieces in `slots` bounce slots.
  struct StageShape {
    std::uint64_t chunk = 0;
    int slots = 2;
  };
  virtual StageShape stage_shape() const = 0;
  // GPU -> pinned bounce slots -> GPU for bytes [base, base + n), chunked, starting where
  // `st` stands now. Returns the event of the last chunk in (staging.cpp).
  cudaEvent_t queue_staged(int src, int dst, std::uint64_t base, std::uint64_t n, cudaStream_t st);
  // `st`, a stream of initiator(src, dst), waits until the last staged chunk is in.
  void join_staged(int src, int dst, cudaStream_t st, cudaEvent_t last);

  // The device whose stream issues (and times) a transfer; host memory's GPU partner.
  int initiator(int src, int dst) const {
    if (is_host(src)) return dst;
    if (is_host(dst)) return src;
    return lane_device(src, dst);
  }
  bool is_host(int d) const { return host_devices_ > 0 && d == gpus_; }
  int gpus() const { return gpus_; }
  int sm_count(int d) const { return sms_[static_cast<std::size_t>(d)]; }
  std::uint64_t max_bytes() const { return max_bytes_; }
  void* send_ptr(int d) const { return is_host(d) ? host_send_.get() : dev_[static_cast<std::size_t>(d)].send.get(); }
  void* recv_ptr(int d) const { return is_host(d) ? host_recv_.get() : dev_[static_cast<std::size_t>(d)].recv.get(); }
  void check_device(int d) const;

 private:
  struct Dev {
    DeviceBuffer send, recv, scratch;
    Stream s0, s1, down, up;  // lanes; staging: device->host and host->device work streams
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

  void calibrate_events(int d, Dev& x);
  Dev& ensure_basics(int d);
  void check_prepared(int src, int dst, std::uint64_t bytes) const;
  int blocking_initiator(int src, int dst, std::uint64_t bytes);
  Stage& stage_for(int src, int dst);
  cudaStream_t stream0(int d) const { return dev_[static_cast<std::size_t>(d)].s0.get(); }
  cudaStream_t stream1(int d) const { return dev_[static_cast<std::size_t>(d)].s1.get(); }
  void sync_all_streams();
  std::vector<std::vector<double>> run_timed(const std::vector<Lane>& lanes, const BatchSpec& s, std::size_t ops_per_copy);
  void run_latency(const BatchSpec& s, BatchResult& r);  // ping_pong.cpp

  int gpus_ = 0, host_devices_ = 0;
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

}  // namespace p2pscope::bench::cuda
