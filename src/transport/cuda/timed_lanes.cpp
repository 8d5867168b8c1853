// The CUDA backends' timed loop (timed_lanes.hpp).
#include "transport/cuda/timed_lanes.hpp"

#include <algorithm>

#include "p2pscope/clock.hpp"
#include "transport/cuda/cuda_util.hpp"
#include "transport/cuda/kernels.hpp"

namespace p2pscope::bench::cuda {
namespace {

bool stop_set(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(std::memory_order_relaxed); }

// Iterations [first, last) queued behind one blocking start, then waited for.
void run_slice(const std::vector<Lane>& lanes, std::size_t first, std::size_t last, const std::vector<std::vector<Event>>& start,
               const std::vector<std::vector<Event>>& end, const std::vector<Event>& total_end, volatile int* release_flag,
               int gen, const std::function<void()>& sync_all) {
  const std::size_t L = lanes.size();
  Release release(release_flag, gen);
  const int d0 = lanes[0].dev;
  cudaStream_t s0 = lanes[0].stream;
  if (release_flag) {
    DeviceGuard g(d0);
    launch_spin_until(release_flag, gen, s0, d0);
  }
  for (std::size_t i = first; i < last; ++i) {
    { DeviceGuard g(d0); P2P_CUDA(cudaEventRecord(start[0][i].get(), s0), d0); }
    for (std::size_t l = 1; l < L; ++l) {  // the reverse lane starts with the first
      DeviceGuard g(lanes[l].dev);
      P2P_CUDA(cudaStreamWaitEvent(lanes[l].stream, start[0][i].get(), 0), lanes[l].dev);
      P2P_CUDA(cudaEventRecord(start[l][i].get(), lanes[l].stream), lanes[l].dev);
    }
    for (std::size_t l = 0; l < L; ++l) {
      lanes[l].issue();
      DeviceGuard g(lanes[l].dev);
      P2P_CUDA(cudaEventRecord(end[l][i].get(), lanes[l].stream), lanes[l].dev);
    }
    if (L > 1) {
      DeviceGuard g(d0);
      for (std::size_t l = 1; l < L; ++l) P2P_CUDA(cudaStreamWaitEvent(s0, end[l][i].get(), 0), d0);
      P2P_CUDA(cudaEventRecord(total_end[i].get(), s0), d0);
    }
  }
  release.now();
  sync_all();
}

}  // namespace

std::vector<std::vector<double>> run_timed_lanes(const std::vector<Lane>& lanes, int warmup, int iters,
                                                 volatile int* release_flag, int* gen, const std::function<void()>& sync_all,
                                                 const std::atomic<bool>* stop) {
  const std::size_t L = lanes.size(), N = static_cast<std::size_t>(iters);
  std::vector<std::vector<double>> out(L == 1 ? 1 : L + 1);
  // Warm-up, timed on the host: it sizes the first slice.
  const std::int64_t w0 = monotonic_ns();
  for (int i = 0; i < warmup && !stop_set(stop); ++i)
    for (const auto& l : lanes) l.issue();
  sync_all();
  double per_iter_ns = warmup > 0 ? static_cast<double>(monotonic_ns() - w0) / warmup : 0;
  if (stop_set(stop)) return out;
  std::vector<std::vector<Event>> start(L), end(L);
  std::vector<Event> total_end;
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t i = 0; i < N; ++i) {
      start[l].push_back(make_event(lanes[l].dev));
      end[l].push_back(make_event(lanes[l].dev));
    }
  if (L > 1)
    for (std::size_t i = 0; i < N; ++i) total_end.push_back(make_event(lanes[0].dev));
  // Slices of about kSliceNs, so a stop request waits for one slice at most; a row
  // shorter than that is one slice, as before. Without an estimate, one iteration first.
  std::size_t done = 0;
  while (done < N) {
    const double fit = per_iter_ns > 0 ? kSliceNs / per_iter_ns : 1;
    const std::size_t n = std::clamp<std::size_t>(static_cast<std::size_t>(fit), 1, N - done);
    const std::int64_t t0 = monotonic_ns();
    run_slice(lanes, done, done + n, start, end, total_end, release_flag, ++*gen, sync_all);
    per_iter_ns = static_cast<double>(monotonic_ns() - t0) / static_cast<double>(n);
    done += n;
    if (stop_set(stop)) break;
  }
  for (std::size_t i = 0; i < done; ++i) {
    for (std::size_t l = 0; l < L; ++l) out[l].push_back(elapsed_ms(start[l][i], end[l][i]) * 1e6);
    if (L > 1) out[L].push_back(elapsed_ms(start[0][i], total_end[i]) * 1e6);
  }
  return out;
}

}  // namespace p2pscope::bench::cuda
