// The UNPACK scatter: as NCCL's device unpack does for TCPX, one warp per piece,
// 16-byte loads/stores where the piece allows them, bytes for the rest.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "p2pscope/netplugin.hpp"

namespace p2pscope::net {
namespace {

constexpr int kWarpsPerBlock = 8;

__global__ void unpack_kernel(const UnpackPiece* __restrict__ pieces, std::size_t count,
                              const char* __restrict__ bounce, char* __restrict__ dst) {
  const int lane = threadIdx.x & 31;
  const std::size_t warp = blockIdx.x * (blockDim.x / 32) + (threadIdx.x / 32);
  const std::size_t nwarps = static_cast<std::size_t>(gridDim.x) * (blockDim.x / 32);
  for (std::size_t i = warp; i < count; i += nwarps) {
    // All lanes read the same 16-byte piece: one transaction, broadcast.
    const UnpackPiece p = pieces[i];
    const char* s = bounce + p.src_off;
    char* d = dst + p.dst_off;
    std::uint32_t len = p.len;
    std::uint32_t done = 0;
    if (((reinterpret_cast<std::uintptr_t>(s) | reinterpret_cast<std::uintptr_t>(d)) & 15) == 0) {
      const std::uint32_t vecs = len / 16;
      const int4* s4 = reinterpret_cast<const int4*>(s);
      int4* d4 = reinterpret_cast<int4*>(d);
      std::uint32_t v = lane;
      // Four loads in flight per lane before the stores: a 4 KiB piece is 8 per lane.
      for (; v + 96 < vecs; v += 128) {
        const int4 a = s4[v], b = s4[v + 32], c = s4[v + 64], e = s4[v + 96];
        d4[v] = a;
        d4[v + 32] = b;
        d4[v + 64] = c;
        d4[v + 96] = e;
      }
      for (; v < vecs; v += 32) d4[v] = s4[v];
      done = vecs * 16;
    }
    for (std::uint32_t b = done + lane; b < len; b += 32) d[b] = s[b];
  }
}

}  // namespace

void launch_unpack(const UnpackPiece* pieces, std::size_t count, const void* bounce, void* dst, void* stream) {
  if (count == 0) return;
  std::size_t blocks = (count + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 4096) blocks = 4096;  // grid-stride beyond: enough to fill an H100 many times over
  unpack_kernel<<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, static_cast<cudaStream_t>(stream)>>>(
      pieces, count, static_cast<const char*>(bounce), static_cast<char*>(dst));
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(std::string("unpack kernel launch (") + std::to_string(count) + " pieces): " + cudaGetErrorString(e));
}

bool unpack_kernel_available() { return true; }

}  // namespace p2pscope::net
