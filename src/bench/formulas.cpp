// bench's name for the collective table's parser (formulas.hpp); the table and the busbw
// factor are p2pscope/collective.hpp (src/core/collective.cpp).
#include "bench/formulas.hpp"

namespace p2pscope::bench {

NcclOp parse_nccl_op(const std::string& t) { return parse_enum(kNcclOpNames, t, "unknown NCCL op"); }

}  // namespace p2pscope::bench
