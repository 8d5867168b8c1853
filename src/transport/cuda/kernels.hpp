#pragma once
// Host-side launchers for the engine's kernels (kernels.cu). Each launches on the
// current device and `stream` and checks the launch.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace p2pscope::bench::cuda {

// Loads every kernel of this file on the current device `dev`. CUDA >= 12.2 loads
// kernels lazily at first launch, and that load can wait for the context to go idle:
// launching ping while pong already spins (or a copy behind the blocking-start spin)
// then stalls until the spinner times out. Call once per device before any spinner.
void preload_kernels(int dev);
void launch_fill(void* dst, std::uint64_t bytes, int pattern_device, cudaStream_t s, int dev);
// *first_bad (device memory) must hold INT64_MAX; gets the lowest mismatching offset.
void launch_verify(const void* buf, std::uint64_t bytes, int pattern_device, long long* first_bad, cudaStream_t s, int dev);
// The verify kernel run to completion on `s` of device `dev` (current): -1 when `buf`
// holds device `pattern_device`'s pattern, else the first bad offset. `scratch`: 8 bytes
// of device memory.
long long first_bad_offset(const void* buf, std::uint64_t bytes, int pattern_device, void* scratch, cudaStream_t s,
                           int dev);
// Holds `s` until *flag (host-mapped) == value: the blocking start.
void launch_spin_until(const volatile int* flag, int value, cudaStream_t s, int dev);
// 16-byte vector copy over `blocks` x `threads`; used for push and pull.
void launch_copy(void* dst, const void* src, std::uint64_t bytes, int blocks, int threads, cudaStream_t s, int dev);
// nvbandwidth's SM copy shape (read_sm when issued by the destination): `sms` blocks of
// 512 threads, each thread 12 strided 16-byte loads in flight before its stores.
void launch_copy_deep(void* dst, const void* src, std::uint64_t bytes, int sms, cudaStream_t s, int dev);
// Writes %globaltimer to *out (host-mapped or device memory).
void launch_globaltimer(unsigned long long* out, cudaStream_t s, int dev);
// Runs FMA loops for about `iters` x 4096 FMAs per thread on every SM.
void launch_fma(float* sink, int blocks, long long iters, cudaStream_t s, int dev);
// Host pokes -> %globaltimer answers, for the clock sync (device_clock.hpp).
// request[0]: the host's sequence number; answer[0] the timer, answer[1] the number
// answered, answer[2] the timer's update step in ns (written first).
void launch_timer_responder(const volatile unsigned long long* request, volatile unsigned long long* answer, int count,
                            unsigned long long timeout_ns, cudaStream_t s, int dev);

// The ping-pong's grid: a message is split over `blocks` blocks of `threads`; the
// last block to finish raises the peer's flag, counted in `arrivals` (device memory
// of the sending GPU, zeroed before the launch). Ping and pong blocks must all be
// resident at once: keep blocks x 2 well under the SM count.
struct PingShape {
  int blocks = 1, threads = 32;
  unsigned int* arrivals = nullptr;
  bool system_scope = true;  // false: both kernels on one GPU, a GPU-scope fence orders the payload
};
// Enough threads that 16-byte stores, not the kernel, bound a message of `msg` bytes.
PingShape ping_shape_for(int msg, int sm_count);

// Ping-pong: the initiator writes `msg` bytes + a flag into the responder's memory and
// waits for the answer in its own; rounds_per_sample round trips per sample, samples
// durations (ns, from %globaltimer) in out_ns[samples]. Responder mirrors it.
void launch_ping(volatile unsigned long long* my_flag, volatile unsigned long long* peer_flag, unsigned char* peer_msg,
                 const unsigned char* my_msg, int msg, int samples, int rounds_per_sample, unsigned long long* out_ns,
                 const PingShape& shape, cudaStream_t s, int dev);
void launch_pong(volatile unsigned long long* my_flag, volatile unsigned long long* peer_flag, unsigned char* peer_msg,
                 const unsigned char* my_msg, int msg, long long total_rounds, const PingShape& shape, cudaStream_t s, int dev);

// The LL ping-pong (kernels.cu): 8 bytes of payload and their flags in one 16-byte line
// (16-byte aligned, zeroed before the launch), written into the peer's line with one
// store, no fence. One thread each. The ping takes `payload` (8 bytes on its GPU) and
// times `samples` x `rounds` round trips into out_ns; the pong echoes `total_rounds`.
void launch_ll_ping(const void* my_line, void* peer_line, const void* payload, int samples, int rounds,
                    unsigned long long* out_ns, cudaStream_t s, int dev);
void launch_ll_pong(const void* my_line, void* peer_line, long long total_rounds, cudaStream_t s, int dev);

}  // namespace p2pscope::bench::cuda
