#pragma once
// Run metadata embedded in every JSON output (nccl-tests style).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace p2pscope {

inline constexpr int kSchemaVersion = 1;

// {schema_version, tool: {name, version, git_hash, build_type, built_with: {cuda, nccl,
// mpi}}, hostname, start_time (ISO UTC), start_time_ns, argv, env: {NCCL_*, CUDA_*,
// UCX_*, CUDA_VISIBLE_DEVICES...}, kernel (uname -r)}. Callers add "versions"
// (runtime CUDA/NCCL/driver) and "topology" themselves.
nlohmann::json run_metadata(const std::vector<std::string>& argv);

// Environment variables whose names start with NCCL_, CUDA_, UCX_, NVIDIA_ or are
// CUDA_VISIBLE_DEVICES / OMPI_* , sorted by name.
nlohmann::json captured_env();

}  // namespace p2pscope
