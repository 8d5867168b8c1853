// What CUDA/NCCL are built in and found at run time. Compiled with or without CUDA.
#include "p2pscope/gpu_runtime.hpp"

#if P2PSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#if P2PSCOPE_HAVE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace p2pscope::gpu {

std::string cuda_version_text(int v) {
  if (v < 0) return "-";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string nccl_version_text(int v) {
  if (v < 0) return "-";
  // NCCL >= 2.9 encodes MAJOR*10000 + MINOR*100 + PATCH.
  if (v >= 10000) return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 100) + "." + std::to_string(v % 100);
}

std::string cuda_error_text(int code) {
#if P2PSCOPE_HAVE_CUDA
  const auto e = static_cast<cudaError_t>(code);
  int driver = 0;
  if (e == cudaErrorInsufficientDriver && (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0)) return kNoDriverText;
  return cudaGetErrorString(e);
#else
  return "CUDA error " + std::to_string(code);
#endif
}

RuntimeInfo runtime_info() {
  RuntimeInfo r;
#if P2PSCOPE_HAVE_CUDA
  r.cuda_built = true;
  cudaRuntimeGetVersion(&r.cuda_runtime_version);
  int drv = 0;
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0) r.cuda_driver_version = drv;
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err == cudaSuccess) {
    r.device_count = n;
    if (n == 0) r.why_no_gpu = "the CUDA driver sees no GPU";
  } else {
    // With no driver at all, CUDA's text is "driver version is insufficient for CUDA
    // runtime version", which sends a user looking for a driver upgrade.
    const std::string text = cuda_error_text(err);
    r.why_no_gpu = text == kNoDriverText ? text : "CUDA found no usable GPU: " + text;
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
  }
#else
  r.why_no_gpu = "built without CUDA (configure with nvcc present, or -DP2PSCOPE_WITH_CUDA=ON)";
#endif
#if P2PSCOPE_HAVE_NCCL
  r.nccl_built = true;
  int nv = 0;
  if (ncclGetVersion(&nv) == ncclSuccess) r.nccl_version = nv;
#endif
  return r;
}

nlohmann::json to_json(const RuntimeInfo& r) {
  return {{"cuda_built", r.cuda_built},
          {"nccl_built", r.nccl_built},
          {"cuda_runtime", cuda_version_text(r.cuda_runtime_version)},
          {"cuda_driver", cuda_version_text(r.cuda_driver_version)},
          {"nccl", nccl_version_text(r.nccl_version)},
          {"gpu_count", r.device_count},
          {"why_no_gpu", r.why_no_gpu}};
}

void enrich_with_cuda(topo::Topology& t) {
#if P2PSCOPE_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  for (int d = 0; d < n; ++d) {
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, d) != cudaSuccess) continue;
    std::string id(bus);
    std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    for (auto& g : t.gpus) {
      // CUDA writes an 8-digit domain ("00000000:19:00.0"); sysfs a 4-digit one.
      if (id.size() >= 12 && g.pci.size() >= 7 && id.substr(id.size() - 7) == g.pci.substr(g.pci.size() - 7)) {
        g.cuda_index = d;
        g.name = p.name;
        g.memory_bytes = p.totalGlobalMem;
        g.sm_count = p.multiProcessorCount;
        char uuid[64];
        const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
        std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4],
                      u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
        if (g.uuid.empty()) g.uuid = uuid;
      }
    }
  }
#else
  (void)t;
#endif
}

}  // namespace p2pscope::gpu
