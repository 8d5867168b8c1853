// compare's text and JSON (p2pscope/compare.hpp): the verdict and its lines first, the
// rule with the level its intervals really have, per subject, then the changed points
// with every figure the compared tables print (time, and busbw beside it for bench nccl).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/compare.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::compare {

std::string value_text(const Loaded& l, double v) {
  if (l.unit == "ns") return format_duration_ns(v);
  return fmt::format("{:.3f} {}", v, l.unit);
}

namespace {

// A median with the interval it was judged by: its own, or the run's event pass.
std::string interval_text(const Loaded& l, const Point& p, bool by_events) {
  if (by_events)
    return fmt::format("{} (events [{}, {}])", value_text(l, p.median), value_text(l, p.ev_lo), value_text(l, p.ev_hi));
  if (p.level <= 0) return value_text(l, p.median) + " (1 figure)";
  return fmt::format("{} [{}, {}]", value_text(l, p.median), value_text(l, p.lo), value_text(l, p.hi));
}

nlohmann::json side_json(const Loaded& l) {
  nlohmann::json setups = nlohmann::json::array();
  for (const auto& s : l.setups) setups.push_back({{"op", s.op}, {"dtype", s.dtype}, {"ranks", s.ranks}});
  return {{"path", l.path},
          {"kind", kind_text(l.kind)},
          {"description", l.description},
          {"mode", l.mode},
          {"unit", l.unit},
          {"higher_is_better", l.higher_is_better},
          {"started", l.started},
          {"points", l.points.size()},
          {"files", l.files},
          {"machine", l.machine},
          {"setups", setups}};
}

nlohmann::json point_json(const Point& p) {
  nlohmann::json j = {{"median", p.median}, {"lo", p.lo}, {"hi", p.hi}, {"level", p.level}, {"n", p.n}};
  if (p.rate > 0) j["busbw_GBps"] = {{"median", p.rate}, {"lo", p.rate_lo}, {"hi", p.rate_hi}};
  if (p.ev_level > 0) j["event_pass"] = {{"lo", p.ev_lo}, {"hi", p.ev_hi}, {"level", p.ev_level}, {"n", p.ev_n}};
  return j;
}

}  // namespace

std::string to_text(const Comparison& c) {
  std::string o = "# p2pscope compare\n";
  for (const auto* side : {&c.a, &c.b})
    o += fmt::format("{}: {} ({}{})\n", side == &c.a ? "A" : "B", side->path, side->description,
                     side->started.empty() ? "" : ", started " + side->started);
  o += "\nverdict: " + c.verdict + "\n";
  for (const auto& p : c.patterns) o += "  " + p + "\n";
  o += fmt::format(
      "(a point counts as changed when the two medians' {}intervals do not overlap and the change is at "
      "least {:g} %; change = (B - A) / A of the median {}{})\n\n",
      c.levels.empty() ? "" : c.levels + " ", c.threshold_pct, c.a.unit == "ns" ? "time" : c.a.unit,
      c.noise.empty() ? "" : "; the intervals are " + c.noise);
  const std::string noun = subject_noun(c.a.kind);
  Table subjects({noun, "points", "slower", "faster", "change"});
  for (const auto& s : c.subjects)
    subjects.add_row(
        {subject_text(c, s), std::to_string(s.sizes), std::to_string(s.slower), std::to_string(s.faster),
         s.slower + s.faster ? fmt::format("{:+.1f} .. {:+.1f} %", s.min_delta_pct, s.max_delta_pct) : "-"});
  o += subjects.to_text();
  const bool rates = !c.rows.empty() && c.rows.front().has_rate;
  const std::string iv = c.levels.empty() ? "interval" : c.levels + " interval";
  std::vector<std::string> head = {noun, "size", "A median [" + iv + "]", "B median [" + iv + "]", "change"};
  if (rates) head.insert(head.end(), {"A busbw", "B busbw", "busbw change"});
  head.push_back("verdict");
  Table rows(head);
  for (const auto& r : c.rows) {
    if (r.verdict != "slower" && r.verdict != "faster") continue;
    std::vector<std::string> cells = {r.subject, r.size_bytes ? format_size(r.size_bytes) : "-",
                                      interval_text(c.a, r.a, r.by_events), interval_text(c.b, r.b, r.by_events),
                                      fmt::format("{:+.1f} %", r.delta_pct)};
    if (rates)
      cells.insert(cells.end(), {fmt::format("{:.2f} GB/s", r.a.rate), fmt::format("{:.2f} GB/s", r.b.rate),
                                 r.has_rate ? fmt::format("{:+.1f} %", r.rate_delta_pct) : "-"});
    cells.push_back(r.verdict);
    rows.add_row(cells);
  }
  if (!rows.rows().empty()) o += "\nchanged points:\n" + rows.to_text();
  o += "\n(every point with its intervals: --format json or --format html)\n";
  for (const auto& n : c.notes) o += "# " + n + "\n";
  return o;
}

nlohmann::json to_json(const Comparison& c) {
  nlohmann::json j = {{"kind", "p2pscope_compare"},
                      {"a", side_json(c.a)},
                      {"b", side_json(c.b)},
                      {"threshold_pct", c.threshold_pct},
                      {"verdict", c.verdict},
                      {"patterns", c.patterns},
                      {"interval_levels", c.levels},
                      {"intervals_of", c.noise},
                      {"changed_points", c.changed()},
                      {"rule", "changed: the medians' intervals do not overlap and |change| >= threshold_pct"}};
  nlohmann::json subjects = nlohmann::json::array();
  for (const auto& s : c.subjects)
    subjects.push_back(
        {{"backend", s.backend},
         {"subject", s.subject},
         {"points", s.sizes},
         {"slower", s.slower},
         {"faster", s.faster},
         {"changed", s.slower + s.faster > 0},
         {"min_change_pct", s.slower + s.faster ? nlohmann::json(s.min_delta_pct) : nlohmann::json(nullptr)},
         {"max_change_pct", s.slower + s.faster ? nlohmann::json(s.max_delta_pct) : nlohmann::json(nullptr)}});
  j["subjects"] = subjects;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    rows.push_back({{"backend_a", r.backend_a},
                    {"backend_b", r.backend_b},
                    {"subject", r.subject},
                    {"size_bytes", r.size_bytes},
                    {"a", point_json(r.a)},
                    {"b", point_json(r.b)},
                    {"change_pct", r.delta_pct},
                    {"beyond_both_intervals", r.beyond_noise},
                    {"judged_on", r.verdict == "no interval" ? "none"
                                  : r.by_events              ? "event pass"
                                                             : "figures"},
                    {"beyond_threshold", r.beyond_threshold},
                    {"verdict", r.verdict}});
    if (r.has_rate) rows.back()["busbw_change_pct"] = r.rate_delta_pct;
  }
  j["rows"] = rows;
  j["only_in_a"] = c.only_a;
  j["only_in_b"] = c.only_b;
  j["notes"] = c.notes;
  return j;
}

}  // namespace p2pscope::compare
