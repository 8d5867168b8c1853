#include "profile/alignment.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "p2pscope/clock.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/stats.hpp"
#include "profile/causality.hpp"

namespace p2pscope::profile {
namespace {

nlohmann::json fit_json(const DriftFit& f) {
  if (!f.ok) return nullptr;
  return {{"ppm", f.ppm()},
          {"offset_ns", f.offset_ns()},
          {"host_ref_ns", f.host_ref_ns},
          {"device_ref_ns", f.device_ref_ns},
          {"points", f.points},
          {"residual_max_ns", f.residual_max_ns},
          {"bounded", f.bounded},
          {"offset_uncertainty_ns", f.uncertainty_ns()},
          {"inconsistency_ns", f.inconsistency_ns},
          {"min_bracket_ns", f.min_bracket_ns},
          {"timer_step_ns", f.step_ns}};
}

}  // namespace

DriftWindow measure_drift(bench::Backend& b, const std::vector<int>& devices, double window_s,
                          const std::atomic<bool>* stop) {
  DriftWindow w;
  w.window_s = window_s;
  const auto got = sample_timers(b, devices, window_s, 20, stop);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (!got[i].points.empty())
      w.samples[devices[i]] = got[i];
    else
      w.no_timer[devices[i]] = got[i].note.empty() ? "no device timer" : got[i].note;
  }
  return w;
}

void SyncDuringRun::maybe_sync() {
  const std::int64_t now = monotonic_ns();
  if (now - last_ns_ < kPeriodNs) return;
  last_ns_ = now;
  bench::DeviceTimer* timer = b_.device_timer();
  if (!timer) return;  // no device clock: nothing to sync
  for (int dev : devices_) {
    if (dead_[dev]) continue;
    const auto burst = timer->read_device_timer_burst(dev, kPokes);
    if (burst.readings.empty()) {
      dead_[dev] = true;
      continue;
    }
    auto& s = w_.samples[dev];
    s.method = burst.method;
    s.step_ns = std::max(s.step_ns, burst.step_ns);
    for (const auto& r : burst.readings) s.points.push_back(timer_point(r));
  }
}

