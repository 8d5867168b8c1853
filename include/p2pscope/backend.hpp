#pragma once
// The point-to-point transfer engine's interface: one backend per folder under
// src/transport/ (host, cuda ce/sm/staged, nccl). Benchmarks (bench gpu) use
// run_batch; the profile campaign uses run_blocking. Devices are numbered from 0
// (GPUs in CUDA order; for the host backend, NUMA nodes).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "p2pscope/backend_table.hpp"
#include "p2pscope/enum_names.hpp"

namespace p2pscope {
class Bootstrap;
}

namespace p2pscope::bench {

enum class Pattern { unidirectional, bidirectional, latency };
inline constexpr std::array<EnumName<Pattern>, 3> kPatternNames{{
    {Pattern::unidirectional, "unidirectional", {"uni"}},
    {Pattern::bidirectional, "bidirectional", {"bidir", "bi"}},
    {Pattern::latency, "latency", {"lat"}},
}};
std::string to_string(Pattern p);
Pattern parse_pattern(const std::string& text);  // throws UsageError

// "no peer access" is a result, not an exception.
struct PairSupport {
  bool ok = true;
  std::string reason;  // why not, when !ok
};

// One blocking operation as a host program sees it, plus the device's view.
struct OpTiming {
  std::int64_t host_start_ns = 0;  // CLOCK_MONOTONIC just before issuing
  std::int64_t host_end_ns = 0;    // CLOCK_MONOTONIC once complete
  double device_duration_ns = NAN; // measured on the device (events); host backend: NAN
  std::int64_t device_start_ns = -1;  // GPU global timer at start; -1 when none
  std::int64_t device_end_ns = -1;
  // How far device_start/end may be off the GPU timer (ns): 0 where they are timer
  // readings themselves, half the calibration bracket where they come from events.
  double device_stamp_error_ns = 0;
};

struct BatchSpec {
  int src = 0, dst = 1;
  std::uint64_t bytes = 0;
  Pattern pattern = Pattern::unidirectional;
  int warmup = 5;
  int iters = 20;
  // Polled between samples (and between a latency sample's round trips) where the
  // backend can; the CUDA backends queue work in slices of about 0.25 s and poll
  // between them. Once set, run_batch returns the samples taken so far, possibly none
  // (Ctrl-C stops a long row within about a second).
  const std::atomic<bool>* stop = nullptr;
};

// In the host backend's latency note where its two ping-pong threads are not pinned to a
// CPU each: run's headline reads it to put its caveat beside the figure.
inline constexpr const char* kHostThreadsNotPinned =
    "threads not pinned to a CPU each (each may run on any CPU of its NUMA node): both can share a core, and the "
    "time then includes the scheduler's";

// Raw samples, one per timed iteration; Stats are computed by the caller.
struct BatchResult {
  PairSupport support;
  std::vector<double> elapsed_ns;          // src->dst (latency: one-way = rtt / 2)
  std::vector<double> reverse_elapsed_ns;  // dst->src, bidirectional only
  std::vector<double> total_elapsed_ns;    // bidirectional: both directions done
  std::string note;                        // e.g. "pull kernel, 132 blocks"
};

struct BackendOptions {
  std::string variant;  // backend-specific ("push" / "pull" for sm)
  bool verify = true;
  // A run of one process per GPU (mpirun, srun, torchrun; only `nccl` supports it):
  // device numbers are then ranks, and every call is collective (every rank makes
  // the same calls in the same order and gets the same results back).
  std::shared_ptr<Bootstrap> bootstrap;
  int rank_device = -1;  // this rank's GPU among the visible ones; -1: the local rank's
};

// prepare() with what a long set-up needs. A host buffer of 1 GiB takes seconds to
// allocate and fill on a loaded machine (7 s on a 2-core VM, where page faults are dear),
// so a signal must be able to end it, and the user must be told what is going on.
struct PrepareSpec {
  std::vector<int> devices;
  std::uint64_t max_bytes = 0;
  // The directed copies that will run (a bidirectional or ping-pong pair lists both ways):
  // a backend that can gives a device a source buffer only where a copy starts, and a
  // destination buffer only where one ends. Empty: every direction among `devices`.
  std::vector<std::pair<int, int>> copies;
  // Polled between slices of the set-up (16 MiB of fill, one allocation): once raised,
  // prepare_for frees what it set up and returns false.
  const std::atomic<bool>* stop = nullptr;
  // Called from the set-up thread with "setting up 2 x 1 GiB host buffers (...)" when the
  // set-up is expected to last more than announce_after_s (0: always), then once more with
  // how long it took. Unset: silent.
  std::function<void(const std::string&)> announce;
  double announce_after_s = 1.0;
};

// The device's own timer in ns (GPU %globaltimer read by a tiny kernel), with the
// host CLOCK_MONOTONIC read just before and after, for clock-drift fits.
struct TimerReading {
  std::int64_t device_ns = -1;  // -1: this device has no clock (staged's host memory)
  std::int64_t host_before_ns = 0, host_after_ns = 0;
};

// `count` readings as close together as the backend can take them, for the clock
// sync: each reading's device time lies between its host_before and host_after.
struct TimerBurst {
  std::vector<TimerReading> readings;  // empty: no device clock
  std::int64_t step_ns = 0;            // the device timer's update step; 0 unknown
  std::string method;                  // how the readings were taken
  std::string note;                    // why there are fewer than asked
};

// Optional: a device clock the host can read (Backend::device_timer()), for the
// profile campaign's clock sync and drift fits.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual TimerReading read_device_timer(int device) = 0;
  // The default brackets a kernel launch and a synchronize per reading (tens of us).
  virtual TimerBurst read_device_timer_burst(int device, int count) {
    TimerBurst b;
    b.method = "launch: a timer kernel between two host reads";
    for (int i = 0; i < count; ++i) {
      const TimerReading r = read_device_timer(device);
      if (r.device_ns < 0) break;
      b.readings.push_back(r);
    }
    return b;
  }
};

