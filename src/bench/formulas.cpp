// nccl-tests' ops and bandwidth formulas (formulas.hpp): the op table's names, the busbw
// factor and its text. The simulator's collectives point at these rows (simulate/names.cpp).
#include "bench/formulas.hpp"

namespace p2pscope::bench {

NcclOp parse_nccl_op(const std::string& t) { return parse_enum(kNcclOpNames, t, "unknown NCCL op"); }
std::string to_string(NcclOp op) { return enum_name(kNcclOpNames, op); }

double busbw_factor(NcclOp op, int n) {
  if (n < 1) return 0;
  switch (op) {
    case NcclOp::allreduce: return 2.0 * (n - 1) / n;
    case NcclOp::allgather:
    case NcclOp::reducescatter:
    case NcclOp::alltoall: return static_cast<double>(n - 1) / n;
    case NcclOp::broadcast:
    case NcclOp::sendrecv: return 1.0;
  }
  return 0;
}

std::string busbw_formula_text(NcclOp op) {
  switch (op) {
    case NcclOp::allreduce: return "nccl-tests: algbw = S/t, busbw = algbw * 2(n-1)/n";
    case NcclOp::allgather:
    case NcclOp::reducescatter: return "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n";
    case NcclOp::alltoall: return "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n";
    case NcclOp::broadcast: return "nccl-tests: algbw = S/t (S from root 0 to every rank), busbw = algbw";
    case NcclOp::sendrecv: return "nccl-tests: algbw = S/t, busbw = algbw";
  }
  return "";
}

}  // namespace p2pscope::bench
