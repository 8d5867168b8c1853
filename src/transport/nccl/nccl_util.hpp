#pragma once
#include <nccl.h>

#include <string>
#include <vector>

#include "transport/cuda/cuda_util.hpp"

namespace p2pscope::bench::nccl {

inline void check(ncclResult_t r, const char* call, int device) {
  if (r != ncclSuccess)
    throw Error(std::string(call) + " on GPU " + std::to_string(device) + " failed: " + ncclGetErrorString(r) +
                (r == ncclSystemError || r == ncclInternalError ? " (run with NCCL_DEBUG=WARN for NCCL's reason)" : ""));
}
#define P2P_NCCL(call, dev) ::p2pscope::bench::nccl::check((call), #call, (dev))

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

}  // namespace p2pscope::bench::nccl
