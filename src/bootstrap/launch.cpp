// Which launcher started this process, read from the variables launchers set.
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "p2pscope/bootstrap.hpp"
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
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    // srun's per-step count: a batch script also has SLURM_NTASKS (the allocation's),
    // and as one process it must not wait for peers that will never come.
    {"slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};
// Variables whose value names the job (every rank of one job sees the same), so that two
// jobs on one host get different ports and the rendezvous refuses another job's ranks.
// Slurm's step id alone ("0") is the same in every job: it only qualifies SLURM_JOB_ID.
constexpr const char* kJobIds[] = {"P2PSCOPE_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMI_KVSNAME"};
constexpr std::uint16_t kBasePort = 29600;  // ports 29600..45599: clear of torchrun's 29500

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

// FNV-1a: stable across machines and runs, unlike std::hash.
std::uint16_t port_for_job(const std::string& job) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : job) h = (h ^ c) * 1099511628211ull;
  return static_cast<std::uint16_t>(kBasePort + h % 16000);
}

void parse_rendezvous(const std::string& text, const char* from, LaunchInfo& li) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw UsageError(fmt::format("{}='{}': expected HOST:PORT, e.g. 10.0.0.1:29600", from, text));
  const std::string port_text = text.substr(colon + 1);
  std::int64_t port = 0;
  try {
    port = parse_int(port_text, "port");
  } catch (const Error&) {
    port = -1;
  }
  if (port < 1 || port > 65535)
    throw UsageError(fmt::format("{}='{}': the port '{}' is not a number from 1 to 65535", from, text, port_text));
  li.rendezvous_host = text.substr(0, colon);
  li.rendezvous_port = static_cast<std::uint16_t>(port);
}

std::string job_id_of(const EnvLookup& env) {
  const auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? v : "";
  };
  for (const char* name : kJobIds)
    if (const std::string v = get(name); !v.empty()) return fmt::format("{}={}", name, v);
  if (const std::string job = get("SLURM_JOB_ID"); !job.empty()) {
    const std::string step = get("SLURM_STEP_ID");
    return fmt::format("slurm:{}{}{}", job, step.empty() ? "" : ".", step);
  }
  // torchrun's run id defaults to "none"; its store's address tells jobs apart.
  const std::string master = get("MASTER_ADDR").empty() ? "" : get("MASTER_ADDR") + ":" + get("MASTER_PORT");
  if (const std::string run = get("TORCHELASTIC_RUN_ID"); !run.empty())
    return fmt::format("torchrun:{}{}{}", run, master.empty() ? "" : "@", master);
  return master.empty() ? "" : "master:" + master;
}

}  // namespace

LaunchInfo detect_launch(const EnvLookup& env) {
  LaunchInfo li;
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
    // SLURM_NTASKS_PER_NODE may read "4(x2)"; anything but a plain number means "unknown".
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
  if (!li.multi_process()) return li;

  li.job_id = job_id_of(env);
  const std::string& job = li.job_id;
  if (const char* r = env("P2PSCOPE_RENDEZVOUS"); r && *r) {
    parse_rendezvous(r, "P2PSCOPE_RENDEZVOUS", li);
  } else if (const char* master = env("MASTER_ADDR"); master && *master) {
    // torchrun's own store already listens on MASTER_PORT: same host, the job's port.
    li.rendezvous_host = master;
    li.rendezvous_port = port_for_job(job);
  } else {
    if (li.local_size < li.size)
      throw UsageError(fmt::format(
          "{} processes on more than one host ({} on this one) and no rendezvous address: set "
          "P2PSCOPE_RENDEZVOUS=<host of rank 0>:<free port> in every process's environment (mpirun -x P2PSCOPE_RENDEZVOUS)",
          li.size, li.local_size));
    li.rendezvous_host = "127.0.0.1";
    li.rendezvous_port = port_for_job(job);
  }
  return li;
}

LaunchInfo detect_launch() {
  return detect_launch([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace p2pscope
