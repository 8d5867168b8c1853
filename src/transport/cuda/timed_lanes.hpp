#pragma once
// The timed loop of the CUDA backends' batches. A spin kernel holds the first lane's
// stream until all timed work is queued, then a host-mapped flag releases it (the
// blocking start: launch overhead is not transfer time); CUDA events around each
// iteration. In a bidirectional run the reverse lane runs on its own device and
// stream, chained to the first lane by events, so each direction is timed on its own
// device and the total on the first.
#include <atomic>
#include <functional>
#include <vector>

#include <cuda_runtime.h>

namespace p2pscope::bench::cuda {

struct Lane {  // one direction of an iteration, issued and timed on `dev`
  int dev;
  cudaStream_t stream;
  std::function<void()> issue;
};

// Sets the release flag when it goes out of scope, so an exception between the spin
// kernel's launch and the release never leaves a stream held.
class Release {
 public:
  Release(volatile int* flag, int gen) : flag_(flag), gen_(gen) {}
  ~Release() { now(); }
  Release(const Release&) = delete;
  Release& operator=(const Release&) = delete;
  void now() {
    if (!flag_) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *flag_ = gen_;
  }
 private:
  volatile int* flag_;
  int gen_;
};

// How long one slice of queued work may run before the host looks at the stop flag.
constexpr double kSliceNs = 250e6;

// `warmup` untimed iterations, then `iters` timed ones, queued in slices of about
// kSliceNs (sized from the warm-up and the slices before) and waited for one slice at
// a time, each behind its own blocking start: once `stop` is set, the iterations of
// the slices done are returned (possibly none), within a slice's time. `release`: the
// host-mapped flag the spin kernel waits on, or null for no blocking start (too many
// ops to queue behind it); *gen is its generation, advanced per slice. `sync_all`
// waits for every stream the lanes' issue() may use. Returns per-lane samples (ns)
// and, with 2+ lanes, the per-iteration total as the last vector.
std::vector<std::vector<double>> run_timed_lanes(const std::vector<Lane>& lanes, int warmup, int iters,
                                                 volatile int* release, int* gen, const std::function<void()>& sync_all,
                                                 const std::atomic<bool>* stop);

}  // namespace p2pscope::bench::cuda
