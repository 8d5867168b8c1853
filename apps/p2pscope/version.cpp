#include "commands.hpp"
#include "p2pscope/build_config.hpp"
#include "p2pscope/gpu_runtime.hpp"

namespace p2pscope::app {

std::string version_text() {
  const auto r = gpu::runtime_info();
  std::string s = std::string("p2pscope ") + build::kVersion + " (git " + build::kGitHash + ", " + build::kBuildType + ")\n";
  s += "  CUDA: " + std::string(r.cuda_built ? "built in, runtime " + gpu::cuda_version_text(r.cuda_runtime_version) : "not built in");
  s += r.cuda_built ? ", driver " + (r.cuda_driver_version > 0 ? gpu::cuda_version_text(r.cuda_driver_version) : std::string("not found")) : "";
  s += "\n  NCCL: " + std::string(r.nccl_built ? "built in, library " + gpu::nccl_version_text(r.nccl_version) : "not built in");
  s += "\n  GPUs: " + std::to_string(r.device_count) + (r.why_no_gpu.empty() ? "" : " (" + r.why_no_gpu + ")");
  return s;
}

}  // namespace p2pscope::app
