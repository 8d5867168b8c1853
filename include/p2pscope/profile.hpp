#pragma once
// The profiling campaign (`p2pscope profile`, also driven by `p2pscope run`): every
// directed pair of the chosen devices x message sizes x backends, a warmup pass,
// then repetitions in one shuffled order, each op blocking. It writes a campaign
// directory: execution_log.csv, metadata.json, temperatures.csv, clock_drift.json,
// trace.json. The library never prints: progress and notes go through callbacks,
// called on the calling thread (a buffer set-up's note from its fill thread, while the
// calling thread waits for it).
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"
#include "p2pscope/signals.hpp"
#include "p2pscope/stats.hpp"

namespace p2pscope::profile {

// One (backend, src, dst, size). ids are stable: 0.. in order of backend (as listed),
// src, dst, size, before any shuffling.
struct Config {
  int id = 0;
  std::string backend;
  int src = 0, dst = 1;
  std::uint64_t size_bytes = 0;
};

struct Plan {
  std::vector<std::string> backends;
  std::vector<int> devices;          // sorted, distinct
  std::vector<std::uint64_t> sizes;  // sorted, distinct, > 0
  std::uint64_t seed = 42;
  int warmup = 5;  // ops per config before measuring (not logged)
  int reps = 10;   // measured repetitions, each over all configs in `order`
  std::vector<Config> configs;  // indexed by id
  std::vector<int> order;       // config ids, shuffled with `seed`
  std::vector<std::pair<int, int>> pairs;  // as asked (--pairs); empty: every pair of `devices`
  std::size_t measured_ops() const { return configs.size() * static_cast<std::size_t>(reps); }
};

// Builds configs and the shuffled order. Throws UsageError for fewer than 2 devices,
// no sizes, a size of 0, or warmup/reps < 0 (reps 0 too).
// With `pairs`, only those directed pairs (src == dst allowed: a device-local copy,
// the one-GPU path) and their devices; else every ordered pair of distinct devices.
Plan make_plan(std::vector<std::string> backends, std::vector<int> devices,
               std::vector<std::uint64_t> sizes, std::uint64_t seed, int warmup, int reps,
               std::vector<std::pair<int, int>> pairs = {});

// 0..n-1 shuffled by Fisher-Yates driven by SplitMix64(seed): the same on every
// machine and standard library (std::shuffle is not).
std::vector<int> shuffled_order(std::size_t n, std::uint64_t seed);

// The repetitions [first, last) that process `index` of `count` measures when a campaign's
// repetitions are split over processes (profile --processes K): consecutive blocks, the
// first ones a repetition shorter when count does not divide reps. analyze reads a row's
// process from its repetition with process_of_repetition.
std::pair<int, int> share_repetitions(int reps, int count, int index);
int process_of_repetition(int rep, int reps, int count);

// "p2p_cfg0042_s0d1_sz1048576_r3": the name of an op in trace.json and NVTX.
std::string event_name(const Config& c, int rep);

// The plan as stored in metadata.json ("plan") and read back by --resume.
nlohmann::json plan_to_json(const Plan& p);

// How a campaign record is timed: `batch` transfers back to back behind a blocking
// start, sized during warmup so a record spans Params::min_sample_ns, or `single`
// blocking transfers (seed 004's method). See profile/batching.hpp.
enum class Timing { batch, single };
inline constexpr std::array<EnumName<Timing>, 2> kTimingNames{{
    {Timing::batch, "batch", {}, "transfers timed back to back, a sample spans --min-sample-time"},
    {Timing::single, "single", {}, "one blocking transfer per record, seed 004's method"},
}};

struct ThermalTarget {
  double celsius = 50;
  double max_s = 60;
};
// "50C:60s" -> {50, 60}; "50C" -> {50, 60}. Throws UsageError.
ThermalTarget parse_thermal_target(const std::string& text);
// "45C" or "45" -> 45. Throws UsageError.
double parse_celsius(const std::string& text);

struct Progress {
  std::string phase;          // "thermal-warmup", "drift-start", "warmup", "measure", "drift-end"
  std::size_t done = 0, total = 0;  // ops (measure: including ops of earlier sessions)
  double ops_per_s = 0;
  double eta_s = -1;          // -1 unknown
  std::string current;        // the op in flight, "host 0->1 64M rep 2"
  const char* unit = "ops";   // what done counts, for the rate ("rows" in bench sweeps)
};

struct Params {
  std::vector<std::string> argv;  // recorded in metadata.json
  // Plan. Unset fields take defaults (backend: bench::default_backend; all devices;
  // sizes 1:1G; seed 42; warmup 5; reps 10) or, with resume_dir, the saved plan's
  // value; set fields must then equal the saved plan.
  std::optional<std::vector<std::string>> backends;
  std::optional<std::vector<int>> devices;
  std::optional<std::vector<std::pair<int, int>>> pairs;  // instead of devices: these directed pairs
  std::optional<std::vector<std::uint64_t>> sizes;
  std::optional<std::uint64_t> seed;
  std::optional<int> warmup, reps;

