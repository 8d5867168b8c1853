// The launcher table (include/p2pscope/launcher.hpp). Before, the nccl backend kept a
// second list (OMPI, PMI, PMIX, MV2 sizes) that missed srun and torchrun launches.
#include "p2pscope/launcher.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope {
namespace {

// One launcher's variable names; local ones may be absent (then one host is assumed).
struct Scheme {
  const char* launcher;
  const char *rank, *size, *local_rank, *local_size;
};
constexpr Scheme kSchemes[] = {
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"mvapich", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    // srun's per-step count: a batch script also has SLURM_NTASKS (the allocation's),
    // and as one process it must not wait for peers that will never come.
    {"slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};

int read_int(const EnvLookup& env, const char* name, int min_value) {
  const char* v = env(name);
  const std::string text = v ? v : "";
  int x = 0;
  try {
    x = static_cast<int>(parse_int(text, name));
  } catch (const Error&) {
    throw UsageError(fmt::format("the launcher set {}='{}', which is not a number", name, text));
  }
  if (x < min_value) throw UsageError(fmt::format("the launcher set {}={}; expected at least {}", name, x, min_value));
  return x;
}

}  // namespace

LauncherRanks detect_launcher(const EnvLookup& env) {
  LauncherRanks li;
  for (const Scheme& s : kSchemes) {
    if (env(s.size) && !env(s.rank) && std::string(env(s.size)) != "1")
      throw UsageError(fmt::format("the environment has {}={} but no {}: a launcher started this process only in part; "
                                   "start it with the launcher (one rank each), or unset {}",
                                   s.size, env(s.size), s.rank, s.size));
    if (!env(s.rank) || !env(s.size)) continue;
    li.launcher = s.launcher;
    li.size = read_int(env, s.size, 1);
    li.rank = read_int(env, s.rank, 0);
    if (li.rank >= li.size)
      throw UsageError(fmt::format("the launcher ({}) set {}={} but {}={}: a rank must be below the size", s.launcher,
                                   s.rank, li.rank, s.size, li.size));
    const bool has_local = env(s.local_rank) != nullptr;
    li.local_rank = has_local ? read_int(env, s.local_rank, 0) : li.rank;
    // SLURM_STEP_TASKS_PER_NODE may read "4(x2)"; anything but a plain number means "unknown".
    li.local_size = li.size;
    if (env(s.local_size)) {
      try {
        li.local_size = read_int(env, s.local_size, 1);
      } catch (const UsageError&) {
        li.local_size = has_local ? li.local_rank + 1 : li.size;
      }
    }
    break;
  }
  return li;
}

LauncherRanks detect_launcher() {
  return detect_launcher([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace p2pscope