// Optional: compute load for the thermal warm-up (Backend::heater()).
class Heater {
 public:
  virtual ~Heater() = default;
  // Keeps the device busy with compute for about `seconds`; called from one thread
  // per device. A device with nothing to heat (host memory) returns at once.
  virtual void busy_compute(int device, double seconds) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // What it can do: its row of the backend table (backend_table.hpp) by name(); a
  // backend outside the table (a test's double) has none unless it says otherwise.
  virtual BackendCaps capabilities() const;
  virtual int device_count() const = 0;
  virtual std::string device_name(int device) const = 0;
  virtual PairSupport support(int src, int dst) const = 0;
  // Allocates (once) buffers of max_bytes for every listed device and fills sources
  // with a pseudo-random pattern. Throws UsageError when max_bytes does not fit.
  virtual void prepare(const std::vector<int>& devices, std::uint64_t max_bytes) = 0;
  // prepare() for known copies, stoppable (PrepareSpec). False: stopped before it was done;
  // the caller then runs nothing. The default prepares every buffer at once and only
  // reads the flag afterwards (backends whose set-up is quick: NCCL, test fakes).
  virtual bool prepare_for(const PrepareSpec& spec) {
    prepare(spec.devices, spec.max_bytes);
    return !(spec.stop && spec.stop->load());
  }
  virtual BatchResult run_batch(const BatchSpec& spec) = 0;
  // One transfer that has completed when this returns.
  virtual OpTiming run_blocking(int src, int dst, std::uint64_t bytes) = 0;
  // `count` transfers back to back, timed as one sample (the campaign's batch timing:
  // small transfers are timed as loops, like nccl-tests and nvbandwidth do). GPU
  // backends queue them behind a blocking start, so the device duration is the
  // transfers' own; device_start/end bracket the batch on the GPU timer. The default
  // runs run_blocking `count` times and adds up.
  virtual OpTiming run_blocking_batch(int src, int dst, std::uint64_t bytes, int count) {
    OpTiming all;
    for (int i = 0; i < count; ++i) {
      const OpTiming t = run_blocking(src, dst, bytes);
      if (i == 0) {
        all = t;
        continue;
      }
      all.host_end_ns = t.host_end_ns;
      all.device_duration_ns += t.device_duration_ns;  // NAN stays NAN
      all.device_end_ns = t.device_end_ns;
      all.device_stamp_error_ns = std::max(all.device_stamp_error_ns, t.device_stamp_error_ns);
    }
    return all;
  }
  // After a transfer src->dst of `bytes`: -1 when the destination holds the source's
  // pattern, else the first bad byte offset.
  virtual std::int64_t verify(int src, int dst, std::uint64_t bytes) = 0;

  // Whose timer stamps an op src -> dst (OpTiming's device_start/end): the device
  // that issues it (for the staged backend's host end, the GPU; ce-pull, the destination).
  virtual int clock_device(int src, int dst) const { (void)dst; return src; }

  // Optional parts (below): a backend that offers one derives from it too and returns
  // `this`; nullptr means it has none (the host backend: no device clock, nothing to heat).
  // Accessors rather than dynamic_cast, so a wrapper (the driven backend) can offer a
  // part exactly when the backend it wraps does.
  virtual DeviceTimer* device_timer() { return nullptr; }
  virtual Heater* heater() { return nullptr; }

  // Where a device is, for whoever reads its sensors (NVML) from this process: on
  // this host or another one (one process per GPU across hosts), and its PCI bus id
  // when the backend knows it ("" = go by the CUDA index on this host).
  struct DeviceLocation {
    bool gpu = true;  // false: host memory (staged's extra device), no sensors
    bool this_host = true;
    std::string host;     // set by backends whose devices may be elsewhere
    std::string pci_bus;  // as CUDA gives it, e.g. "0000:19:00.0"
  };
  virtual DeviceLocation device_location(int device) const { (void)device; return {}; }
};

// Names of the backends built into this binary, with their listed aliases ("host" always).
std::vector<std::string> backend_names();
// Any name resolve_backend() takes. Throws UsageError for unknown names, or names not
// built in (saying how to build it).
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& opts = {});

}  // namespace p2pscope::bench
