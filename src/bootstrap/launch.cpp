// Where a multi-process run meets: the job id and the rendezvous address, on top of the
// launcher table (p2pscope/launcher.hpp).
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope {
namespace {

// Variables whose value names the job (every rank of one job sees the same), so that two
// jobs on one host get different ports and the rendezvous refuses another job's ranks.
// Slurm's step id alone ("0") is the same in every job: it only qualifies SLURM_JOB_ID.
constexpr const char* kJobIds[] = {"P2PSCOPE_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMI_KVSNAME"};
constexpr std::uint16_t kBasePort = 29600;  // ports 29600..45599: clear of torchrun's 29500

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
  const LauncherRanks r = detect_launcher(env);  // the one launcher table (core/launcher.cpp)
  li.launcher = r.launcher;
  li.rank = r.rank, li.size = r.size, li.local_rank = r.local_rank, li.local_size = r.local_size;
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