namespace {
// Folds one piece's check into the device's: counts add, the worst stays, the
// uncertainties are the largest of any piece that holds ops.
void merge(CausalityCheck& into, const CausalityCheck& c) {
  if (c.ops_checked == 0) return;
  const bool first = into.ops_checked == 0;
  into.ops_checked += c.ops_checked;
  into.violations += c.violations;
  if (c.worst_violation_ns > into.worst_violation_ns) {
    into.worst_violation_ns = c.worst_violation_ns;
    into.worst_op = c.worst_op;
  }
  into.refined = into.refined || c.refined;
  into.uncertainty_before_ns = std::max(into.uncertainty_before_ns, c.uncertainty_before_ns);
  into.uncertainty_after_ns = std::max(into.uncertainty_after_ns, c.uncertainty_after_ns);
  into.min_start_slack_ns = first ? c.min_start_slack_ns : std::min(into.min_start_slack_ns, c.min_start_slack_ns);
  into.min_end_slack_ns = first ? c.min_end_slack_ns : std::min(into.min_end_slack_ns, c.min_end_slack_ns);
}

// Every sync reading of one GPU (start, end and during the run) and what the start/end
// fits say about its drift.
struct DeviceReadings {
  std::vector<TimerPoint> all;
  std::int64_t step = 0;
  std::size_t bursts_during = 0;
  bool quick_only = true;  // no end or during readings: the start burst alone
};

DeviceReadings gather_readings(int dev, const TimerSamples& s, const DriftWindow& end, const DriftWindow& during,
                               bool windowed, nlohmann::json& d, Alignment& a) {
  DeviceReadings g;
  const DriftFit fs_ = fit_timer_points(s.points, !windowed, s.step_ns);
  d = {{"device", dev}, {"sync_method", s.method}, {"start", fit_json(fs_)}};
  g.all = s.points;
  g.step = s.step_ns;
  const auto e = end.samples.find(dev);
  if (e != end.samples.end()) {
    const DriftFit fe = fit_timer_points(e->second.points, !windowed, e->second.step_ns);
    d["end"] = fit_json(fe);
    g.all.insert(g.all.end(), e->second.points.begin(), e->second.points.end());
    g.step = std::max(g.step, e->second.step_ns);
    if (windowed && fs_.ok && fe.ok) {
      const double change = std::fabs(fe.ppm() - fs_.ppm());
      d["ppm_change"] = change;
      if (change > 1.0) {
        d["warning"] = fmt::format("drift changed by {:.2f} ppm during the campaign (> 1 ppm)", change);
        a.warnings.push_back(fmt::format("GPU {}: clock drift changed by {:.2f} ppm between start and end", dev, change));
      }
    }
  }
  const auto m = during.samples.find(dev);
  if (m != during.samples.end()) {
    g.all.insert(g.all.end(), m->second.points.begin(), m->second.points.end());
    g.step = std::max(g.step, m->second.step_ns);
    g.bursts_during = m->second.points.size() / SyncDuringRun::kPokes;
  }
  g.quick_only = e == end.samples.end() && m == during.samples.end();
  return g;
}

// The campaign-wide tally over every GPU's checked ops.
struct AlignmentTotals {
  std::size_t checked = 0, violations = 0;
  double worst = 0, worst_uncertainty = 0;
  std::vector<double> op_uncertainty;  // every checked op's bound, for the median
  std::string worst_op;
};

// Every op this GPU stamped, checked against its host interval with its piece's line (the
// check may narrow a piece's fit, hence the map is not const).
CausalityCheck check_device_ops(int dev, ClockMap& map, const Plan& plan, const std::vector<LogRow>& rows,
                                const std::function<int(int, int)>& clock_device, double single_stamp_error_ns,
                                std::size_t& unbounded, std::size_t& pieces_with_ops, AlignmentTotals& t) {
  std::vector<std::vector<OpSpan>> by_piece(map.pieces.size());
  for (const auto& r : rows) {
    if (!map.ok() || r.gpu_ts_start_ns < 0 || clock_device(r.src, r.dst) != dev) continue;
    if (r.config_id < 0 || static_cast<std::size_t>(r.config_id) >= plan.configs.size()) continue;
    by_piece[map.piece_index(r.ts_start_ns)].push_back(
        {r.ts_start_ns, r.ts_end_ns, r.gpu_ts_start_ns, r.gpu_ts_end_ns,
         r.timing == "single" ? single_stamp_error_ns : 0.0,
         event_name(plan.configs[static_cast<std::size_t>(r.config_id)], r.repetition)});
  }
  CausalityCheck c;
  for (std::size_t i = 0; i < map.pieces.size(); ++i) {
    auto& piece = map.pieces[i];
    if (!piece.fit.bounded) ++unbounded;
    if (by_piece[i].empty()) continue;
    ++pieces_with_ops;
    merge(c, check_causality(by_piece[i], &piece.fit));
    for (const auto& op : by_piece[i]) t.op_uncertainty.push_back(piece.fit.uncertainty_over(op.host_start_ns, op.host_end_ns));
  }
  if (c.ops_checked == 0) c.uncertainty_after_ns = c.uncertainty_before_ns = map.uncertainty_max_ns();
  return c;
}

// One GPU: its readings, its piecewise clock map, its ops checked; its JSON in `devices`.
void align_device(int dev, const TimerSamples& s, const DriftWindow& during, const DriftWindow& end, bool windowed,
                  const Plan& plan, const std::vector<LogRow>& rows, const std::function<int(int, int)>& clock_device,
                  double single_stamp_error_ns, nlohmann::json& devices, AlignmentTotals& t, Alignment& a) {
  nlohmann::json d;
  const DeviceReadings g = gather_readings(dev, s, end, during, windowed, d, a);
  // One line over the whole campaign, for the record: where the rate wandered it does
  // not fit, which is why ops are mapped piece by piece.
  const DriftFit whole = fit_timer_points(g.all, g.quick_only, g.step);
  d["one_line_fit"] = fit_json(whole);
  std::vector<std::int64_t> op_hosts;  // where pieces must part: between readings with ops between them
  for (const auto& r : rows)
    if (r.gpu_ts_start_ns >= 0 && clock_device(r.src, r.dst) == dev) op_hosts.push_back(r.ts_start_ns);
  ClockMap map = build_clock_map(g.all, g.step, 1'000'000'000, &op_hosts);
  std::size_t unbounded = 0, pieces_with_ops = 0;
  const CausalityCheck c =
      check_device_ops(dev, map, plan, rows, clock_device, single_stamp_error_ns, unbounded, pieces_with_ops, t);
  if (unbounded > 0)
    a.warnings.push_back(fmt::format("GPU {}: {} of {} clock-map pieces have sync readings that fit no line (the "
                                     "timer jumped?); their GPU times are placed within +-{:.0f} ns",
                                     dev, unbounded, map.pieces.size(), map.uncertainty_max_ns()));
  d["clock_map"] = {{"pieces", map.pieces.size()},
                    {"pieces_with_ops", pieces_with_ops},
                    {"sync_bursts_during_run", g.bursts_during},
                    {"offset_uncertainty_ns_max", c.uncertainty_after_ns},
                    {"rule", "each stretch between two sync bursts has its own line, fitted to the readings within "
                             "1 s of it; a mapped GPU time is within offset_uncertainty_ns of the host clock"}};
  d["causality"] = to_json(c);
  t.checked += c.ops_checked;
  t.violations += c.violations;
  if (c.worst_violation_ns > t.worst) {
    t.worst = c.worst_violation_ns;
    t.worst_op = c.worst_op;
  }
  t.worst_uncertainty = std::max(t.worst_uncertainty, c.ops_checked ? c.uncertainty_after_ns : map.uncertainty_max_ns());
  if (c.violations > 0)
    a.warnings.push_back(fmt::format(
        "GPU {}: {} of {} ops have a GPU interval outside their host interval for every clock offset the sync allows "
        "(worst by {:.0f} ns, {}): the GPU time stamps or the clock mapping are wrong, not the hardware",
        dev, c.violations, c.ops_checked, c.worst_violation_ns, c.worst_op));
  map.ops_bound_ns = c.ops_checked ? c.uncertainty_after_ns : 0;
  if (map.ok()) a.to_host[dev] = std::move(map);
  devices.push_back(d);
}

// GPUs whose ops carry stamps but which gave no sync readings.
void mark_unaligned(const DriftWindow& start, const std::vector<LogRow>& rows,
                    const std::function<int(int, int)>& clock_device, Alignment& a) {
  std::set<int> stamped;
  for (const auto& r : rows)
    if (r.gpu_ts_start_ns >= 0) stamped.insert(clock_device(r.src, r.dst));
  for (int dev : stamped)
    if (!a.to_host.count(dev)) {
      const auto why = start.no_timer.find(dev);
      a.unaligned[dev] = why != start.no_timer.end() ? why->second : "no clock sync readings";
      a.warnings.push_back(fmt::format("GPU {}: clock alignment unavailable ({}): its trace lane is unaligned",
                                       dev, a.unaligned[dev]));
    }
}

nlohmann::json alignment_summary(const DriftWindow& start, const AlignmentTotals& t, double single_stamp_error_ns,
                                 const Alignment& a) {
  nlohmann::json j = {{"ops_checked", t.checked},
                      {"causality_violations", t.violations},
                      {"worst_violation_ns", t.worst},
                      {"worst_op", t.worst_op.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.worst_op)},
                      {"offset_uncertainty_ns_max", start.samples.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.worst_uncertainty)},
                      {"offset_uncertainty_ns_median", t.op_uncertainty.empty() ? nlohmann::json(nullptr) : nlohmann::json(median(t.op_uncertainty))},
                      {"single_timing_stamp_error_ns", single_stamp_error_ns},
                      {"unaligned_devices", nlohmann::json::object()}};
  for (const auto& [dev, why] : a.unaligned) j["unaligned_devices"][std::to_string(dev)] = why;
  return j;
}
}  // namespace

