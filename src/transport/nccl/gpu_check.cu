// bench nccl's GPU-side inputs and output check (gpu_check.hpp).
#include <cuda_runtime.h>

#include "bench/collective_values.hpp"
#include "transport/cuda/cuda_util.hpp"
#include "transport/nccl/gpu_check.hpp"

namespace p2pscope::bench::nccl {
namespace {

// Element i's bytes are value v's encoding (8 bytes a value in `codes`).
__global__ void fill_input_kernel(unsigned char* buf, std::uint64_t count, unsigned esize, int op, int rank,
                                  const unsigned char* codes) {
  const std::uint64_t stride = (std::uint64_t)gridDim.x * blockDim.x;
  for (std::uint64_t i = blockIdx.x * (std::uint64_t)blockDim.x + threadIdx.x; i < count; i += stride) {
    const unsigned char* e = codes + 8 * values::input_value(op, rank, i);
    for (unsigned b = 0; b < esize; ++b) buf[i * esize + b] = e[b];
  }
}

__global__ void check_output_kernel(const unsigned char* buf, std::uint64_t count, unsigned esize, int op, int ranks,
                                    int rank, std::uint64_t chunk, values::Sums sums, const unsigned char* codes,
                                    long long* first_bad) {
  const std::uint64_t stride = (std::uint64_t)gridDim.x * blockDim.x;
  for (std::uint64_t j = blockIdx.x * (std::uint64_t)blockDim.x + threadIdx.x; j < count; j += stride) {
    const unsigned char* e = codes + 8 * values::output_value(op, ranks, rank, chunk, sums, j);
    for (unsigned b = 0; b < esize; ++b)
      if (buf[j * esize + b] != e[b]) {
        atomicMin(first_bad, (long long)j);
        break;
      }
  }
}

int grid_for(std::uint64_t work) {
  const std::uint64_t b = (work + 255) / 256;
  return static_cast<int>(b < 1 ? 1 : (b > 8192 ? 8192 : b));
}

}  // namespace

void gpu_fill_input(void* in, std::uint64_t elems, unsigned esize, int op, int rank, const void* codes_dev,
                    cudaStream_t stream, int dev) {
  fill_input_kernel<<<grid_for(elems), 256, 0, stream>>>(static_cast<unsigned char*>(in), elems, esize, op, rank,
                                                          static_cast<const unsigned char*>(codes_dev));
  cuda::check(cudaGetLastError(), "bench nccl input fill kernel launch", dev);
}

void gpu_check_output(const void* out, std::uint64_t elems, unsigned esize, int op, int ranks, int rank,
                      std::uint64_t chunk, const void* codes_dev, long long* first_bad, cudaStream_t stream, int dev) {
  // 0x7f7f7f7f7f7f7f7f: above any index, and a memset needs no host buffer.
  cuda::check(cudaMemsetAsync(first_bad, 0x7f, sizeof(long long), stream), "cudaMemsetAsync", dev);
  check_output_kernel<<<grid_for(elems), 256, 0, stream>>>(static_cast<const unsigned char*>(out), elems, esize, op, ranks,
                                                            rank, chunk, values::reduction_sums(op, ranks),
                                                            static_cast<const unsigned char*>(codes_dev), first_bad);
  cuda::check(cudaGetLastError(), "bench nccl output check kernel launch", dev);
}

}  // namespace p2pscope::bench::nccl
