#pragma once
// What CUDA / NCCL this binary was built with and what it finds at run time.
// Implemented in p2pscope_gpu; safe to call on a machine with no GPU or driver.
#include <string>

#include <nlohmann/json.hpp>

#include "p2pscope/topo.hpp"

namespace p2pscope::gpu {

struct RuntimeInfo {
  bool cuda_built = false, nccl_built = false;
  int cuda_runtime_version = -1;  // e.g. 13000, the static runtime linked in
  int cuda_driver_version = -1;   // -1: no driver
  int nccl_version = -1;          // ncclGetVersion at run time, e.g. 22809
  int device_count = 0;
  std::string why_no_gpu;         // "", or why no GPU can be used
};

// Said where CUDA reports cudaErrorInsufficientDriver and no driver answers at all.
inline constexpr const char* kNoDriverText =
    "no NVIDIA driver found (libcuda.so.1 is not installed or not loaded): install the driver to use GPUs; "
    "the host backend runs without one";

// CUDA's text for a cudaError_t (as int), except that "driver version is insufficient"
// with no driver answering at all becomes kNoDriverText. Without CUDA: "CUDA error N".
std::string cuda_error_text(int cuda_error);

RuntimeInfo runtime_info();
nlohmann::json to_json(const RuntimeInfo& info);
// "13.0" from 13000; "2.28.9" from 22809; "-" for -1.
std::string cuda_version_text(int v);
std::string nccl_version_text(int v);

// Holds the primary CUDA context of every GPU while it lives (`p2pscope run`, so that each
// step's process finds the GPUs brought up: on 4 x H200 a process that was alone on the
// GPUs took 0.6-0.8 s longer to start its CUDA work than one started while another
// process held a context, with persistence mode on; bench/lease_init_cost.sh). Made in
// a thread of its own, so the caller goes on at once. Idle contexts run nothing; each
// takes some GPU memory. Without CUDA or a GPU: holds nothing.
class ContextHolder {
 public:
  explicit ContextHolder(int device_count);
  ~ContextHolder();
  ContextHolder(const ContextHolder&) = delete;
  ContextHolder& operator=(const ContextHolder&) = delete;
  // Waits for the contexts; then how many are held, and the seconds their bring-up took.
  int held();
  double seconds();

 private:
  struct State;
  State* s_;
};
// The environment variable through which `run` names its own pid to its steps: NVML lists
// the holder among each GPU's users, and a step does not warn about it as a stranger.
inline constexpr const char* kContextHolderPidEnv = "P2PSCOPE_CONTEXT_HOLDER_PID";

// Adds CUDA facts (cuda_index by PCI bus id, name, memory, SM count, UUID) to the
// topology's GPUs. No-op without CUDA or a driver.
void enrich_with_cuda(topo::Topology& t);

}  // namespace p2pscope::gpu
