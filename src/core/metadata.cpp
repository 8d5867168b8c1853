#include "p2pscope/metadata.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "p2pscope/build_config.hpp"
#include "p2pscope/clock.hpp"

extern char** environ;

namespace p2pscope {

nlohmann::json captured_env() {
  static const char* prefixes[] = {"NCCL_", "CUDA_", "UCX_", "NVIDIA_", "OMPI_COMM_WORLD_", "TORCH_", "NVSHMEM_"};
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    std::string name(*e, static_cast<std::size_t>(eq - *e));
    for (const char* p : prefixes)
      if (name.rfind(p, 0) == 0) vars[name] = eq + 1;
  }
  nlohmann::json out = nlohmann::json::object();
  for (auto& [k, v] : vars) out[k] = v;
  return out;
}

nlohmann::json run_metadata(const std::vector<std::string>& argv) {
  nlohmann::json m;
  m["schema_version"] = kSchemaVersion;
  m["tool"] = {{"name", "p2pscope"},
               {"version", build::kVersion},
               {"git_hash", build::kGitHash},
               {"build_type", build::kBuildType},
               {"built_with", {{"cuda", P2PSCOPE_HAVE_CUDA != 0}, {"nccl", P2PSCOPE_HAVE_NCCL != 0}, {"mpi", P2PSCOPE_HAVE_MPI != 0}}}};
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m["hostname"] = host;
  const std::int64_t now = realtime_ns();
  m["start_time"] = iso8601_utc(now);
  m["start_time_ns"] = now;
  m["argv"] = argv;
  m["env"] = captured_env();
  utsname u{};
  if (uname(&u) == 0) m["kernel"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return m;
}

}  // namespace p2pscope
