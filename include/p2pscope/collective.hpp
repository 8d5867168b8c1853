#pragma once
// The collectives, one table for every layer (issue 33 item 3): bench nccl measures them,
// predict and export model them, and both read the name and nccl-tests' busbw factor
// from the same row (NVIDIA/nccl-tests doc/PERFORMANCE.md):
//   algbw = S / t, S = the op's "size" as nccl-tests counts it;
//   busbw = algbw * factor(op, n), n = number of ranks:
//     allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; broadcast, sendrecv 1.
// For allgather / reducescatter / alltoall S is the total (n x per-rank chunk).
// bench::NcclOp and simulate::Collective are this enum under the names each layer reads.
#include <array>
#include <string>
#include <string_view>

#include "p2pscope/enum_names.hpp"

namespace p2pscope {

enum class CollectiveOp { allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv };

// busbw's factor over algbw, as a function of the ranks n.
enum class BusFactor {
  two_n_minus_1_over_n,  // 2(n-1)/n: every byte crosses a link twice (reduce, then gather)
  n_minus_1_over_n,      // (n-1)/n: each rank receives the n-1 chunks it lacks
  one,                   // 1: the message crosses once
};

// Shaped as EnumName rows (value, name, aliases, help): parse_enum and enum_choices read it.
struct CollectiveRow {
  CollectiveOp value;
  std::string_view name;
  std::array<std::string_view, 3> aliases{};
  std::string_view help{};
  BusFactor factor = BusFactor::one;
  std::string_view formula{};  // the factor in words, for the output
};
inline constexpr std::array<CollectiveRow, 6> kCollectiveOps{{
    {CollectiveOp::allreduce,
     "allreduce",
     {},
     {},
     BusFactor::two_n_minus_1_over_n,
     "nccl-tests: algbw = S/t, busbw = algbw * 2(n-1)/n"},
    {CollectiveOp::allgather,
     "allgather",
     {},
     {},
     BusFactor::n_minus_1_over_n,
     "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n"},
    {CollectiveOp::reducescatter,
     "reducescatter",
     {},
     {},
     BusFactor::n_minus_1_over_n,
     "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n"},
    {CollectiveOp::alltoall,
     "alltoall",
     {},
     {},
     BusFactor::n_minus_1_over_n,
     "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n"},
    {CollectiveOp::broadcast,
     "broadcast",
     {},
     {},
     BusFactor::one,
     "nccl-tests: algbw = S/t (S from root 0 to every rank), busbw = algbw"},
    {CollectiveOp::sendrecv, "sendrecv", {}, {}, BusFactor::one, "nccl-tests: algbw = S/t, busbw = algbw"},
}};

const CollectiveRow& collective_row(CollectiveOp op);
std::string to_string(CollectiveOp op);
// busbw / algbw for `op` over `nranks` ranks; 0 for fewer than one rank.
double busbw_factor(CollectiveOp op, int nranks);
// The formula, in words, for the output.
std::string busbw_formula_text(CollectiveOp op);

}  // namespace p2pscope
