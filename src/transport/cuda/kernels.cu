// The engine's kernels: pattern fill and check, the blocking-start spin, the 16-byte
// copy (push or pull), %globaltimer reads, an FMA heater and the ping-pong pair.
#include <cuda_runtime.h>

#include <climits>

#include "p2pscope/pattern.hpp"
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
  const std::uint64_t seed = pattern_seed(device), words = bytes / 8;
  auto* w = reinterpret_cast<std::uint64_t*>(dst);
  for (std::uint64_t k = blockIdx.x * (std::uint64_t)blockDim.x + threadIdx.x; k < words; k += (std::uint64_t)gridDim.x * blockDim.x)
    w[k] = pattern_word(seed, k);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (std::uint64_t i = words * 8; i < bytes; ++i) dst[i] = pattern_byte(seed, i);
}

__global__ void verify_kernel(const unsigned char* buf, std::uint64_t bytes, int device, long long* first_bad) {
  const std::uint64_t seed = pattern_seed(device), words = bytes / 8;
  const auto* w = reinterpret_cast<const std::uint64_t*>(buf);
  for (std::uint64_t k = blockIdx.x * (std::uint64_t)blockDim.x + threadIdx.x; k < words; k += (std::uint64_t)gridDim.x * blockDim.x)
    if (w[k] != pattern_word(seed, k))
      for (std::uint64_t i = k * 8; i < k * 8 + 8; ++i)
        if (buf[i] != pattern_byte(seed, i)) { atomicMin(first_bad, (long long)i); break; }
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (std::uint64_t i = words * 8; i < bytes; ++i)
      if (buf[i] != pattern_byte(seed, i)) { atomicMin(first_bad, (long long)i); break; }
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

// nvbandwidth's read_sm / write_sm shape (its stridingMemcpyKernel), for a same-run
// reference: one block of 512 threads per SM; thread t owns vectors t, t + T, t + 2T...
// (T threads in all) and keeps 12 16-byte loads in flight before their 12 stores.
// The vectors past the last whole round of T, and the byte tail, go grid-strided.
__global__ void __launch_bounds__(512) copy_kernel_deep(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                                        std::uint64_t vecs, unsigned char* dst_tail,
                                                        const unsigned char* src_tail, int tail) {
  constexpr int kDepth = 12;
  const std::uint64_t T = (std::uint64_t)gridDim.x * blockDim.x;
  const std::uint64_t t = blockIdx.x * (std::uint64_t)blockDim.x + threadIdx.x;
  const std::uint64_t per_thread = vecs / T, deep = per_thread / kDepth * kDepth;
  const uint4* s = src + t;
  uint4* d = dst + t;
  for (std::uint64_t j = 0; j < deep; j += kDepth) {
    uint4 v[kDepth];
#pragma unroll
    for (int k = 0; k < kDepth; ++k) v[k] = s[k * T];
#pragma unroll
    for (int k = 0; k < kDepth; ++k) d[k * T] = v[k];
    s += kDepth * T;
    d += kDepth * T;
  }
  for (std::uint64_t i = deep * T + t; i < vecs; i += T) dst[i] = src[i];
  if (blockIdx.x == 0 && threadIdx.x < tail) dst_tail[threadIdx.x] = src_tail[threadIdx.x];
}

__global__ void timer_kernel(unsigned long long* out) { *out = globaltimer(); }

// Answers host pokes for the clock sync: for k = 1..count, waits until the host's
// request word (host-mapped) reaches k, reads %globaltimer and writes it with k into
// the host's answer word. The read lies between the host's write of k and its seeing
// k come back: an interval of one PCIe round trip. Time and number travel in one
// 8-byte store (the timer's low 48 bits, k's low 16), so no fence sits between them:
// a system fence there waited for the store to reach the host, and widened every
// interval by that. First it measures the timer's update step (answer[2]) and gives
// the full timer (answer[3]), from which the host restores the high bits.
__global__ void timer_responder_kernel(const volatile unsigned long long* request, volatile unsigned long long* answer,
                                       int count, unsigned long long timeout_ns) {
  unsigned long long step = ~0ull, prev = globaltimer();
  for (int i = 0; i < 4096 && step > 1; ++i) {
    const unsigned long long t = globaltimer();
    if (t != prev && t - prev < step) step = t - prev;
    prev = t;
  }
  answer[3] = globaltimer();
  __threadfence_system();  // the base is visible before the step that announces it
  answer[2] = step;
  const unsigned long long deadline = globaltimer() + timeout_ns;
  for (unsigned long long k = 1; k <= (unsigned long long)count; ++k) {
    while (*request < k)
      if (globaltimer() > deadline) return;
    answer[0] = (globaltimer() << 16) | (k & 0xffffull);
  }
}

__global__ void fma_kernel(float* sink, long long iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-3f;
  for (long long i = 0; i < iters; ++i)
#pragma unroll 64
    for (int j = 0; j < 4096; ++j) { a = fmaf(a, b, c); d = fmaf(d, c, b); }
  if (a + d == 12345.0f) sink[threadIdx.x] = a + d;  // keeps the loop alive
}

// One sample's message: every block copies its slice with 16-byte stores where both
// buffers allow it, fences it system-wide, and the last block to finish (a counter
// in the sender's own memory, ever increasing so it needs no reset) raises the
// peer's flag. One warp moved 64 KiB at 0.2 GB/s: the kernel, not the path.
__device__ __forceinline__ void fence(bool sys) {
  if (sys)
    __threadfence_system();
  else
    __threadfence();
}

__device__ __forceinline__ void send_msg(volatile unsigned long long* peer_flag, unsigned char* peer_msg,
                                         const unsigned char* my_msg, int msg, unsigned long long value,
                                         unsigned int* arrivals, bool sys) {
  const int tid = threadIdx.x, nthreads = blockDim.x, block = blockIdx.x, blocks = gridDim.x;
  const int slice = (msg + blocks - 1) / blocks;
  const int begin = min(msg, block * slice), end = min(msg, begin + slice);
  int i = begin;
  if ((((unsigned long long)(peer_msg + i) | (unsigned long long)(my_msg + i)) & 15) == 0) {
    const int vecs = (end - i) / 16;
    for (int v = tid; v < vecs; v += nthreads)
      reinterpret_cast<uint4*>(peer_msg + i)[v] = reinterpret_cast<const uint4*>(my_msg + i)[v];
    i += vecs * 16;
  }
  for (int j = i + tid; j < end; j += nthreads) peer_msg[j] = my_msg[j];
  // Each thread's payload is visible before the flag: to the whole system where the
  // peer is another GPU, to this GPU where both kernels run on it (a cheaper fence).
  if (msg > 0) fence(sys);
  __syncthreads();
  if (tid == 0) {
    const bool last = blocks == 1 || atomicAdd(arrivals, 1u) + 1 == (unsigned int)(value * blocks);
    if (last) {
      if (blocks > 1) fence(sys);  // the other blocks' slices, seen through the counter, go first
      *peer_flag = value;
    }
  }
}

// False when the flag did not arrive before `deadline` (%globaltimer ns). Every
// block waits (its slice of the next message must follow the peer's answer).
__device__ __forceinline__ bool wait_flag(volatile unsigned long long* my_flag, unsigned long long value,
                                          unsigned long long deadline) {
  __shared__ int ok;
  if (threadIdx.x == 0) {
    ok = 1;
    while (*my_flag < value)
      if (globaltimer() > deadline) { ok = 0; break; }
  }
  __syncthreads();
  const int r = ok;
  __syncthreads();  // nobody rewrites `ok` before everyone has read it
  return r != 0;
}

// A sample that timed out is written as ~0ull.
__global__ void ping_kernel(volatile unsigned long long* my_flag, volatile unsigned long long* peer_flag, unsigned char* peer_msg,
                            const unsigned char* my_msg, int msg, int samples, int rounds, unsigned long long* out_ns,
                            unsigned int* arrivals, bool sys, unsigned long long timeout_ns) {
  const unsigned long long deadline = globaltimer() + timeout_ns;
  unsigned long long k = 0;
  for (int s = 0; s < samples; ++s) {
    const unsigned long long t0 = globaltimer();
    for (int r = 0; r < rounds; ++r) {
      ++k;
      send_msg(peer_flag, peer_msg, my_msg, msg, k, arrivals, sys);
      if (!wait_flag(my_flag, k, deadline)) {
        if (threadIdx.x == 0 && blockIdx.x == 0) out_ns[s] = ~0ull;
        return;
      }
    }
    const unsigned long long t1 = globaltimer();
    if (threadIdx.x == 0 && blockIdx.x == 0) out_ns[s] = t1 - t0;
  }
}

__global__ void pong_kernel(volatile unsigned long long* my_flag, volatile unsigned long long* peer_flag, unsigned char* peer_msg,
                            const unsigned char* my_msg, int msg, long long total, unsigned int* arrivals, bool sys,
                            unsigned long long timeout_ns) {
  const unsigned long long deadline = globaltimer() + timeout_ns;
  for (unsigned long long k = 1; k <= (unsigned long long)total; ++k) {
    if (!wait_flag(my_flag, k, deadline)) return;
    send_msg(peer_flag, peer_msg, my_msg, msg, k, arrivals, sys);
  }
}

// The LL ping-pong (NCCL's low-latency protocol's line): 16 bytes = data1, flag1,
// data2, flag2, written into the peer's memory with one 16-byte store; the reader takes
// the line once both flags hold the value it waits for. Each 8-byte half (data, flag)
// arrives whole, so the flag vouches for its data and no fence is needed: one store
// crosses the link per message, where the fenced ping-pong above waits for its payload's
// acknowledgement before raising the flag. 8 bytes of payload per line.
__device__ __forceinline__ void ll_store(uint4* line, unsigned d1, unsigned d2, unsigned flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(line), "r"(d1), "r"(flag), "r"(d2), "r"(flag)
               : "memory");
}
// False when the line did not arrive before `deadline`.
__device__ __forceinline__ bool ll_wait(const uint4* line, unsigned flag, unsigned long long deadline, unsigned& d1,
                                        unsigned& d2) {
  for (unsigned spins = 0;; ++spins) {
    unsigned f1, f2;
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(d1), "=r"(f1), "=r"(d2), "=r"(f2) : "l"(line) : "memory");
    if (f1 == flag && f2 == flag) return true;
    if ((spins & 1023) == 1023 && globaltimer() > deadline) return false;
  }
}

