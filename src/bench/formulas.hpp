#pragma once
// nccl-tests' ops and bandwidth formulas under bench's names. The op table itself, with
// each op's busbw factor, is p2pscope/collective.hpp: the simulator reads the same rows.
#include <string>

#include "p2pscope/collective.hpp"

namespace p2pscope::bench {

using NcclOp = CollectiveOp;
inline constexpr const auto& kNcclOpNames = kCollectiveOps;
NcclOp parse_nccl_op(const std::string& text);  // throws UsageError
using p2pscope::busbw_factor;
using p2pscope::busbw_formula_text;
using p2pscope::to_string;

inline double algbw_gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0.0; }
inline double busbw_gbps(NcclOp op, int nranks, double bytes, double seconds) {
  return algbw_gbps(bytes, seconds) * busbw_factor(op, nranks);
}

}  // namespace p2pscope::bench
