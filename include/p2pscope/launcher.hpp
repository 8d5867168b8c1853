#pragma once
// Which launcher started this process and this process's place in the job, from the
// variables launchers set: the one table every command and backend reads (bootstrap's
// detect_launch adds the rendezvous on top; the nccl backend's "launched as N
// processes" check reads the same size).
#include <functional>
#include <string>

namespace p2pscope {

// A getenv stand-in (tests pass a map); nullptr for an unset variable.
using EnvLookup = std::function<const char*(const char*)>;

struct LauncherRanks {
  std::string launcher = "single";     // "single", "openmpi", "mvapich", "pmi", "slurm", "torchrun"
  int rank = 0, size = 1;              // this process among all of the job's processes
  int local_rank = 0, local_size = 1;  // among those on this host
};

// The first launcher of the table whose rank and size are both set:
//   openmpi  OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}
//   mvapich  MV2_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}
//   pmi      PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS (MPICH, Intel MPI)
//   slurm    SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE (srun)
//   torchrun RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
// Local ones may be absent (then one host is assumed). Throws UsageError for a size
// without its rank (a launch in part), junk numbers and rank >= size.
LauncherRanks detect_launcher(const EnvLookup& getenv_fn);
LauncherRanks detect_launcher();  // the real environment

}  // namespace p2pscope
