#pragma once
// How long a survey of N hosts takes, from what one survey measured: the schedule's
// steps priced with that run's session times and its cost per step (the bootstrap's
// exchanges through rank 0). `p2pscope survey --plan N` prints it without a launch.
#include <string>
#include <vector>

#include "survey/survey.hpp"

namespace p2pscope::survey {

struct StepCosts {
  double local_s = 0;     // one host's local ceiling session
  double bw_s = 0;        // one bandwidth session (the pairs of a step run at once)
  double lat_s = 0;       // one latency session
  // --sizes: one link's ping-pong session of each size (each its own step), and how many
  double sizes_s = 0;     //   the sizes' sessions together
  int sizes = 0;          //   sizes per link
  double gpu_s = 0;       // one host's device pairs (its gpu step), 0 when none ran
  double step_s = 0;      // a step's coordination (4 exchanges through rank 0), per host
  double step_base_s = 0; // ... and its fixed part
  bool shared_kernel = false;  // local and latency steps one session at a time
  int rails = 1;
  bool latency = true;
  int pings = 200;        // latency samples per link (rank 0 keeps them all)
  std::string source;     // where the figures came from
};

// From a finished survey: medians of its sessions' wall times; the steps' coordination
// from what the whole run took beyond them.
StepCosts costs_from(const Result& r);
// Defaults for a fleet of separate hosts when no survey is given (stated as such).
StepCosts default_costs(int rails);

struct Plan {
  int hosts = 0, rounds = 0, pairs = 0, sessions = 0;
  double seconds = 0;               // predicted wall time, second pass left out
  double seconds_separate = 0;      // the same on separate hosts (local and latency steps at once)
  double record_bytes = 0;          // rounds.jsonl and survey.json's records
  double rank0_memory_bytes = 0;    // rank 0's records and figures
};
Plan plan(const StepCosts& c, int hosts, const PairsSpec& pairs);

}  // namespace p2pscope::survey
