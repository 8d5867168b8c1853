#pragma once
// NCCL's own send/recv between two ranks of this machine, one way, one size: two child
// processes of this binary (`bench gpu --backend nccl --pairs 0:1`) meeting over the
// rendezvous with a fresh token, each with its own NCCL_HOSTID so that NCCL takes them
// for two hosts and uses its network transport (the one-GPU stand-in of issue 44, and
// the same path on a machine of many GPUs). Their figures are read from the JSON rank 0
// writes, never from printed text; what NCCL used from rank 0's NCCL_DEBUG=INFO file.
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "p2pscope/tune.hpp"

namespace p2pscope::versus {
using tune::NcclLog;

struct NcclPairSpec {
  std::string self = "/proc/self/exe";  // the p2pscope binary the ranks run
  std::string gpu;                      // CUDA_VISIBLE_DEVICES for both ranks: one GPU, or "" to leave it
  std::uint64_t size_bytes = 64ull << 20;
  int iters = 5, warmup = 1;
  std::map<std::string, std::string> env;  // the transport: from nccl_env_for_sockets / _for_plugin
  std::string dir;                         // the ranks' files go here (must exist)
  double timeout_s = 300;
  const std::atomic<bool>* stop = nullptr;
};

struct NcclPairRun {
  std::string error;  // empty: both ranks finished and rank 0's JSON holds a figure
  double bytes_per_s = 0, lo_bytes_per_s = 0, hi_bytes_per_s = 0;  // median; p95 and p5 times' rates
  int iters = 0;
  NcclLog log;                          // rank 0's NCCL_DEBUG=INFO file, parsed
  std::map<std::string, std::string> env;  // what the ranks ran with on top of this process's
  std::vector<std::string> files;       // the JSON, the logs: kept for the user
};

// NCCL's socket transport over these interfaces (names; "lo" on one host), P2P and SHM
// off, no external plugin: the path bench tcp's sockets take.
std::map<std::string, std::string> nccl_env_for_sockets(const std::vector<std::string>& ifnames);
// An external net plugin, by the path bench net loaded and its name (NCCL_NET forces
// it, so that NCCL cannot fall back to its sockets without failing).
std::map<std::string, std::string> nccl_env_for_plugin(const std::string& plugin_path, const std::string& plugin_name);

// Runs the pair. Never throws for a failed run: `error` says what (with the rank's
// last lines); throws Error only when the children cannot be started at all.
NcclPairRun run_nccl_pair(const NcclPairSpec& spec);

// Reads rank 0's bench gpu JSON text into the run's figures; "" or the reason it holds none.
std::string read_pair_json(const std::string& text, NcclPairRun& run);

}  // namespace p2pscope::versus
