// survey's options checked and made into Options, and --plan's table (survey/request.hpp).
#include "survey/request.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "p2pscope/backend.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "survey/files.hpp"

namespace p2pscope::survey {
namespace {

double checked_pct(double v, const char* flag) {
  if (!(v > 0 && v < 100)) throw UsageError(fmt::format("{} {}: expected a percentage between 0 and 100", flag, v));
  return v;
}

}  // namespace

Options options_of(const Request& c, const std::string& rendezvous_host) {
  if (c.transport != "tcp" && c.transport != "net" && c.transport != "nccl")
    throw UsageError("--transport " + c.transport + ": expected tcp (sockets), net (an NCCL net plugin) or nccl "
                     "(NCCL's own send/recv)");
  if (!c.plugin.empty() && c.transport == "nccl")
    throw UsageError("--plugin goes with --transport net; under --transport nccl, NCCL loads its plugin itself: set "
                     "NCCL_NET_PLUGIN (and NCCL_NET) in every rank's environment");
  if (!c.plugin.empty() && c.transport != "net")
    throw UsageError("--plugin goes with --transport net (the survey's links over an NCCL net plugin)");
  if (c.format != "text" && c.format != "json" && c.format != "csv")
    throw UsageError("--format " + c.format + ": expected text, json or csv");
  Options o;
  o.pairs = parse_pairs(c.pairs);
  o.seed = c.seed;
  o.transport = c.transport;
  o.plugin = c.plugin;
  if (!c.nics.empty()) o.nics = split_list(c.nics, "--nics");
  if (!c.rails.empty()) o.rails = parse_rails(c.rails, o.nics);
  if (!c.hosts.empty()) o.expect_hosts = split_list(c.hosts, "--hosts");
  if (!c.expect.empty()) o.expect = parse_expect(c.expect);
  o.gpu_backend = c.gpu_backend;
  std::vector<std::string> names = bench::backend_names();
  std::erase(names, "nccl");  // one process per GPU: not a host's own device pairs
  if (c.gpu_backend != "auto" && c.gpu_backend != "none" &&
      std::find(names.begin(), names.end(), c.gpu_backend) == names.end())
    throw UsageError(fmt::format("--gpu-backend {}: expected auto, none or one of bench gpu's one-process backends "
                                 "({})", c.gpu_backend, fmt::join(names, ", ")));
  o.gpu_size = parse_size(c.gpu_size);
  if (o.gpu_size == 0) throw UsageError("--gpu-size must be at least 1 byte");
  o.gpu_iters = static_cast<int>(c.iters);
  if (!c.sizes.empty()) {
    o.sizes = parse_size_list(c.sizes);
    if (o.sizes.empty() || o.sizes.front() == 0) throw UsageError("--sizes " + c.sizes + ": expected sizes of 1 byte or more");
    if (o.sizes.size() < 2)
      throw UsageError("--sizes " + c.sizes + ": give two sizes or more (e.g. 1K:1M): a link's model needs two points");
    if (o.sizes.size() > 40)
      throw UsageError(fmt::format("--sizes {}: {} sizes; at most 40 (each link ping-pongs every one)", c.sizes,
                                   o.sizes.size()));
    if (o.sizes.back() > (1ull << 30))
      throw UsageError("--sizes " + c.sizes + ": at most 1G per message");
  }
  o.bw.mode = tcp::Mode::bidir;
  o.bw.size_bytes = parse_size(c.size);
  o.bw.chunk_bytes = std::min<std::uint64_t>(parse_size(c.chunk), o.bw.size_bytes);
  o.bw.channels = c.channels;
  o.bw.window = c.window;
  o.bw.iters = c.iters;
  o.bw.warmup = c.warmup;
  o.bw.timeout_s = c.timeout_s;
  if (c.iters < 3) throw UsageError("--iters must be at least 3: each link's interval comes from its rounds");
  o.lat = o.bw;
  o.lat.mode = tcp::Mode::latency;
  o.lat.size_bytes = o.lat.chunk_bytes = parse_size(c.ping_size);
  o.lat.iters = c.pings;
  o.lat.warmup = 0;
  tcp::validate(o.bw);
  tcp::validate(o.lat);
  o.latency = !c.no_latency;
  o.local = !c.no_local;
  o.recheck = !c.no_recheck;
  if (c.per != "host" && c.per != "gpu")
    throw UsageError("--per " + external_text(c.per, 40) + ": expected host (one process per host) or gpu (one per GPU)");
  o.per_gpu = c.per == "gpu";
  if (!(c.round_timeout_s > 0)) throw UsageError("--round-timeout must be a positive number of seconds");
  if (!(c.max_time_s >= 0)) throw UsageError("--max-time must be 0 (no bound) or a number of seconds");
  o.round_timeout_s = c.round_timeout_s;
  o.max_time_s = c.max_time_s;
  o.outliers.threshold_pct = checked_pct(c.threshold_pct, "--threshold");
  o.outliers.latency_threshold_pct = c.latency_threshold_pct > 0 ? c.latency_threshold_pct
                                                                  : throw UsageError("--latency-threshold must be positive");
  o.rendezvous_host = rendezvous_host;
  return o;
}

StepCosts plan_costs(const Request& c) {
  const int rails = c.nics.empty() ? 2 : static_cast<int>(split_list(c.nics, "--nics").size());
  StepCosts costs = c.from.empty() ? default_costs(rails) : costs_from(read_survey_json(c.from));
  if (c.no_latency) costs.latency = false;
  return costs;
}

Plan plan_row(const StepCosts& costs, const std::string& item, const PairsSpec& pairs) {
  long long n = 0;
  try {
    n = parse_int(item, "--plan");
  } catch (const Error&) {
    n = 0;
  }
  if (n < 2 || n > 100000) throw UsageError("--plan " + item + ": expected a host count from 2 to 100000");
  return plan(costs, static_cast<int>(n), pairs);
}

}  // namespace p2pscope::survey
