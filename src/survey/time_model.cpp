#include "survey/time_model.hpp"

#include <algorithm>
#include <cmath>

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
  for (const Record& rec : r.records) {
    if (!rec.failure.empty()) continue;
    (rec.step == "local" ? local : rec.step == "bw" ? bw : lat).push_back(rec.wall_s);
  }
  c.latency = !lat.empty();
  c.local_s = local.empty() ? 0 : median(local);
  c.bw_s = bw.empty() ? 0 : median(bw);
  c.lat_s = lat.empty() ? 0 : median(lat);
  for (const Record& rec : r.records)
    if (rec.step == "lat" && !rec.latency_ns.empty()) c.pings = static_cast<int>(rec.latency_ns.size());
  const int n = static_cast<int>(r.hosts.size());
  // What the sessions explain of the first pass; the rest is coordination, per step.
  const Plan p = plan(c, n, {});
  int steps = (c.shared_kernel ? n : 1) + p.rounds * (1 + (c.latency ? (c.shared_kernel ? n / 2 * c.rails : 1) : 0));
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
  if (c.latency) {
    const int lat_steps = c.shared_kernel ? std::max(1, hosts / 2) * c.rails : 1;
    per_round += lat_steps * (c.lat_s + step);
  }
  p.seconds = local + p.rounds * per_round;
  p.seconds_separate = c.local_s + step + p.rounds * (c.bw_s + step + (c.latency ? c.lat_s + step : 0));
  p.sessions = hosts + p.pairs * c.rails * (c.latency ? 2 : 1);
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
