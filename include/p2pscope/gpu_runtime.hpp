#pragma once
// What CUDA / NCCL this binary was built with and what it finds at run time.
// Implemented in p2pscope_gpu; safe to call on a machine with no GPU or driver.
#include <string>

#include <nlohmann/json_fwd.hpp>

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

// Adds CUDA facts (cuda_index by PCI bus id, name, memory, SM count, UUID) to the
// topology's GPUs. No-op without CUDA or a driver.
void enrich_with_cuda(topo::Topology& t);

}  // namespace p2pscope::gpu