  std::string out_dir;                 // "" = <out_root>/profile-<gpu>-<driver>-<cuda>-<time>
  std::string out_root = "p2pscope-out";
  std::string resume_dir;              // continue this campaign
  double temp_interval_s = 1.0;        // NVML sampling period; 0 = no sampler
  double drift_s = 30;                 // drift window at start and end; 0 = quick offsets only
  std::optional<ThermalTarget> thermal_warmup;  // nullopt: none
  double rewarm_below_c = -1;          // < 0: never re-warm
  int rewarm_every = 20;               // check every N measured ops
  // How a record is timed (profile/batching.hpp): batch (default) or single.
  Timing timing = Timing::batch;
  double min_sample_ns = 200'000;      // batch: a record spans at least this (50 us left host<->GPU CV at 5.8 %)

  // Repetitions split over processes (profile --processes K): this process measures only
  // share `index` of `count` (share_repetitions), after its own warmup; count is recorded
  // in metadata.json (settings.processes) and a resume must give the same.
  struct Share {
    int index = 0, count = 1;
  };
  Share share;

  // Builds each backend by name; empty: bench::make_backend(name). A run of one
  // process per GPU passes a factory of driven nccl backends here.
  std::function<std::unique_ptr<bench::Backend>(const std::string&)> make_backend;
  // The run's own processes on this host besides this one (a launcher's peer ranks):
  // NVML lists them among the GPUs' users, and the campaign does not warn about them.
  std::vector<std::int64_t> own_pids;

  std::function<void(const Progress&)> on_progress;  // at most ~10 times a second
  std::function<void(const std::string&)> on_note;   // warnings and notable facts
  // A buffer set-up expected to last longer is named through on_note (PrepareSpec).
  double setup_note_after_s = 1.0;
  const std::atomic<bool>* stop = nullptr;  // set (e.g. by SIGINT): finish the op, save, return
};

struct SizeSummary {
  std::string backend;
  std::uint64_t size_bytes = 0;
  bool device_timed = false;       // times from the device (events) rather than the host
  double median_ns = 0;            // median over pairs of each pair's median
  double bytes_per_s = 0;          // size / median_ns
  double worst_cv = 0;             // largest CV over the pairs (across repetitions)
  std::size_t pairs = 0;
};

struct TemperatureSummary {
  int device = -1;
  std::size_t samples = 0;
  Stats temperature_c, power_w, sm_clock_mhz;
};

struct Result {
  std::string out_dir;
  bool interrupted = false;
  bool complete = false;           // every (config, rep) of the plan is in the log
  bool resumed = false;
  std::size_t ops_planned = 0;     // measured ops of the whole plan
  std::size_t ops_logged = 0;      // in the log now, all sessions
  std::size_t ops_this_session = 0;
  double warmup_s = 0, measure_s = 0;  // this session's measurement phase
  std::vector<SizeSummary> sizes;
  std::vector<TemperatureSummary> temperatures;
  std::string temperatures_note;   // why there are none, when empty
  std::vector<std::string> warnings;
  std::string lock_clocks_hint;    // nvidia-smi command a user could run; "" for host
  nlohmann::json alignment;        // clock_drift.json's "alignment": causality and offset bounds
};

// Runs (or resumes) a campaign. Throws UsageError for bad input before measuring
// anything, Error for run-time failures. With params.stop set mid-run it returns
// with interrupted = true after saving everything.
Result run_campaign(const Params& params);

// InterruptFlag lives in p2pscope/signals.hpp with every other signal handler; the name
// stays here for the callers not yet moved over (bench tcp and net).
using p2pscope::InterruptFlag;

}  // namespace p2pscope::profile
