#pragma once
// nccl-tests' bandwidth formulas (doc/PERFORMANCE.md in NVIDIA/nccl-tests):
//   algbw = S / t, S = the op's "size" as nccl-tests counts it;
//   busbw = algbw * factor(op, n), n = number of ranks:
//     allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; broadcast, sendrecv 1.
// For allgather / reducescatter / alltoall S is the total (n x per-rank chunk).
#include <array>
#include <string>

#include "p2pscope/enum_names.hpp"

namespace p2pscope::bench {

enum class NcclOp { allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv };
inline constexpr std::array<EnumName<NcclOp>, 6> kNcclOpNames{{
    {NcclOp::allreduce, "allreduce"},
    {NcclOp::allgather, "allgather"},
    {NcclOp::reducescatter, "reducescatter"},
    {NcclOp::alltoall, "alltoall"},
    {NcclOp::broadcast, "broadcast"},
    {NcclOp::sendrecv, "sendrecv"},
}};
NcclOp parse_nccl_op(const std::string& text);  // throws UsageError
std::string to_string(NcclOp op);

double busbw_factor(NcclOp op, int nranks);
inline double algbw_gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0.0; }
inline double busbw_gbps(NcclOp op, int nranks, double bytes, double seconds) {
  return algbw_gbps(bytes, seconds) * busbw_factor(op, nranks);
}
// The formula, in words, for the output.
std::string busbw_formula_text(NcclOp op);

}  // namespace p2pscope::bench
