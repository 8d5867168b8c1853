#include "survey/time_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "p2pscope/stats.hpp"

namespace p2pscope::survey {
namespace {

// Bytes of one record as rounds.jsonl writes it: the fields plus 5 rounds each way (bw)
// or --pings latency samples (lat), at about 20 characters a number.
constexpr double kRecordBase = 220, kPerNumber = 20, kFigureBytes = 400;

}  // namespace

StepCosts costs_from(const Result& r) {
  StepCosts c;
  c.shared_kernel = r.shared_cpus;
  c.rails = std::max<int>(1, static_cast<int>(r.names.rails.size()));
  std::vector<double> local, bw, lat;
  std::map<int, double> gpu;  // by host: its step's time (each pair's wall_s counts from the step's start)
  std::map<std::uint64_t, std::vector<double>> by_size;
  for (const Record& rec : r.records) {
    if (!rec.failure.empty()) continue;
    if (rec.step == "local") local.push_back(rec.wall_s);
    else if (rec.step == "bw") bw.push_back(rec.wall_s);
    else if (rec.step == "lat") lat.push_back(rec.wall_s);
    else if (rec.step == "size") by_size[rec.size_bytes].push_back(rec.wall_s);
    else if (rec.step == "gpu") gpu[rec.server] = std::max(gpu[rec.server], rec.wall_s);
  }
  c.latency = !lat.empty();
  c.local_s = local.empty() ? 0 : median(local);
  c.bw_s = bw.empty() ? 0 : median(bw);
  c.lat_s = lat.empty() ? 0 : median(lat);
  std::vector<double> gpu_steps;
  for (const auto& [host, s] : gpu) gpu_steps.push_back(s);
  c.gpu_s = gpu_steps.empty() ? 0 : median(gpu_steps);
  c.sizes = static_cast<int>(by_size.size());
  for (const auto& [size, walls] : by_size) c.sizes_s += median(walls);
  for (const Record& rec : r.records)
    if (rec.step == "lat" && !rec.latency_ns.empty()) c.pings = static_cast<int>(rec.latency_ns.size());
  const int n = static_cast<int>(r.hosts.size());
  // What the sessions explain of the first pass; the rest is coordination, per step.
  const Plan p = plan(c, n, {});
  const int links_at_once = c.shared_kernel ? n / 2 * c.rails : 1;  // steps of one latency or size kind a round
  int steps = (c.shared_kernel ? n : 1) + (c.gpu_s > 0 ? (c.shared_kernel ? n : 1) : 0) +
              p.rounds * (1 + (c.latency ? links_at_once : 0) + c.sizes * links_at_once);
  int pass2 = 0;
  for (const Record& rec : r.records) pass2 += rec.pass == 2 ? 1 : 0;
  const double explained = p.seconds;
  const double total = r.wall_s - (pass2 > 0 ? pass2 * c.bw_s : 0);  // the second pass priced as sessions
  const double per_step = steps > 0 ? std::max(0.0, total - explained) / steps : 0;
  // Rank 0 relays every exchange: a fixed part and a part per host. One run cannot tell
  // them apart; half each is stated, and a run at another N refines it.
  c.step_base_s = per_step / 2;
  c.step_s = n > 0 ? per_step / 2 / n : 0;
  c.source = "measured by a survey of " + std::to_string(n) + " hosts";
  return c;
}

StepCosts default_costs(int rails) {
  StepCosts c;
  c.rails = rails;
  c.local_s = 0.5, c.bw_s = 0.5, c.lat_s = 0.1, c.step_base_s = 0.005, c.step_s = 20e-6;
  c.source = "assumed (no survey given): 0.5 s per bandwidth and local session, 0.1 s per latency session";
  return c;
}

Plan plan(const StepCosts& c, int hosts, const PairsSpec& pairs) {
  Plan p;
  p.hosts = hosts;
  const auto rounds = rounds_for(pairs, hosts, 1);
  p.rounds = static_cast<int>(rounds.size());
  for (const Round& r : rounds) p.pairs += static_cast<int>(r.size());
  const double step = c.step_base_s + c.step_s * hosts;
  const double local = c.shared_kernel ? hosts * (c.local_s + step) : c.local_s + step;
  double per_round = c.bw_s + step;
  // Hosts of one kernel ping-pong one link at a time (latency and --sizes alike).
  const int one_at_a_time = c.shared_kernel ? std::max(1, hosts / 2) * c.rails : 1;
  if (c.latency) per_round += one_at_a_time * (c.lat_s + step);
  per_round += one_at_a_time * (c.sizes_s + c.sizes * step);
  const double gpu = c.gpu_s > 0 ? (c.shared_kernel ? hosts : 1) * (c.gpu_s + step) : 0;
  p.seconds = local + gpu + p.rounds * per_round;
  p.seconds_separate = c.local_s + step + (c.gpu_s > 0 ? c.gpu_s + step : 0) +
                       p.rounds * (c.bw_s + step + (c.latency ? c.lat_s + step : 0) + c.sizes_s + c.sizes * step);
  p.sessions = hosts + p.pairs * c.rails * ((c.latency ? 2 : 1) + c.sizes);
  // In doubles: 4096 hosts' pairs x rails x pings is past 2^31.
  const double links = static_cast<double>(p.pairs) * c.rails, numbers = 10;  // 5 rounds each way
  p.record_bytes = static_cast<double>(p.sessions) * (kRecordBase + numbers * kPerNumber) +
                   (c.latency ? links * c.pings * kPerNumber : 0);
  // Rank 0 holds every record (samples as doubles) and three judged figures per link.
  p.rank0_memory_bytes = static_cast<double>(p.sessions) * (kRecordBase + numbers * 8) +
                         (c.latency ? links * c.pings * 8 : 0) + links * 3 * kFigureBytes;
  return p;
}

}  // namespace p2pscope::survey
