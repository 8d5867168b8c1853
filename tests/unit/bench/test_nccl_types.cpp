// bench nccl --dtype: the check's values must be encoded exactly, decoded back, and a
// wrong element must be caught in every type, while a correctly rounded sum passes.
#include <gtest/gtest.h>

#include <cstring>

#include "bench/nccl_types.hpp"
#include "p2pscope/error.hpp"

using namespace p2pscope;
using namespace p2pscope::bench;

namespace {
const NcclType kAll[] = {NcclType::int8, NcclType::int32, NcclType::float16, NcclType::bfloat16, NcclType::float32, NcclType::float64};
}

TEST(NcclTypes, NamesAndSizesFollowNcclTests) {
  EXPECT_EQ(parse_nccl_type("float"), NcclType::float32);
  EXPECT_EQ(parse_nccl_type("bf16"), NcclType::bfloat16);
  EXPECT_EQ(parse_nccl_type("half"), NcclType::float16);
  EXPECT_EQ(parse_nccl_type("int"), NcclType::int32);
  EXPECT_EQ(type_size(NcclType::bfloat16), 2u);
  EXPECT_EQ(type_size(NcclType::float64), 8u);
  EXPECT_EQ(type_size(NcclType::int8), 1u);
  for (auto t : kAll) EXPECT_EQ(parse_nccl_type(to_string(t)), t);
  try {
    parse_nccl_type("fp8");
    FAIL() << "fp8 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << "names the types there are: " << e.what();
  }
}

TEST(NcclTypes, SmallIntegersRoundTripExactlyInEveryType) {
  for (auto t : kAll)
    for (std::int64_t v : {0, 1, 2, 3, 97, 126, 127}) {
      unsigned char b[8] = {};
      encode_value(t, v, b);
      EXPECT_EQ(decode_value(t, b), static_cast<double>(v)) << to_string(t) << " " << v;
      EXPECT_TRUE(element_matches(t, b, v, 1)) << to_string(t) << " " << v;
    }
  // The exact limits: bfloat16 holds 256 but not 257, float16 2048 but not 2049.
  unsigned char b[8] = {};
  encode_value(NcclType::bfloat16, 256, b);
  EXPECT_EQ(decode_value(NcclType::bfloat16, b), 256.0);
  encode_value(NcclType::bfloat16, 257, b);
  EXPECT_EQ(decode_value(NcclType::bfloat16, b), 256.0) << "ties round to even";
  encode_value(NcclType::bfloat16, 259, b);
  EXPECT_EQ(decode_value(NcclType::bfloat16, b), 260.0);
  encode_value(NcclType::float16, 2049, b);
  EXPECT_EQ(decode_value(NcclType::float16, b), 2048.0);
  encode_value(NcclType::float16, 1000, b);
  EXPECT_EQ(decode_value(NcclType::float16, b), 1000.0);
  std::uint16_t one = 0;
  encode_value(NcclType::float16, 1, &one);
  EXPECT_EQ(one, 0x3C00) << "IEEE half 1.0";
  encode_value(NcclType::bfloat16, 1, &one);
  EXPECT_EQ(one, 0x3F80) << "bfloat16 1.0";
}

TEST(NcclTypes, AWrongElementIsCaughtAndARoundedSumIsNot) {
  for (auto t : kAll) {
    unsigned char b[8] = {};
    encode_value(t, 5, b);
    EXPECT_FALSE(element_matches(t, b, 6, 4)) << to_string(t) << ": an off-by-one sum below the exact limit";
    std::memset(b, 0xFF, sizeof b);  // the poison the output is filled with
    EXPECT_FALSE(element_matches(t, b, 3, 1)) << to_string(t) << ": an element never written";
  }
  // int8 sums wrap as NCCL's do: 200 is -56.
  unsigned char w = 0;
  encode_value(NcclType::int8, 200, &w);
  EXPECT_EQ(decode_value(NcclType::int8, &w), -56.0);
  EXPECT_TRUE(element_matches(NcclType::int8, &w, 200, 64));
  // bfloat16 beyond 256: a sum of 100 terms that NCCL rounded differently is accepted,
  // one far off is not.
  unsigned char r[2] = {};
  encode_value(NcclType::bfloat16, 300, r);  // 300 rounds to 300 (step 2 here)
  EXPECT_TRUE(element_matches(NcclType::bfloat16, r, 302, 100));
  EXPECT_FALSE(element_matches(NcclType::bfloat16, r, 1000, 100));
}

TEST(NcclTypes, InputsStaySmallAndTellRanksApart) {
  for (int rank = 0; rank < 64; ++rank)
    for (std::uint64_t i = 0; i < 300; ++i) {
      EXPECT_LE(collective_input_value(NcclOp::allreduce, rank, i), 3);
      EXPECT_GE(collective_input_value(NcclOp::allreduce, rank, i), 1);
      EXPECT_LE(collective_input_value(NcclOp::allgather, rank, i), 97);
    }
  // A chunk from the wrong rank differs somewhere in its first elements.
  for (int a = 0; a < 16; ++a)
    for (int b = a + 1; b < 16; ++b)
      EXPECT_NE(collective_input_value(NcclOp::allgather, a, 0), collective_input_value(NcclOp::allgather, b, 0)) << a << " vs " << b;
}
