// bench nccl's output check, against collectives computed on the host from the same
// inputs: right outputs pass in every op and type, and one wrong element anywhere
// is named by its index. (On a GPU the same check reads NCCL's real outputs.)
#include <gtest/gtest.h>

#include <cstring>

#include "bench/collective_check.hpp"

using namespace p2pscope::bench;

namespace {

std::int64_t value_at(const CollectiveShape& s, const std::vector<unsigned char>& buf, std::uint64_t i) {
  return static_cast<std::int64_t>(decode_value(s.type, &buf[i * s.esize]));
}

// What rank r's output must hold, computed on the host (sums exact, then encoded once).
std::vector<unsigned char> host_output(const CollectiveShape& s, int r) {
  std::vector<std::vector<unsigned char>> in;
  for (int q = 0; q < s.ranks; ++q) in.push_back(collective_input(s, q));
  std::vector<unsigned char> out(s.out_elems * s.esize);
  const std::uint64_t chunk = s.chunk, ur = static_cast<std::uint64_t>(r);
  for (std::uint64_t j = 0; j < s.out_elems; ++j) {
    std::int64_t v = 0;
    switch (s.op) {
      case NcclOp::allreduce:
        for (int q = 0; q < s.ranks; ++q) v += value_at(s, in[static_cast<std::size_t>(q)], j);
        break;
      case NcclOp::reducescatter:
        for (int q = 0; q < s.ranks; ++q) v += value_at(s, in[static_cast<std::size_t>(q)], ur * chunk + j);
        break;
      case NcclOp::allgather: v = value_at(s, in[j / chunk], j % chunk); break;
      case NcclOp::alltoall: v = value_at(s, in[j / chunk], ur * chunk + j % chunk); break;
      case NcclOp::broadcast: v = value_at(s, in[0], j); break;  // root 0's input everywhere
      case NcclOp::sendrecv: v = value_at(s, in[static_cast<std::size_t>((r + s.ranks - 1) % s.ranks)], j); break;
    }
    encode_value(s.type, v, &out[j * s.esize]);
  }
  return out;
}

const NcclOp kOps[] = {NcclOp::allreduce, NcclOp::allgather, NcclOp::reducescatter, NcclOp::alltoall, NcclOp::broadcast,
                       NcclOp::sendrecv};
const NcclType kTypes[] = {NcclType::int8, NcclType::int32, NcclType::float16, NcclType::bfloat16, NcclType::float32, NcclType::float64};

}  // namespace

TEST(CollectiveCheck, ShapesRoundToWholeElementsPerRank) {
  const auto s = collective_shape(NcclOp::allgather, NcclType::bfloat16, 3, 1000);
  EXPECT_EQ(s.bytes, 996u) << "a multiple of 2 bytes x 3 ranks";
  EXPECT_EQ(s.elems, 498u);
  EXPECT_EQ(s.in_elems, 166u) << "allgather: each rank sends its chunk";
  EXPECT_EQ(s.out_elems, 498u);
  EXPECT_EQ(collective_shape(NcclOp::reducescatter, NcclType::float64, 4, 1).bytes, 32u) << "at least one element per rank";
}

TEST(CollectiveCheck, RightOutputsPassAndAWrongElementIsNamed) {
  for (auto type : kTypes)
    for (auto op : kOps)
      for (int n : {1, 2, 3, 8}) {
        const auto s = collective_shape(op, type, n, 4096 + 24);
        for (int r = 0; r < n; ++r) {
          auto out = host_output(s, r);
          ASSERT_EQ(first_wrong_output(s, r, out), -1) << to_string(op) << " " << to_string(type) << " n=" << n << " r=" << r;
          const std::uint64_t bad = s.out_elems * 2 / 3;
          auto wrong = out;
          encode_value(type, value_at(s, out, bad) + 1, &wrong[bad * s.esize]);
          EXPECT_EQ(first_wrong_output(s, r, wrong), static_cast<std::int64_t>(bad)) << to_string(op) << " " << to_string(type);
          std::memset(out.data(), 0xFF, s.esize);  // the poison of an element never written
          EXPECT_EQ(first_wrong_output(s, r, out), 0) << to_string(op) << " " << to_string(type);
        }
      }
}

TEST(CollectiveCheck, ARanksChunkInAnotherPlaceIsCaught) {
  // allgather on 4 ranks with rank 1's and rank 2's chunks swapped.
  const auto s = collective_shape(NcclOp::allgather, NcclType::int8, 4, 400);
  auto out = host_output(s, 0);
  std::vector<unsigned char> swapped(out);
  const std::size_t c = s.chunk * s.esize;
  std::memcpy(&swapped[c], &out[2 * c], c);
  std::memcpy(&swapped[2 * c], &out[c], c);
  EXPECT_EQ(first_wrong_output(s, 0, swapped), static_cast<std::int64_t>(s.chunk));
}

TEST(CollectiveCheck, SumsBeyondATypesExactRangeAllowItsRounding) {
  // 151 ranks of bfloat16: the sums are 301, 302 and 303, and bfloat16 moves in steps
  // of 2 above 256, so 301 and 303 (elements 0, 3, 6, ... and 2, 5, ...) are rounded.
  const auto s = collective_shape(NcclOp::allreduce, NcclType::bfloat16, 151, 151 * 2 * 10);
  auto out = host_output(s, 0);
  EXPECT_EQ(first_wrong_output(s, 0, out), -1);
  // NCCL's partial sums may round differently: one step off passes, far off does not.
  encode_value(NcclType::bfloat16, value_at(s, out, 3) + 2, &out[3 * s.esize]);
  EXPECT_EQ(first_wrong_output(s, 0, out), -1);
  encode_value(NcclType::bfloat16, 1000, &out[6 * s.esize]);
  EXPECT_EQ(first_wrong_output(s, 0, out), 6);
  // An exact sum (302, element 1) one step off is wrong.
  out = host_output(s, 0);
  encode_value(NcclType::bfloat16, value_at(s, out, 1) + 2, &out[1 * s.esize]);
  EXPECT_EQ(first_wrong_output(s, 0, out), 1);
}
