#pragma once
// bench nccl's inputs built and outputs checked on the GPU, as nccl-tests does: the
// same values as the host check (bench/collective_values.hpp), without reading a GiB
// per rank back over PCIe and comparing it on a host thread.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace p2pscope::bench::nccl {

// Plain arguments (not CollectiveShape): nvcc compiles this as C++17 and the shape's
// header as C++20. `op` is values::Op; `esize` bytes per element; `codes_dev`:
// CollectiveCodes::enc (bench/collective_check.hpp) copied to device `dev` (current).

// Fills rank `rank`'s input (`elems` elements) on `stream`.
void gpu_fill_input(void* in, std::uint64_t elems, unsigned esize, int op, int rank, const void* codes_dev,
                    cudaStream_t stream, int dev);

// Starts the check of rank `rank`'s output (`elems` elements; `chunk` elements per rank)
// on `stream`: the first wrong element's index goes to *first_bad (8 bytes of device
// memory, set here to 0x7f7f7f7f7f7f7f7f, above any index, first). Read it after the
// stream is synchronised.
void gpu_check_output(const void* out, std::uint64_t elems, unsigned esize, int op, int ranks, int rank,
                      std::uint64_t chunk, const void* codes_dev, long long* first_bad, cudaStream_t stream, int dev);

}  // namespace p2pscope::bench::nccl
