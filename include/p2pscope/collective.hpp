#pragma once
// The collectives, one table for every layer (issue 33 item 3): bench nccl measures them,
// predict and export model them, and both read the name and nccl-tests' busbw factor
// from the same row (NVIDIA/nccl-tests doc/PERFORMANCE.md):
//   algbw = S / t, S = the op's "size" as nccl-tests counts it;
//   busbw = algbw * factor(op, n), n = number of ranks:
//     allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; broadcast, sendrecv 1.
// For allgather / reducescatter / alltoall S is the total (n x per-rank chunk).
// The same rows say how NCCL runs each op (ring steps, calls per iteration), which
// predict's NCCL model prices (src/simulate/nccl_model.cpp), and nccl-tests' own name.
// bench::NcclOp and simulate::Collective are this enum under the names each layer reads.
#include <array>
#include <optional>
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

// How NCCL moves the op: a ring whose steps each carry S/n (the chunk of one rank), a
// ring that pipelines all of S through every step (broadcast), or point-to-point sends.
enum class NcclSchedule { ring_chunks, ring_pipeline, p2p };
// The ring's steps at n ranks (point-to-point ops count one).
enum class RingSteps { two_n_minus_1, n_minus_1, one };
// NCCL calls of one iteration when one process drives all n ranks (nccl-tests -g n):
// one per rank, a send and a receive per rank, or a send and a receive per rank pair.
enum class NcclCalls { n, two_n, two_n_squared };

// Shaped as EnumName rows (value, name, aliases, help): parse_enum and enum_choices read it.
struct CollectiveRow {
  CollectiveOp value;
  std::string_view name;
  std::array<std::string_view, 3> aliases{};
  std::string_view help{};
  BusFactor factor = BusFactor::one;
  std::string_view formula{};  // the factor in words, for the output
  std::string_view nccl_tests_name{};  // as nccl-tests' binaries and headers say it: all_reduce
  NcclSchedule schedule = NcclSchedule::p2p;
  RingSteps steps = RingSteps::one;
  NcclCalls calls = NcclCalls::n;
};
inline constexpr std::array<CollectiveRow, 6> kCollectiveOps{{
    {CollectiveOp::allreduce, "allreduce", {}, {}, BusFactor::two_n_minus_1_over_n,
     "nccl-tests: algbw = S/t, busbw = algbw * 2(n-1)/n", "all_reduce", NcclSchedule::ring_chunks,
     RingSteps::two_n_minus_1, NcclCalls::n},
    {CollectiveOp::allgather, "allgather", {}, {}, BusFactor::n_minus_1_over_n,
     "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n", "all_gather", NcclSchedule::ring_chunks,
     RingSteps::n_minus_1, NcclCalls::n},
    {CollectiveOp::reducescatter, "reducescatter", {}, {}, BusFactor::n_minus_1_over_n,
     "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n", "reduce_scatter", NcclSchedule::ring_chunks,
     RingSteps::n_minus_1, NcclCalls::n},
    {CollectiveOp::alltoall, "alltoall", {}, {}, BusFactor::n_minus_1_over_n,
     "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n", "alltoall", NcclSchedule::p2p,
     RingSteps::one, NcclCalls::two_n_squared},
    {CollectiveOp::broadcast, "broadcast", {}, {}, BusFactor::one,
     "nccl-tests: algbw = S/t (S from root 0 to every rank), busbw = algbw", "broadcast", NcclSchedule::ring_pipeline,
     RingSteps::n_minus_1, NcclCalls::n},
    {CollectiveOp::sendrecv, "sendrecv", {}, {}, BusFactor::one, "nccl-tests: algbw = S/t, busbw = algbw", "sendrecv",
     NcclSchedule::p2p, RingSteps::one, NcclCalls::two_n},
}};

const CollectiveRow& collective_row(CollectiveOp op);
std::string to_string(CollectiveOp op);
// busbw / algbw for `op` over `nranks` ranks; 0 for fewer than one rank.
double busbw_factor(CollectiveOp op, int nranks);
// The formula, in words, for the output.
std::string busbw_formula_text(CollectiveOp op);
// Bytes each rank puts on the wire for an op of size S over n ranks: S x busbw's factor,
// the identity nccl-tests' busbw is built on (0 for fewer than one rank).
double wire_bytes(CollectiveOp op, int nranks, double S);
// The ring steps of one call over n ranks, and the NCCL calls of one iteration when one
// process drives every rank (see NcclCalls).
int ring_steps(CollectiveOp op, int nranks);
int nccl_calls(CollectiveOp op, int nranks);
// Our name or nccl-tests' ("all_reduce") to the op; nullopt for neither.
std::optional<CollectiveOp> find_collective(std::string_view name);

}  // namespace p2pscope