Alignment align_clocks(const std::string& backend, const DriftWindow& start, const DriftWindow& during,
                       const DriftWindow& end, const Plan& plan,
                       const std::vector<LogRow>& rows, const std::function<int(int, int)>& clock_device,
                       double single_stamp_error_ns) {
  Alignment a;
  const bool windowed = start.window_s > 0;
  nlohmann::json devices = nlohmann::json::array();
  AlignmentTotals totals;
  for (const auto& [dev, s] : start.samples)
    align_device(dev, s, during, end, windowed, plan, rows, clock_device, single_stamp_error_ns, devices, totals, a);
  mark_unaligned(start, rows, clock_device, a);
  a.report = {{"schema_version", kSchemaVersion},
              {"window_s", start.window_s},
              {"host_clock", "CLOCK_MONOTONIC"},
              {"device_clock", "GPU %globaltimer"},
              {"ppm_definition", "(device_rate / host_rate - 1) * 1e6"},
              {"offset_definition", "device - host at host_ref_ns; offset_uncertainty_ns bounds a mapped GPU time either side"},
              {"devices", devices}};
  a.report["alignment"] = alignment_summary(start, totals, single_stamp_error_ns, a);
  if (start.samples.empty())
    a.report["note"] = "backend " + backend + " has no device clock: nothing to fit (host times only)";
  if (start.window_s <= 0) a.report["note_window"] = "--drift 0: per-window ppm not measured; the clock map rests on the quick bursts at start and end and those taken during the run";
  return a;
}

}  // namespace p2pscope::profile
