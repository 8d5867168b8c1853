#pragma once
// The pseudo-random fill every backend uses: 64-bit word k of device d's source
// buffer is splitmix64(seed(d) + k). Never all zeros, differs per source device, so
// a destination holding stale data, another device's data or zeros is caught.
// Usable from host code and from CUDA kernels (P2PSCOPE_HD).
#include <cstdint>

#if defined(__CUDACC__)
#define P2PSCOPE_HD __host__ __device__ __forceinline__
#else
#define P2PSCOPE_HD inline
#endif

namespace p2pscope::bench {

P2PSCOPE_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

P2PSCOPE_HD std::uint64_t pattern_seed(int device) {
  return 0x5032507363ull * static_cast<std::uint64_t>(device + 1) << 20;
}

P2PSCOPE_HD std::uint64_t pattern_word(int device, std::uint64_t word_index) {
  return splitmix64(pattern_seed(device) + word_index);
}

// The expected byte at `offset` (little-endian words).
P2PSCOPE_HD std::uint8_t pattern_byte(int device, std::uint64_t offset) {
  return static_cast<std::uint8_t>(pattern_word(device, offset / 8) >> ((offset % 8) * 8));
}

}  // namespace p2pscope::bench
