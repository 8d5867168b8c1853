#pragma once
// One launcher bring-up for every command (bench gpu, bench nccl, profile, and the
// commands that run as one process only): the launcher read from the environment,
// the command's own refusal, the rendezvous, the same-arguments check and the ranks'
// CPUs. Three commands used to copy these steps, and one skipped the arguments check:
// ranks started with different sizes then waited on each other until the watchdog.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "p2pscope/bootstrap.hpp"

namespace p2pscope {

// Where one rank runs, as it said at bring-up.
struct RankPlace {
  std::string cpus;      // its allowed CPUs (cpulist)
  std::int64_t pid = 0;  // its process id (in its host's namespace)
  std::string host;      // its host name
};

struct Launched {
  LaunchInfo launch;
  std::shared_ptr<Bootstrap> boot;     // null for one process
  std::vector<std::string> rank_cpus;  // under a launcher: each rank's allowed CPUs (cpulist), by rank
  std::vector<RankPlace> places;       // under a launcher: by rank
  // The run's own processes on this host (this one included): NVML lists them among a
  // GPU's users, and they are no strangers (profile's "used by other process" warning).
  std::vector<std::int64_t> own_pids_here() const;
  bool multi_process() const { return launch.multi_process(); }
  bool reporter() const { return launch.rank == 0; }  // the rank that prints and writes
};

struct BringUpOptions {
  std::vector<std::string> argv;  // this process's command line; argv[0] is not compared
  double timeout_s = 120;         // bounds the meeting and every later collective call
  // Under a launcher, before any rank waits for the others: the command's own refusal
  // (a UsageError), e.g. a backend that drives every GPU from one process.
  std::function<void(const LaunchInfo&)> admit;
  // Rank 0's refusals of strangers, one line each, and its warnings about the ranks
  // (a rank bound to one CPU). The library never prints: the CLI passes stderr.
  std::function<void(const std::string&)> log, warn;
  // What a rank bound to one CPU costs this command, for warn (empty: NCCL's proxy threads
  // starve, which is what the GPU commands risk).
  std::string one_cpu_cost;
  EnvLookup env;  // empty: the real environment (tests pass a double)
};

// One process: {launch, nullptr, {}}. Under a launcher: admit(), then the rendezvous
// (make_bootstrap), check_same_arguments and gather_rank_places, in that order on every
// rank. Throws UsageError for an inconsistent launcher environment, a refusal or
// ranks given other arguments, Error when the ranks do not meet.
Launched bring_up(const BringUpOptions& options);

// An admit() for commands that drive everything from one process: refuses any launch
// of several processes, naming the rank, the launcher and what to do instead.
std::function<void(const LaunchInfo&)> one_process_only(const std::string& command);

// Collective: every rank must run the same command, since each NCCL call is matched
// across ranks. Throws the same UsageError on every rank otherwise, naming the first
// rank whose arguments differ from rank 0's.
void check_same_arguments(Bootstrap& boot, const std::vector<std::string>& argv);
// Collective: every rank's allowed CPUs, pid and host, indexed by rank. Rank 0 passes
// `log` a warning for each rank bound to a single CPU, where NCCL's proxy threads starve.
// `one_cpu_cost`: what one CPU costs this command (empty: NCCL's proxy threads).
std::vector<RankPlace> gather_rank_places(Bootstrap& boot, const std::function<void(const std::string&)>& log,
                                          const std::string& one_cpu_cost = "");

}  // namespace p2pscope
