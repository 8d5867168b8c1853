#pragma once
// `p2pscope run`'s plan: which steps run with which p2pscope arguments on this machine
// (GPUs, NCCL, the campaign's backend), which are skipped and why, and which files in
// --out are not this run's. The command (apps/p2pscope/cmd_run.cpp) runs and prints them.
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "p2pscope/gpu_runtime.hpp"
#include "run/steps.hpp"

namespace p2pscope::run {

struct RunOptions {
  std::string out = "p2pscope-out";
  std::string sizes;    // campaign sizes; default depends on GPU or host
  int reps = 3;
  std::string backend;  // campaign backend; default ce with 2+ GPUs, staged with one, else host
  std::vector<std::string> skip;
  double step_timeout_s = 600;
};

// Every step's name, in the order they run (--skip's choices).
inline const std::vector<std::string> kStepNames{"topo",          "topo-text",      "profile",      "bench-gpu",
                                                 "bench-latency", "nccl-allreduce", "tcp-loopback", "analyze",
                                                 "export",        "predict"};

// Throws UsageError for options no step could run with (before the first step runs).
void check_options(const RunOptions& o);

// The steps for this machine, their outputs under `out`.
std::vector<Step> plan_steps(const RunOptions& o, const gpu::RuntimeInfo& rt, const std::filesystem::path& out);

// --skip: those steps are skipped, and so is a step that reads a skipped step's output
// (analyze, export and predict read the campaign), said as such; a campaign already in
// --out (`campaign_there`) stands for a skipped profile (run --skip profile).
void skip_steps(std::vector<Step>& steps, const std::vector<std::string>& skip, bool campaign_there);

// A previous run's campaign is kept (renamed), never overwritten: returns where it went,
// nothing when there was none. Throws Error when it cannot be renamed.
std::optional<std::filesystem::path> set_aside(const std::filesystem::path& dir);

// The files of steps that did not run this time (skipped, or not reached before an
// interrupt): a copy an earlier run left in --out is not this run's result, so neither
// the headline nor the index's file list shows it as one.
std::set<std::string> files_not_of_this_run(const std::vector<Step>& steps, const std::vector<StepResult>& results);

}  // namespace p2pscope::run
