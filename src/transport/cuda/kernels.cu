// The engine's kernels: pattern fill and check, the blocking-start spin, the 16-byte
// copy (push or pull), %globaltimer reads, an FMA heater and the ping-pong pair.
#include <cuda_runtime.h>

#include "bench/pattern.hpp"
#include "transport/cuda/cuda_util.hpp"
#include "transport/cuda/kernels.hpp"

namespace p2pscope::bench::cuda {
namespace {

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void fill_kernel(unsigned char* dst, std::uint64_t bytes, int device) {
  const std::uint64_t words = bytes / 8;
  auto* w = reinterpret_cast<std::uint64_t*>(dst);
  for (std::uint64_t k = blockIdx.x * (std::uint64_t)blockDim.x + threadIdx.x; k < words; k += (std::uint64_t)gridDim.x * blockDim.x)
    w[k] = pattern_word(device, k);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (std::uint64_t i = words * 8; i < bytes; ++i) dst[i] = pattern_byte(device, i);
}

__global__ void verify_kernel(const unsigned char* buf, std::uint64_t bytes, int device, long long* first_bad) {
  const std::uint64_t words = bytes / 8;
  const auto* w = reinterpret_cast<const std::uint64_t*>(buf);
  for (std::uint64_t k = blockIdx.x * (std::uint64_t)blockDim.x + threadIdx.x; k < words; k += (std::uint64_t)gridDim.x * blockDim.x)
    if (w[k] != pattern_word(device, k))
      for (std::uint64_t i = k * 8; i < k * 8 + 8; ++i)
        if (buf[i] != pattern_byte(device, i)) { atomicMin(first_bad, (long long)i); break; }
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (std::uint64_t i = words * 8; i < bytes; ++i)
      if (buf[i] != pattern_byte(device, i)) { atomicMin(first_bad, (long long)i); break; }
}

// Gives up after timeout_ns so a host that died before releasing cannot wedge the GPU.
__global__ void spin_kernel(const volatile int* flag, int value, unsigned long long timeout_ns) {
  const unsigned long long t0 = globaltimer();
  while (*flag != value && globaltimer() - t0 < timeout_ns) __nanosleep(100);
}

// Four independent 16-byte loads in flight per thread before the stores.
__global__ void __launch_bounds__(512) copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::uint64_t vecs,
                                                   unsigned char* dst_tail, const unsigned char* src_tail, int tail) {
  const std::uint64_t stride = (std::uint64_t)gridDim.x * blockDim.x;
  std::uint64_t i = blockIdx.x * (std::uint64_t)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < vecs; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
  }
  for (; i < vecs; i += stride) dst[i] = src[i];
  if (blockIdx.x == 0 && threadIdx.x < tail) dst_tail[threadIdx.x] = src_tail[threadIdx.x];
}

__global__ void timer_kernel(unsigned long long* out) { *out = globaltimer(); }

__global__ void fma_kernel(float* sink, long long iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-3f;
  for (long long i = 0; i < iters; ++i)
#pragma unroll 64
    for (int j = 0; j < 4096; ++j) { a = fmaf(a, b, c); d = fmaf(d, c, b); }
  if (a + d == 12345.0f) sink[threadIdx.x] = a + d;  // keeps the loop alive
}

__device__ __forceinline__ void send_msg(volatile unsigned long long* peer_flag, unsigned char* peer_msg,
                                         const unsigned char* my_msg, int msg, unsigned long long value) {
  for (int i = threadIdx.x; i < msg; i += blockDim.x) peer_msg[i] = my_msg[i];
  if (msg > 0) __threadfence_system();  // each lane's payload is visible before the flag
  __syncwarp();
  if (threadIdx.x == 0) *peer_flag = value;
}

// False when the flag did not arrive before `deadline` (%globaltimer ns).
__device__ __forceinline__ bool wait_flag(volatile unsigned long long* my_flag, unsigned long long value,
                                          unsigned long long deadline) {
  int ok = 1;
  if (threadIdx.x == 0)
    while (*my_flag < value)
      if (globaltimer() > deadline) { ok = 0; break; }
  return __shfl_sync(0xffffffffu, ok, 0) != 0;
}

// A sample that timed out is written as ~0ull.
__global__ void ping_kernel(volatile unsigned long long* my_flag, volatile unsigned long long* peer_flag, unsigned char* peer_msg,
                            const unsigned char* my_msg, int msg, int samples, int rounds, unsigned long long* out_ns,
                            unsigned long long timeout_ns) {
  const unsigned long long deadline = globaltimer() + timeout_ns;
  unsigned long long k = 0;
  for (int s = 0; s < samples; ++s) {
    const unsigned long long t0 = globaltimer();
    for (int r = 0; r < rounds; ++r) {
      ++k;
      send_msg(peer_flag, peer_msg, my_msg, msg, k);
      if (!wait_flag(my_flag, k, deadline)) {
        if (threadIdx.x == 0) out_ns[s] = ~0ull;
        return;
      }
    }
    const unsigned long long t1 = globaltimer();
    if (threadIdx.x == 0) out_ns[s] = t1 - t0;
  }
}

