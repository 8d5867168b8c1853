#pragma once
// Element types of `bench nccl --dtype` (nccl-tests' -d) and the values the data
// check uses. Host code only, so the encodings are tested without a GPU.
//
// Inputs are small non-negative integers: exact in every type, and a sum of up to
// 42 ranks' inputs to a reduction stays exact too (int8 up to 127, bfloat16 up to
// 256, float16 up to 2048). Beyond that an int8 sum wraps, as NCCL's does, and a
// floating sum rounds; the check then allows the rounding (element_matches).
#include <array>
#include <cstdint>
#include <string>

#include "bench/formulas.hpp"

namespace p2pscope::bench {

enum class NcclType { int8, int32, float16, bfloat16, float32, float64 };
// The names nccl-tests' -d takes first; UsageError for others.
inline constexpr std::array<EnumName<NcclType>, 6> kNcclTypeNames{{
    {NcclType::float32, "float", {"float32", "fp32"}},
    {NcclType::float16, "half", {"float16", "fp16"}},
    {NcclType::bfloat16, "bfloat16", {"bf16"}},
    {NcclType::float64, "double", {"float64", "fp64"}},
    {NcclType::int8, "int8"},
    {NcclType::int32, "int32", {"int"}},
}};
NcclType parse_nccl_type(const std::string& text);
std::string to_string(NcclType t);
unsigned type_size(NcclType t);

// Rank `rank`'s input element i: for reductions 1..3 (sums stay small), else 1..97
// and different for every rank that holds it, so a chunk put in the wrong place shows.
std::int64_t collective_input_value(NcclOp op, int rank, std::uint64_t i);

// v as one element of type t at `out` (int8 wraps; float16/bfloat16 round to nearest even).
void encode_value(NcclType t, std::int64_t v, void* out);
double decode_value(NcclType t, const void* in);
// Whether an output element holds `want` (a sum of `terms` inputs): exact where the
// type holds `want` exactly, else within the rounding of `terms` additions.
bool element_matches(NcclType t, const void* got, std::int64_t want, int terms);

}  // namespace p2pscope::bench
