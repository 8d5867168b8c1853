#pragma once
// The three runs of `bench tcp|net --against-nccl`, in this order: NCCL's send/recv
// (nccl_pair_run.hpp), the engine at the user's settings, and the engine again at
// NCCL's shape (its channels, sockets, chunk and window as its log tells them). All
// over loopback on this host, GPU memory at both ends: the same GPU, NICs and transport.
// A run that fails keeps the others' figures; the stop flag ends the sequence early.
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "p2pscope/tcp.hpp"
#include "versus/against_nccl.hpp"
#include "versus/nccl_pair_run.hpp"

namespace p2pscope::versus {

struct AgainstSpec {
  tcp::Params params;        // the engine's settings (mode bw, one GPU)
  tcp::LocalOptions local;   // its data path (sockets or a plugin), NICs, bindings
  std::string transport;     // "sockets" or "plugin 'NAME'": how the table names the engine's path
  NcclPairSpec nccl;         // size, iters and warmup are taken from params
  std::function<void(const std::string&)> progress;  // one line per run started
};

struct AgainstRun {
  AgainstNccl comparison;
  std::optional<tcp::Results> engine, shaped;
  NcclPairRun nccl;
  std::vector<std::string> errors;  // a run that failed: which, and why
};

AgainstRun run_against_nccl(AgainstSpec spec);

// The engine's side of the table from its results: flows, the workers' CPUs as they
// were checked at run time, the memory path, the receiver's rate.
PathShape engine_shape(const tcp::Results& r, const std::string& transport, const std::string& who);

}  // namespace p2pscope::versus
