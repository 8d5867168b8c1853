// `bench nccl --dtype`: names, sizes and exact encodings of the check's values.
#include "bench/nccl_types.hpp"

#include "bench/collective_values.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "p2pscope/error.hpp"

namespace p2pscope::bench {
namespace {

std::uint32_t float_bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float bits_float(std::uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even, for the finite, non-negative values the check uses.
std::uint16_t to_bfloat16(float f) {
  const std::uint32_t u = float_bits(f);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
float from_bfloat16(std::uint16_t h) { return bits_float(static_cast<std::uint32_t>(h) << 16); }

std::uint16_t to_float16(float f) {
  if (f == 0) return 0;
  int e = 0;
  const float m = std::frexp(f, &e);  // f = m * 2^e, m in [0.5, 1)
  if (e > 16) return 0x7C00;          // beyond 65504: infinity
  if (e < -13) return static_cast<std::uint16_t>(std::nearbyint(f * 16777216.0f));  // subnormal (2^-24 steps)
  // 11 significant bits: 1.mmmmmmmmmm; nearbyint rounds to nearest even.
  auto sig = static_cast<std::uint32_t>(std::nearbyint(m * 2048.0f));
  if (sig == 2048) sig = 1024, ++e;
  if (e > 16) return 0x7C00;
  return static_cast<std::uint16_t>(((e + 14) << 10) | (sig & 0x3FFu));
}
float from_float16(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(man), -24);
  if (exp == 31) return sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(man + 1024), exp - 25);
}

int significand_bits(NcclType t) {
  switch (t) {
    case NcclType::float16: return 11;
    case NcclType::bfloat16: return 8;
    case NcclType::float32: return 24;
    case NcclType::float64: return 53;
    default: return 0;
  }
}

}  // namespace

NcclType parse_nccl_type(const std::string& t) { return parse_enum(kNcclTypeNames, t, "unknown --dtype"); }
std::string to_string(NcclType t) { return enum_name(kNcclTypeNames, t); }

unsigned type_size(NcclType t) {
  switch (t) {
    case NcclType::int8: return 1;
    case NcclType::float16:
    case NcclType::bfloat16: return 2;
    case NcclType::int32:
    case NcclType::float32: return 4;
    case NcclType::float64: return 8;
  }
  return 1;
}

std::int64_t collective_input_value(NcclOp op, int rank, std::uint64_t i) {
  return values::input_value(static_cast<int>(op), rank, i);
}

void encode_value(NcclType t, std::int64_t v, void* out) {
  switch (t) {
    case NcclType::int8: {
      const auto x = static_cast<std::int8_t>(static_cast<std::uint8_t>(v & 0xFF));
      std::memcpy(out, &x, 1);
      return;
    }
    case NcclType::int32: {
      const auto x = static_cast<std::int32_t>(v);
      std::memcpy(out, &x, 4);
      return;
    }
    case NcclType::float16: {
      const auto x = to_float16(static_cast<float>(v));
      std::memcpy(out, &x, 2);
      return;
    }
    case NcclType::bfloat16: {
      const auto x = to_bfloat16(static_cast<float>(v));
      std::memcpy(out, &x, 2);
      return;
    }
    case NcclType::float32: {
      const auto x = static_cast<float>(v);
      std::memcpy(out, &x, 4);
      return;
    }
    case NcclType::float64: {
      const auto x = static_cast<double>(v);
      std::memcpy(out, &x, 8);
      return;
    }
  }
}

double decode_value(NcclType t, const void* in) {
  switch (t) {
    case NcclType::int8: { std::int8_t x; std::memcpy(&x, in, 1); return x; }
    case NcclType::int32: { std::int32_t x; std::memcpy(&x, in, 4); return x; }
    case NcclType::float16: { std::uint16_t x; std::memcpy(&x, in, 2); return from_float16(x); }
    case NcclType::bfloat16: { std::uint16_t x; std::memcpy(&x, in, 2); return from_bfloat16(x); }
    case NcclType::float32: { float x; std::memcpy(&x, in, 4); return x; }
    case NcclType::float64: { double x; std::memcpy(&x, in, 8); return x; }
  }
  return NAN;
}

bool element_matches(NcclType t, const void* got, std::int64_t want, int terms) {
  unsigned char enc[8] = {};
  encode_value(t, want, enc);
  const double g = decode_value(t, got), w = decode_value(t, enc);
  const int bits = significand_bits(t);
  if (bits == 0 || std::fabs(static_cast<double>(want)) < std::ldexp(1.0, bits)) return g == w;  // exact
  // Rounded partial sums: each of the additions may be off by half an ulp of the total.
  const double ulp = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(std::fabs(w)))) - bits + 1);
  return std::fabs(g - w) <= ulp * std::max(1, terms);
}

}  // namespace p2pscope::bench
