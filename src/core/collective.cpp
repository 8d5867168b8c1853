// The collective table's lookups (p2pscope/collective.hpp): names, nccl-tests' busbw
// factor and its words, NCCL's schedule of each op, read by bench nccl and by the
// simulator alike.
#include "p2pscope/collective.hpp"

#include "p2pscope/error.hpp"

namespace p2pscope {

const CollectiveRow& collective_row(CollectiveOp op) {
  for (const auto& row : kCollectiveOps)
    if (row.value == op) return row;
  throw Error("collective " + std::to_string(static_cast<int>(op)) + " has no row in kCollectiveOps");
}

std::string to_string(CollectiveOp op) { return enum_name(kCollectiveOps, op); }

double busbw_factor(CollectiveOp op, int n) {
  if (n < 1) return 0;
  switch (collective_row(op).factor) {
    case BusFactor::two_n_minus_1_over_n:
      return 2.0 * (n - 1) / n;
    case BusFactor::n_minus_1_over_n:
      return static_cast<double>(n - 1) / n;
    case BusFactor::one:
      return 1.0;
  }
  return 0;
}

std::string busbw_formula_text(CollectiveOp op) { return std::string(collective_row(op).formula); }

double wire_bytes(CollectiveOp op, int n, double S) { return busbw_factor(op, n) * S; }

int ring_steps(CollectiveOp op, int n) {
  switch (collective_row(op).steps) {
    case RingSteps::two_n_minus_1:
      return 2 * (n - 1);
    case RingSteps::n_minus_1:
      return n - 1;
    case RingSteps::one:
      return 1;
  }
  return 1;
}

int nccl_calls(CollectiveOp op, int n) {
  switch (collective_row(op).calls) {
    case NcclCalls::n:
      return n;
    case NcclCalls::two_n:
      return 2 * n;
    case NcclCalls::two_n_squared:
      return 2 * n * n;
  }
  return n;
}

std::optional<CollectiveOp> find_collective(std::string_view name) {
  if (auto op = find_enum(kCollectiveOps, name)) return op;
  for (const auto& row : kCollectiveOps)
    if (name == row.nccl_tests_name) return row.value;
  return std::nullopt;
}

}  // namespace p2pscope
