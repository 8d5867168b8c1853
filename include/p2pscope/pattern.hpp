#pragma once
// The one data pattern every engine writes and checks: host and CUDA backends, NCCL,
// TCP and bench net. Word k (64-bit, little-endian) of the stream `seed` is the k-th
// output of SplitMix64 started at `seed` (Steele, Lea, Flood 2014): not periodic in
// any chunk size, and streams of nearby seeds (round r and r+1) do not overlap, so a
// destination holding zeros, stale data or another stream's data is caught.
// Usable from host code and from CUDA kernels (P2PSCOPE_HD); no CUDA header needed.
#include <cstdint>

#if defined(__CUDACC__)
#define P2PSCOPE_HD __host__ __device__ __forceinline__
#else
#define P2PSCOPE_HD inline
#endif

namespace p2pscope {

inline constexpr std::uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;

// SplitMix64's output function of state x + gamma (the generator's step folded in).
P2PSCOPE_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += kSplitMix64Gamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The stream a benchmark device (GPU, NUMA node, rank) fills its source buffer with,
// so a destination knows what device `d` sent.
P2PSCOPE_HD std::uint64_t pattern_seed(int device) {
  return 0x5032507363ull * static_cast<std::uint64_t>(device + 1) << 20;
}

P2PSCOPE_HD std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t word_index) {
  return splitmix64(seed + word_index * kSplitMix64Gamma);
}

// The byte at `offset` of the stream.
P2PSCOPE_HD std::uint8_t pattern_byte(std::uint64_t seed, std::uint64_t offset) {
  return static_cast<std::uint8_t>(pattern_word(seed, offset / 8) >> ((offset % 8) * 8));
}

// Host side (src/core/pattern.cpp). `dst`/`p` hold bytes [offset, offset + bytes) of
// the stream; any alignment and offset.
void pattern_fill(void* dst, std::uint64_t bytes, std::uint64_t seed, std::uint64_t offset = 0);
// Index (0-based, from p) of the first byte that differs from the stream; `bytes` when
// all match.
std::uint64_t pattern_first_mismatch(const void* p, std::uint64_t bytes, std::uint64_t seed, std::uint64_t offset = 0);

}  // namespace p2pscope
