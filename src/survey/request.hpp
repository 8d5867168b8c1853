#pragma once
// `p2pscope survey`'s options as given (the command binds its flags to a Request), made
// into the survey's Options with every check the run needs before any rank measures,
// and --plan N's table: the time model without a launch (survey/time_model.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "survey/survey.hpp"
#include "survey/time_model.hpp"

namespace p2pscope::survey {

// The options as the command line gives them (sizes and lists as text).
struct Request {
  std::string pairs = "all", nics, hosts, transport = "tcp", plugin, expect, rails;
  std::string size = "64M", chunk = "1M", ping_size = "8";
  std::uint32_t channels = 1, window = 4, iters = 9, warmup = 1, pings = 200;
  std::uint64_t seed = 1;
  double timeout_s = 10, round_timeout_s = 60, max_time_s = 0;
  double threshold_pct = 5, latency_threshold_pct = 50;
  bool no_latency = false, no_local = false, no_recheck = false;
  std::string per = "host";  // --per host|gpu
  std::string format = "text", out, resume;
  std::string plan, from;  // --plan N,N...: the time model, no launch
  std::string gpu_backend = "auto", gpu_size = "256M";
  std::string sizes;  // --sizes: the survey as a campaign across hosts
};


// Throws UsageError naming the flag for any option the survey cannot run with.
// `rendezvous_host`: the launcher's (its NIC is left out when the NICs are found).
Options options_of(const Request& c, const std::string& rendezvous_host);

// --plan N[,N...]: the step costs, from --from's survey (UsageError where it cannot be
// read), else the defaults for the --nics count (2 without it).
StepCosts plan_costs(const Request& c);
// One item of --plan: the plan for that host count (UsageError outside 2..100000).
Plan plan_row(const StepCosts& costs, const std::string& item, const PairsSpec& pairs);

}  // namespace p2pscope::survey
