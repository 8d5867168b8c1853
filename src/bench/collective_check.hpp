#pragma once
// What one collective of `bench nccl` is, rank by rank, on the host side: buffer
// sizes, each rank's input, and whether a rank's output is right. No NCCL here, so
// the check is tested in CI against collectives simulated on the host; the NCCL calls
// are in transport/nccl/collective_ops.hpp.
#include <cstdint>
#include <vector>

#include "bench/collective_values.hpp"
#include "bench/formulas.hpp"
#include "bench/nccl_types.hpp"

namespace p2pscope::bench {

struct CollectiveShape {
  NcclOp op = NcclOp::allreduce;
  NcclType type = NcclType::float32;
  int ranks = 1;
  unsigned esize = 4;                         // bytes per element
  std::uint64_t bytes = 0;                    // nccl-tests' S, a multiple of esize x ranks
  std::uint64_t elems = 0, chunk = 0;         // S in elements; one rank's share of it
  std::uint64_t in_elems = 0, out_elems = 0;  // per rank
};
// `bytes` rounded down to a multiple of esize x ranks (at least one element per rank).
CollectiveShape collective_shape(NcclOp op, NcclType type, int ranks, std::uint64_t bytes);

// Whether nccl-tests' in-place variant of op means something here (allreduce, allgather,
// reducescatter, broadcast; not alltoall or sendrecv).
bool has_in_place(NcclOp op);

// Rank `rank`'s input buffer, in_elems elements of the shape's type.
std::vector<unsigned char> collective_input(const CollectiveShape& s, int rank);
// What a GPU needs to build the inputs and check the outputs itself, as nccl-tests
// does (reading a GiB back per rank to check it on the host took 7 s of a 10 s run on
// 4 x H200): the bytes of every value an input or output holds, 8 per value.
struct CollectiveCodes {
  std::vector<unsigned char> enc;  // value v's encoding at enc[8 v], v = 0 .. max
  // Every expected value is held exactly by the type, so bytes compare; else (a sum
  // too large for the type's significand) only the host check's tolerance will do.
  bool exact = true;
};
CollectiveCodes collective_codes(const CollectiveShape& s);

// Index of the first element of rank `rank`'s output that is wrong, -1 when all are
// right. Runs over every element of outputs up to a GiB, so the expected values
// (a few dozen distinct ones) are encoded once and compared byte for byte.
std::int64_t first_wrong_output(const CollectiveShape& s, int rank, const std::vector<unsigned char>& out);

}  // namespace p2pscope::bench
