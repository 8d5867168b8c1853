#pragma once
// The short NCCL calibration that `profile` takes after its campaign and keeps beside
// it (DIR/nccl-calibration/), so that `predict DIR` prices NCCL's collectives offline on
// a copied campaign (docs/predict.md). The timed runs are bench nccl's method in this
// process, on one set of communicators per GPU set; what NCCL chose at every size
// (algorithm, protocol, channels) comes from its TUNING log in `bench nccl` child
// processes (NCCL reads its debug settings once per process), all at once.
// A timed run that hangs in NCCL holds the profile: the campaign is on disk by then, and
// `run`'s step limit (or Ctrl-C) ends it.
#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace p2pscope::simulate {

struct CalibrationRun {
  std::string ops;        // bench nccl's --op list
  std::vector<int> gpus;  // the first n of the campaign's GPUs
  bool log = false;       // NCCL's TUNING log on, one iteration per size: what NCCL chose, not timed
                          // (its log line per call slows the host's launches several-fold)
  std::string sizes;      // "" = the options' sizes
  std::string role;       // "timed", "choices" or "host" (small sizes: the launch cost of a wide group only)
};

struct CalibrationOptions {
  std::vector<int> gpus;  // the campaign's GPUs: every op on the first two, allreduce and sendrecv on all
  std::string sizes = "1:1G";
  bool quick = false;      // allreduce and sendrecv only, at both rank counts
  bool full = false;       // every op on 3 GPUs too (where there are 4 or more)
  double timeout_s = 180;  // per run
  const std::atomic<bool>* stop = nullptr;
  // Progress lines (which run, what failed), one at a time without the newline; the
  // command shows them (profile: on stderr). Empty: said to no one.
  std::function<void(const std::string&)> say;
};

// The runs a calibration makes, in order.
std::vector<CalibrationRun> calibration_runs(const CalibrationOptions& o);
// Runs them into campaign_dir/nccl-calibration/ and writes its manifest.json (each run's
// command, environment, exit code, files and seconds). A failed run is recorded and the
// others still run; throws UsageError for fewer than two GPUs, Error when the folder
// cannot be made. Progress lines go to o.say.
void run_nccl_calibration(const std::filesystem::path& campaign_dir, const CalibrationOptions& o);

}  // namespace p2pscope::simulate
