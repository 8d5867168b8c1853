#pragma once
// What NCCL says about its own choices, read from its NCCL_DEBUG=INFO log with the
// TUNING subsystem on: one line per collective call on each communicator's rank 0,
//   "AllReduce: 8388608 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15}"
// (NCCL 2.19 and later; older versions print "Algo 1 proto 2 time 12.3", numbers
// that index NCCL's tables: algorithms Tree, Ring, CollNetDirect, CollNetChain, NVLS,
// NVLSTree, PAT; protocols LL, LL128, Simple), and the version banner
// "NCCL version 2.28.3+cuda13.0". Host code only: tested on real logs in CI.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace p2pscope::simulate {

struct NcclChoice {
  std::string algo, proto;  // "RING", "TREE", ...; "LL", "LL128", "SIMPLE" (upper case)
  int channels = 0;         // channel{Lo..Hi}: Hi - Lo + 1; 0 when the line does not say
  int calls = 0;            // lines seen with this op and size
};

struct NcclTuning {
  std::string version;  // "2.28.3" ("" when the banner is absent)
  // (op as p2pscope names it: allreduce, allgather, reducescatter, broadcast, ...;
  // NCCL's byte count of the call) -> its most frequent choice
  std::map<std::pair<std::string, std::uint64_t>, NcclChoice> choices;
  std::size_t lines = 0;     // TUNING lines read
  std::size_t unparsed = 0;  // lines that looked like one but did not parse
};

// Reads every line of `text`; never throws on garbage (counted in unparsed).
NcclTuning parse_nccl_tuning(const std::string& text);
// Merges b into a (a wins where both have a choice).
void merge(NcclTuning& a, const NcclTuning& b);

// NCCL's byte count of a call, from nccl-tests' S: allgather counts one rank's send
// (S / n); reducescatter one rank's receive (S / n); the others S.
std::uint64_t nccl_call_bytes(const std::string& op, std::uint64_t S, int ranks);

// The choice for op at nccl-tests' size S, or nullptr when the log has none.
const NcclChoice* find_choice(const NcclTuning& log, const std::string& op, std::uint64_t S, int ranks);

}  // namespace p2pscope::simulate
