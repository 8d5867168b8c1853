#pragma once
#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "p2pscope/backend.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/cuda_util.hpp"

namespace p2pscope::bench::nccl {

inline void check(ncclResult_t r, const char* call, int device) {
  if (r != ncclSuccess)
    throw Error(std::string(call) + " on GPU " + std::to_string(device) + " failed: " + ncclGetErrorString(r) +
                (r == ncclSystemError || r == ncclInternalError ? " (run with NCCL_DEBUG=WARN for NCCL's reason)" : ""));
}
#define P2P_NCCL(call, dev) ::p2pscope::bench::nccl::check((call), #call, (dev))

// Why GPU `d` cannot hold a send and a receive buffer of `bytes` plus NCCL's own
// working memory; empty when it can. Checked before anything is allocated.
inline std::string memory_shortfall(int d, std::uint64_t bytes) {
  constexpr std::uint64_t kNcclReserve = 512ull << 20;
  std::size_t free_b = 0, total_b = 0;
  const cuda::DeviceGuard g(d);
  P2P_CUDA(cudaMemGetInfo(&free_b, &total_b), d);
  if (2 * bytes + kNcclReserve <= free_b) return {};
  return fmt::format("{} per buffer needs {} on GPU {} (2 buffers + 512 MiB for NCCL) but {} is free", format_size(bytes),
                     format_size(2 * bytes + kNcclReserve), d, format_size(free_b));
}

// One communicator per GPU of one process (ncclCommInitAll); destroyed noexcept.
class Comms {
 public:
  explicit Comms(const std::vector<int>& devices) : devs_(devices), comms_(devices.size(), nullptr) {
    P2P_NCCL(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()), devices.empty() ? -1 : devices[0]);
  }
  Comms(const Comms&) = delete;
  Comms& operator=(const Comms&) = delete;
  ~Comms() {
    for (auto c : comms_)
      if (c) ncclCommDestroy(c);
  }
  ncclComm_t at(std::size_t rank) const { return comms_[rank]; }
  int rank_of(int device) const {
    for (std::size_t i = 0; i < devs_.size(); ++i)
      if (devs_[i] == device) return static_cast<int>(i);
    return -1;
  }
  std::size_t size() const { return devs_.size(); }
 private:
  std::vector<int> devs_;
  std::vector<ncclComm_t> comms_;
};

// How a sample of `pattern` runs with ncclSend/ncclRecv, in one process or one per GPU:
// latency is `rounds` round trips (one-way = rtt/2), bidirectional both ways in one group.
struct SampleShape {
  bool lat = false, bidir = false;
  int rounds = 1;  // exchanges per sample
  // The blocking start holds the queue only while `iters` samples' ops stay few (600):
  // more would stall NCCL behind the spin kernel.
  bool hold(int iters) const { return static_cast<long>(iters) * rounds * 2 < 600; }
};
inline SampleShape sample_shape(Pattern p) {
  const bool lat = p == Pattern::latency;
  return {lat, p == Pattern::bidirectional, lat ? 100 : 1};
}

}  // namespace p2pscope::bench::nccl