__global__ void ll_ping_kernel(const uint4* my_line, uint4* peer_line, const unsigned* payload, int samples, int rounds,
                               unsigned long long* out_ns, unsigned long long timeout_ns) {
  const unsigned long long deadline = globaltimer() + timeout_ns;
  unsigned d1 = payload[0], d2 = payload[1], k = 0;
  for (int s = 0; s < samples; ++s) {
    const unsigned long long t0 = globaltimer();
    for (int r = 0; r < rounds; ++r) {
      ll_store(peer_line, d1, d2, ++k);
      if (!ll_wait(my_line, k, deadline, d1, d2)) {
        out_ns[s] = ~0ull;
        return;
      }
    }
    out_ns[s] = globaltimer() - t0;
  }
}

// Answers each line with the data it got (a real dependency: what goes back is what came).
__global__ void ll_pong_kernel(const uint4* my_line, uint4* peer_line, long long total, unsigned long long timeout_ns) {
  const unsigned long long deadline = globaltimer() + timeout_ns;
  unsigned d1 = 0, d2 = 0;
  for (long long k = 1; k <= total; ++k) {
    if (!ll_wait(my_line, static_cast<unsigned>(k), deadline, d1, d2)) return;
    ll_store(peer_line, d1, d2, static_cast<unsigned>(k));
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
                           reinterpret_cast<const void*>(copy_kernel_deep),
                           reinterpret_cast<const void*>(timer_kernel), reinterpret_cast<const void*>(fma_kernel),
                           reinterpret_cast<const void*>(ping_kernel), reinterpret_cast<const void*>(pong_kernel),
                           reinterpret_cast<const void*>(timer_responder_kernel),
                           reinterpret_cast<const void*>(ll_ping_kernel), reinterpret_cast<const void*>(ll_pong_kernel)};
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
long long first_bad_offset(const void* buf, std::uint64_t bytes, int pd, void* scratch, cudaStream_t s, int dev) {
  long long init = LLONG_MAX, out = 0;
  auto* bad = static_cast<long long*>(scratch);
  // Stream-ordered: a plain cudaMemcpy from pageable memory may still be in flight.
  P2P_CUDA(cudaMemcpyAsync(bad, &init, sizeof init, cudaMemcpyHostToDevice, s), dev);
  launch_verify(buf, bytes, pd, bad, s, dev);
  P2P_CUDA(cudaStreamSynchronize(s), dev);
  P2P_CUDA(cudaMemcpy(&out, bad, sizeof out, cudaMemcpyDeviceToHost), dev);
  return out == LLONG_MAX ? -1 : out;
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
void launch_copy_deep(void* dst, const void* src, std::uint64_t bytes, int sms, cudaStream_t s, int dev) {
  const std::uint64_t vecs = bytes / 16;
  const int tail = static_cast<int>(bytes % 16);
  copy_kernel_deep<<<sms < 1 ? 1 : sms, 512, 0, s>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), vecs,
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
PingShape ping_shape_for(int msg, int sm_count) {
  PingShape p;
  const int vecs = msg / 16;
  if (vecs <= 32) return p;  // a warp: one store each, the least latency
  p.threads = vecs >= 256 ? 256 : (vecs + 31) / 32 * 32;
  const int per_block = p.threads;  // one 16-byte store per thread before the fence
  const int max_blocks = sm_count / 2 > 1 ? (sm_count / 2 < 32 ? sm_count / 2 : 32) : 1;
  p.blocks = (vecs + per_block - 1) / per_block;
  if (p.blocks > max_blocks) p.blocks = max_blocks;
  return p;
}

void launch_timer_responder(const volatile unsigned long long* request, volatile unsigned long long* answer, int count,
                            unsigned long long timeout_ns, cudaStream_t s, int dev) {
  timer_responder_kernel<<<1, 1, 0, s>>>(request, answer, count, timeout_ns);
  after_launch("timer responder kernel launch", dev);
}
void launch_ping(volatile unsigned long long* mf, volatile unsigned long long* pf, unsigned char* pm, const unsigned char* mm,
                 int msg, int samples, int rounds, unsigned long long* out, const PingShape& shape, cudaStream_t s, int dev) {
  ping_kernel<<<shape.blocks, shape.threads, 0, s>>>(mf, pf, pm, mm, msg, samples, rounds, out, shape.arrivals,
                                                     shape.system_scope, kPingTimeoutNs);
  after_launch("ping kernel launch", dev);
}
void launch_pong(volatile unsigned long long* mf, volatile unsigned long long* pf, unsigned char* pm, const unsigned char* mm,
                 int msg, long long total, const PingShape& shape, cudaStream_t s, int dev) {
  pong_kernel<<<shape.blocks, shape.threads, 0, s>>>(mf, pf, pm, mm, msg, total, shape.arrivals, shape.system_scope,
                                                     kPingTimeoutNs);
  after_launch("pong kernel launch", dev);
}

void launch_ll_ping(const void* my_line, void* peer_line, const void* payload, int samples, int rounds,
                    unsigned long long* out_ns, cudaStream_t s, int dev) {
  ll_ping_kernel<<<1, 1, 0, s>>>(static_cast<const uint4*>(my_line), static_cast<uint4*>(peer_line),
                                 static_cast<const unsigned*>(payload), samples, rounds, out_ns, kPingTimeoutNs);
  after_launch("LL ping kernel launch", dev);
}
void launch_ll_pong(const void* my_line, void* peer_line, long long total_rounds, cudaStream_t s, int dev) {
  ll_pong_kernel<<<1, 1, 0, s>>>(static_cast<const uint4*>(my_line), static_cast<uint4*>(peer_line), total_rounds,
                                 kPingTimeoutNs);
  after_launch("LL pong kernel launch", dev);
}

}  // namespace p2pscope::bench::cuda
