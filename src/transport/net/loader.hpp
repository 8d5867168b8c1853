#pragma once
// Finding and opening plugin files: NCCL's name resolution, dlopen with errors that
// say what the file is, the ncclNetPlugin_vN symbols it exports.
#include <string>
#include <vector>

namespace p2pscope::net::detail {

struct OpenedLib {
  void* dl = nullptr;       // dlopen handle (caller dlcloses)
  std::string file;         // the candidate that opened
  std::string path;         // its path on disk
  std::vector<int> versions;  // every ncclNetPlugin_vN present (N in 1..30)
};

// Opens the first candidate of `request` (see LoadOptions::plugin) that dlopen
// accepts. Throws Error naming every candidate tried and why each failed.
OpenedLib open_plugin_file(const std::string& request);

// Candidate names for a request, NCCL 2.28's order (plugin_open.cc): the value as
// given, then libnccl-net-VALUE.so when VALUE is a bare name; unset: libnccl-net.so.
std::vector<std::string> candidates_for(const std::string& request);

const void* plugin_symbol(void* dl, int version);  // ncclNetPlugin_vN or nullptr

}  // namespace p2pscope::net::detail
