#include "profile/alignment.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "p2pscope/metadata.hpp"
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

Alignment align_clocks(const std::string& backend, const DriftWindow& start, const DriftWindow& end, const Plan& plan,
                       const std::vector<LogRow>& rows, const std::function<int(int, int)>& clock_device,
                       double single_stamp_error_ns) {
  Alignment a;
  const bool windowed = start.window_s > 0;
  nlohmann::json devices = nlohmann::json::array();
  std::size_t checked = 0, violations = 0;
  double worst = 0, worst_uncertainty = 0;
  std::string worst_op;
  for (const auto& [dev, s] : start.samples) {
    const DriftFit fs_ = fit_timer_points(s.points, !windowed, s.step_ns);
    nlohmann::json d = {{"device", dev}, {"sync_method", s.method}, {"start", fit_json(fs_)}};
    std::vector<TimerPoint> all = s.points;
    std::int64_t step = s.step_ns;
    const auto e = end.samples.find(dev);
    if (e != end.samples.end()) {
      const DriftFit fe = fit_timer_points(e->second.points, !windowed, e->second.step_ns);
      d["end"] = fit_json(fe);
      all.insert(all.end(), e->second.points.begin(), e->second.points.end());
      step = std::max(step, e->second.step_ns);
      if (windowed && fs_.ok && fe.ok) {
        const double change = std::fabs(fe.ppm() - fs_.ppm());
        d["ppm_change"] = change;
        if (change > 1.0) {
          d["warning"] = fmt::format("drift changed by {:.2f} ppm during the campaign (> 1 ppm)", change);
          a.warnings.push_back(fmt::format("GPU {}: clock drift changed by {:.2f} ppm between start and end", dev, change));
        }
      }
    }
    DriftFit whole = fit_timer_points(all, e == end.samples.end(), step);
    if (whole.ok && !whole.bounded)
      a.warnings.push_back(fmt::format("GPU {}: the clock sync readings do not fit one line (off by {:.0f} ns): "
                                       "the timer jumped or drifted unevenly; GPU times are placed within +-{:.0f} ns",
                                       dev, whole.inconsistency_ns, whole.uncertainty_ns()));
    // Every op this GPU stamped, checked against its host interval.
    std::vector<OpSpan> spans;
    for (const auto& r : rows) {
      if (r.gpu_ts_start_ns < 0 || clock_device(r.src, r.dst) != dev) continue;
      if (r.config_id < 0 || static_cast<std::size_t>(r.config_id) >= plan.configs.size()) continue;
      spans.push_back({r.ts_start_ns, r.ts_end_ns, r.gpu_ts_start_ns, r.gpu_ts_end_ns,
                       r.timing == "single" ? single_stamp_error_ns : 0.0,
                       event_name(plan.configs[static_cast<std::size_t>(r.config_id)], r.repetition)});
    }
    const CausalityCheck c = check_causality(spans, &whole);
    d["campaign_fit"] = fit_json(whole);
    d["causality"] = to_json(c);
    checked += c.ops_checked;
    violations += c.violations;
    if (c.worst_violation_ns > worst) {
      worst = c.worst_violation_ns;
      worst_op = c.worst_op;
    }
    worst_uncertainty = std::max(worst_uncertainty, whole.uncertainty_ns());
    if (c.violations > 0)
      a.warnings.push_back(fmt::format(
          "GPU {}: {} of {} ops have a GPU interval outside their host interval for every clock offset the sync allows "
          "(worst by {:.0f} ns, {}): the GPU time stamps or the clock mapping are wrong, not the hardware",
          dev, c.violations, c.ops_checked, c.worst_violation_ns, c.worst_op));
    if (whole.ok) a.to_host[dev] = whole;
    devices.push_back(d);
  }
  // GPUs whose ops carry stamps but which gave no sync readings.
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
  a.report = {{"schema_version", kSchemaVersion},
              {"window_s", start.window_s},
              {"host_clock", "CLOCK_MONOTONIC"},
              {"device_clock", "GPU %globaltimer"},
              {"ppm_definition", "(device_rate / host_rate - 1) * 1e6"},
              {"offset_definition", "device - host at host_ref_ns; offset_uncertainty_ns bounds a mapped GPU time either side"},
              {"devices", devices}};
  a.report["alignment"] = {{"ops_checked", checked},
                           {"causality_violations", violations},
                           {"worst_violation_ns", worst},
                           {"worst_op", worst_op.empty() ? nlohmann::json(nullptr) : nlohmann::json(worst_op)},
                           {"offset_uncertainty_ns_max", start.samples.empty() ? nlohmann::json(nullptr) : nlohmann::json(worst_uncertainty)},
                           {"single_timing_stamp_error_ns", single_stamp_error_ns},
                           {"unaligned_devices", nlohmann::json::object()}};
  for (const auto& [dev, why] : a.unaligned) a.report["alignment"]["unaligned_devices"][std::to_string(dev)] = why;
  if (start.samples.empty())
    a.report["note"] = "backend " + backend + " has no device clock: nothing to fit (host times only)";
  if (start.window_s <= 0) a.report["note_window"] = "--drift 0: per-window ppm not measured; offsets and the campaign-long fit only";
  return a;
}

}  // namespace p2pscope::profile
