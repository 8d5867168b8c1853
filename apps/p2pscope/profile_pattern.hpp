#pragma once
// `profile --pattern pairs|fan-in|fan-out|ring-shift|all-to-all`: contention patterns
// instead of the isolated campaign (src/profile/contention.cpp); one hook in cmd_profile.
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace p2pscope::app {

struct PatternOptions {
  std::string pattern;  // "" = the isolated campaign
  int root = -1, shift = 1;
};
void add_pattern_options(CLI::App& cmd, PatternOptions& o);
// Runs the pattern with the profile options that apply (devices, sizes, backend,
// warmup, reps, out); writes DIR/contention_log.csv and DIR/contention.json.
void run_profile_pattern(const PatternOptions& p, const std::string& gpus, const std::string& sizes,
                         const std::string& backend, int warmup, int reps, const std::string& out,
                         const std::string& out_root, Context& ctx);

}  // namespace p2pscope::app