__global__ void pong_kernel(volatile unsigned long long* my_flag, volatile unsigned long long* peer_flag, unsigned char* peer_msg,
                            const unsigned char* my_msg, int msg, long long total, unsigned long long timeout_ns) {
  const unsigned long long deadline = globaltimer() + timeout_ns;
  for (unsigned long long k = 1; k <= (unsigned long long)total; ++k) {
    if (!wait_flag(my_flag, k, deadline)) return;
    send_msg(peer_flag, peer_msg, my_msg, msg, k);
  }
}

constexpr unsigned long long kPingTimeoutNs = 30ull * 1000000000ull;

int grid_for(std::uint64_t work, int threads) {
  const std::uint64_t b = (work + threads - 1) / threads;
  return static_cast<int>(b < 1 ? 1 : (b > 4096 ? 4096 : b));
}
void after_launch(const char* what, int dev) { check(cudaGetLastError(), what, dev); }

}  // namespace

void preload_kernels(int dev) {
  const void* kernels[] = {reinterpret_cast<const void*>(fill_kernel), reinterpret_cast<const void*>(verify_kernel),
                           reinterpret_cast<const void*>(spin_kernel), reinterpret_cast<const void*>(copy_kernel),
                           reinterpret_cast<const void*>(timer_kernel), reinterpret_cast<const void*>(fma_kernel),
                           reinterpret_cast<const void*>(ping_kernel), reinterpret_cast<const void*>(pong_kernel)};
  for (const void* k : kernels) {
    cudaFuncAttributes a{};
    check(cudaFuncGetAttributes(&a, k), "cudaFuncGetAttributes (kernel preload)", dev);
  }
}

void launch_fill(void* dst, std::uint64_t bytes, int pd, cudaStream_t s, int dev) {
  fill_kernel<<<grid_for(bytes / 8, 256), 256, 0, s>>>(static_cast<unsigned char*>(dst), bytes, pd);
  after_launch("fill kernel launch", dev);
}
void launch_verify(const void* buf, std::uint64_t bytes, int pd, long long* first_bad, cudaStream_t s, int dev) {
  verify_kernel<<<grid_for(bytes / 8, 256), 256, 0, s>>>(static_cast<const unsigned char*>(buf), bytes, pd, first_bad);
  after_launch("verify kernel launch", dev);
}
void launch_spin_until(const volatile int* flag, int value, cudaStream_t s, int dev) {
  spin_kernel<<<1, 1, 0, s>>>(flag, value, 60ull * 1000000000ull);
  after_launch("spin kernel launch", dev);
}
void launch_copy(void* dst, const void* src, std::uint64_t bytes, int blocks, int threads, cudaStream_t s, int dev) {
  const std::uint64_t vecs = bytes / 16;
  const int tail = static_cast<int>(bytes % 16);
  // Small copies: no more blocks than there are vectors to move.
  const std::uint64_t useful = (vecs + threads - 1) / threads;
  if (useful < static_cast<std::uint64_t>(blocks)) blocks = useful < 1 ? 1 : static_cast<int>(useful);
  copy_kernel<<<blocks, threads, 0, s>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), vecs,
                                         static_cast<unsigned char*>(dst) + vecs * 16,
                                         static_cast<const unsigned char*>(src) + vecs * 16, tail);
  after_launch("copy kernel launch", dev);
}
void launch_globaltimer(unsigned long long* out, cudaStream_t s, int dev) {
  timer_kernel<<<1, 1, 0, s>>>(out);
  after_launch("globaltimer kernel launch", dev);
}
void launch_fma(float* sink, int blocks, long long iters, cudaStream_t s, int dev) {
  fma_kernel<<<blocks, 256, 0, s>>>(sink, iters);
  after_launch("fma kernel launch", dev);
}
void launch_ping(volatile unsigned long long* mf, volatile unsigned long long* pf, unsigned char* pm, const unsigned char* mm,
                 int msg, int samples, int rounds, unsigned long long* out, cudaStream_t s, int dev) {
  ping_kernel<<<1, 32, 0, s>>>(mf, pf, pm, mm, msg, samples, rounds, out, kPingTimeoutNs);
  after_launch("ping kernel launch", dev);
}
void launch_pong(volatile unsigned long long* mf, volatile unsigned long long* pf, unsigned char* pm, const unsigned char* mm,
                 int msg, long long total, cudaStream_t s, int dev) {
  pong_kernel<<<1, 32, 0, s>>>(mf, pf, pm, mm, msg, total, kPingTimeoutNs);
  after_launch("pong kernel launch", dev);
}

}  // namespace p2pscope::bench::cuda
