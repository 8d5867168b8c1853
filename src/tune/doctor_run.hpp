#pragma once
// `p2pscope doctor`'s work, for the command to print: the diagnosis of this machine (or
// a captured tree) and of the NCCL logs and results given, the transport comparison
// that re-runs `bench nccl` under forced fallbacks, and the net plugin NCCL would load.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/netplugin.hpp"
#include "p2pscope/topo.hpp"
#include "p2pscope/tune.hpp"

namespace p2pscope::tune {

struct DoctorRunOptions {
  std::vector<std::string> logs, results;  // --nccl-log, --results files
  std::string root = "/";                  // --root: a captured tree
  std::string size = "64M";                // --compare-transports' message size
  bool compare = false;                    // --compare-transports
};

struct DoctorRun {
  DoctorReport report;                        // findings sorted
  std::vector<TransportRun> runs;             // --compare-transports
  std::optional<net::NcclPluginReport> plugin;  // a live machine without a log only
  topo::Topology topo;
  bool have_topo = false;
};

// This shell's NCCL_* variables.
std::map<std::string, std::string> nccl_env();
// What NCCL would load for its network under this environment, and whether it reaches
// GPU memory: a host-memory-only plugin on a GPU host means every byte is staged.
Finding plugin_finding(const net::NcclPluginReport& pr, bool gpus_here);

// The diagnosis; `say` gets progress lines (each run of --compare-transports, a skip).
DoctorRun run_doctor(const DoctorRunOptions& o, const std::function<void(const std::string&)>& say);
// For people: each log and result read, the transport runs, then the findings.
std::string doctor_text(const DoctorReport& r, const std::vector<TransportRun>& runs);
// The JSON body (the command puts the run's metadata around it).
nlohmann::json doctor_json(const DoctorRun& d);

}  // namespace p2pscope::tune
