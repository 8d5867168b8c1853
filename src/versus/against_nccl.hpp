#pragma once
// `bench tcp|net --against-nccl` (issue 44 item 5, the seeds' question): the p2pscope
// engine and NCCL's own send/recv over one transport, GPU and NICs in one call, each
// with what it used, and which difference explains the gap between their rates.
//
// The seeds set a point-to-point engine figure against NCCL's "Avg bus bandwidth" of an
// all-reduce sweep: two different figures. Here both sides move one size, one way, GPU
// to GPU, and a third run (the engine at NCCL's shape: its flows, chunk and window)
// tells a gap of settings from a gap of NCCL's own path (its proxy thread, kernel and
// staging), by measurement rather than by guessing.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/tune.hpp"

namespace p2pscope::versus {
using tune::NcclLog;

// What one side used, as far as it can be known: the engine from its settings and its
// workers' reports, NCCL from its NCCL_DEBUG=INFO log and environment. -1 / 0 / "":
// unknown (never guessed).
struct PathShape {
  std::string who;                 // "p2pscope engine", "NCCL send/recv", "engine at NCCL's shape"
  std::string transport;           // "sockets", "NET/Socket", "plugin 'p2pscope-refnet'"
  int channels = -1;               // NCCL: its p2p channels between the two ranks
  int sockets_per_channel = -1;    // TCP connections per channel (NCCL: threads x sockets per thread)
  int threads_per_channel = -1;    // threads moving a channel's bytes on the sending side
  std::vector<std::string> nics;   // "lo", "eth1 (NUMA 0)"
  std::string cpus;                // where those threads ran
  std::uint64_t chunk_bytes = 0;
  int window = -1;                 // chunks in flight per channel (NCCL: NCCL_STEPS)
  std::string memory;              // the memory path: "GPU, staged through pinned host buffers", ...
  double bytes_per_s = 0;          // the median over timed rounds or iterations (1e9 = 1 GB/s)
  double lo_bytes_per_s = 0, hi_bytes_per_s = 0;  // the spread of those (0: none)
  std::string measured;            // how the figure was taken: "5 rounds of 256 MiB, receiver's clock"
  int flows() const { return channels > 0 && sockets_per_channel > 0 ? channels * sockets_per_channel : -1; }
};

// NCCL's shape for the pair src -> dst from its log (nccl_log.cpp) and the environment
// the ranks ran with (for what NCCL does not log: NCCL_STEPS is fixed at 8).
PathShape nccl_shape_from_log(const NcclLog& log, int src_rank, int dst_rank,
                              const std::map<std::string, std::string>& env);

struct AgainstNccl {
  PathShape engine, nccl;
  std::optional<PathShape> shaped;        // the engine again at NCCL's flows, chunk and window
  std::vector<std::string> differences;   // "flows: 4 channels x 1 socket against 2 x 1"
  std::vector<std::string> verdict;       // the first line is the headline
  std::vector<std::string> nccl_settings; // export lines that give NCCL the engine's shape
};

// The comparison: the differences row by row, and a verdict from the three rates. A
// rate of 0 (that run failed) leaves the verdict saying which figure is missing.
AgainstNccl compare_with_nccl(const PathShape& engine, const PathShape& nccl, const std::optional<PathShape>& shaped);

// The table of what each used (one column per side), the verdict under it.
std::string format_against_nccl(const AgainstNccl& a);
nlohmann::json to_json(const AgainstNccl& a);

}  // namespace p2pscope::versus
