#include "transport/cuda/device_clock.hpp"

#include <atomic>

#include "p2pscope/clock.hpp"
#include "transport/cuda/cuda_util.hpp"
#include "transport/cuda/kernels.hpp"

namespace p2pscope::bench::cuda {
namespace {
constexpr std::int64_t kAnswerWaitNs = 1'000'000'000;        // a GPU busy elsewhere: give up the burst
constexpr unsigned long long kKernelTimeoutNs = 5'000'000'000ull;  // the kernel's own bound

// Lets the kernel run out: every poke up to `count` is then answered at once.
struct FinishPokes {
  volatile unsigned long long* request;
  unsigned long long count;
  ~FinishPokes() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *request = count;
  }
};
}  // namespace

TimerBurst poke_device_timer(int device, cudaStream_t stream, volatile unsigned long long* words, int count) {
  TimerBurst burst;
  burst.method = "poke: a resident kernel answers host writes through mapped memory";
  if (count < 1) return burst;
  // The request word and the answers sit on different 128-byte lines.
  volatile unsigned long long* request = words;
  volatile unsigned long long* answer = words + 16;
  *request = 0;
  answer[0] = 0;
  answer[2] = 0;
  answer[3] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  launch_timer_responder(request, answer, count, kKernelTimeoutNs, stream, device);
  {
    FinishPokes finish{request, static_cast<unsigned long long>(count)};
    const std::int64_t started = monotonic_ns();
    while (answer[2] == 0 && monotonic_ns() - started < kAnswerWaitNs) {}
    burst.step_ns = static_cast<std::int64_t>(answer[2]);
    if (burst.step_ns == 0) burst.note = "the GPU did not start the clock kernel within 1 s (busy?)";
    std::atomic_thread_fence(std::memory_order_acquire);
    const unsigned long long base = answer[3];  // the full timer, for the answers' high bits
    constexpr unsigned long long kLow48 = (1ull << 48) - 1;
    unsigned long long jitter = 0x9e3779b97f4a7c15ull;  // a fixed seed: runs pause alike
    for (int k = 1; k <= count && burst.step_ns > 0; ++k) {
      TimerReading r;
      // A varying pause (0-1 us) before each poke. Without it every poke followed the
      // last answer by the same delay and so met the GPU's polling read at the same
      // phase, mostly a late one: on 4 x H200 the intervals' median was 2.5 us and the
      // campaign's bound +-1218 ns; with it, +-696 ns. (Eight polling warps, on one
      // request word or on a line each, gained nothing more: +-688-690 ns.)
      jitter = jitter * 6364136223846793005ull + 1442695040888963407ull;
      const std::int64_t pause_until = monotonic_ns() + static_cast<std::int64_t>((jitter >> 33) % 1000);
      while (monotonic_ns() < pause_until) {}
      r.host_before_ns = monotonic_ns();
      std::atomic_thread_fence(std::memory_order_seq_cst);
      *request = static_cast<unsigned long long>(k);
      std::atomic_thread_fence(std::memory_order_seq_cst);  // the poke leaves the store buffer now
      bool answered = true;
      unsigned long long word = 0;
      while (((word = answer[0]) & 0xffffull) != (static_cast<unsigned long long>(k) & 0xffffull))
        if (monotonic_ns() - r.host_before_ns > kAnswerWaitNs) { answered = false; break; }
      r.host_after_ns = monotonic_ns();
      if (!answered) {
        burst.note = "the GPU stopped answering clock pokes (1 s): burst cut short";
        break;
      }
      unsigned long long t = (base & ~kLow48) | (word >> 16);
      if (t < base) t += 1ull << 48;  // the low bits wrapped since the base (every 78 h)
      r.device_ns = static_cast<std::int64_t>(t);
      burst.readings.push_back(r);
    }
  }
  P2P_CUDA(cudaStreamSynchronize(stream), device);
  return burst;
}

}  // namespace p2pscope::bench::cuda
