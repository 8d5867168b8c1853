#pragma once
// `profile --processes K`: the campaign's repetitions split over K child processes of this
// binary, one after the other, each with its own CUDA context, buffers, batch sizing and
// thread placement, all writing the one campaign directory (the first creates it, the
// others resume it with the same plan). analyze then sees K process medians per config
// and widens each median's interval by their spread: two processes on one machine differ
// by more than one process's repetitions show (7-9 % on small GPU-to-host copies).
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "p2pscope/profile.hpp"

namespace p2pscope::profile {

struct ProcessCampaign {
  std::vector<std::string> argv;      // this command line (ctx.argv): the children's options come from it
  std::string out, out_root, resume;  // as given
  std::string backend;                // the primary backend (default out dir, and said to the children)
  bool backend_given = false;         // --backend on the command line: the children get it as is
  int processes = 3;
  double drift_s = 30;                      // the campaign's drift window: each child gets drift_s / K
  const std::atomic<bool>* stop = nullptr;  // the parent's interrupt flag: forwarded to the running child
  // The thermal warm-up: the first child gets it whole, the others max_s / K (the GPU is
  // warm by then; a GPU that never reaches the target would otherwise cost K x max_s).
  std::optional<ThermalTarget> thermal;
};

// The default --processes: 3 (two processes can tell a shift but a t-interval of 2
// medians is 12.7 half-spreads wide), at most the repetitions.
int default_processes(int reps);
// The --processes of the campaign being resumed (1 when it has none, or no readable
// metadata: run_campaign then says what is wrong with the directory).
int saved_processes(const std::string& dir);

// In a child: killed with the parent (a SIGKILLed `profile` leaves no orphan measuring
// into the directory, which a resume would find locked); exits at once if the parent is
// already gone.
void die_with_parent();

// Runs the children (only the shares that still miss rows, on resume) and returns the
// campaign's result as its metadata.json says. Throws Error when a child fails (naming
// it and the resume command), UsageError for options the split cannot take.
Result run_profile_processes(const ProcessCampaign& pc);

}  // namespace p2pscope::profile
