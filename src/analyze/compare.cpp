// compare (p2pscope/compare.hpp): matching two results point by point, the verdict per
// point and per subject, and the text and JSON renderings (HTML: compare_html.cpp).
// A change counts only when it is beyond the noise of BOTH runs (the two medians'
// intervals do not overlap) and at least the practical threshold: on quiet data a 0.5 %
// shift is real yet rarely worth a reader's attention, and on noisy data a 10 % one may
// be chance.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/compare.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::compare {
namespace {

using Key = std::tuple<std::string, std::string, std::uint64_t>;  // backend, subject, size

// "0->1" sorts by its numbers (10->2 after 2->3); anything else as text.
std::tuple<int, int, std::string> subject_order(const std::string& s) {
  int a = 0, b = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%d->%d%c", &a, &b, &tail) == 2) return {a, b, ""};
  return {1 << 30, 0, s};
}

std::string point_name(const Point& p) {
  return p.size_bytes ? fmt::format("{} @ {}", p.subject, format_size(p.size_bytes)) : p.subject;
}

std::set<std::string> backends_of(const Loaded& l) {
  std::set<std::string> s;
  for (const auto& p : l.points) s.insert(p.backend);
  return s;
}

std::string subject_word(const Loaded& l, std::size_t n) { return std::string(subject_noun(l.kind)) + (n == 1 ? "" : "s"); }

}  // namespace

const char* subject_noun(Kind k) {
  return k == Kind::sweep_tcp ? "point" : k == Kind::bench_nccl ? "op" : k == Kind::survey ? "link" : "pair";
}

std::size_t Comparison::changed() const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.verdict == "slower" || r.verdict == "faster"; }));
}

Comparison compare(const Loaded& a, const Loaded& b, double threshold_pct) {
  if (a.kind != b.kind)
    throw UsageError(fmt::format("'{}' is {} and '{}' is {}: compare takes two results of the same kind", a.path,
                                 kind_text(a.kind), b.path, kind_text(b.kind)));
  if (a.mode != b.mode && a.kind == Kind::survey)
    throw UsageError(fmt::format("'{}' is a survey of {} and '{}' of {}: not the same cluster; compare two surveys of "
                                 "one set of hosts and rails",
                                 a.path, a.mode, b.path, b.mode));
  if (a.mode != b.mode) {
    const char* what = a.kind == Kind::bench_nccl ? "op" : "pattern";
    throw UsageError(fmt::format("'{}' measured {} {} and '{}' {} {}: not the same quantity; compare two runs of one {}",
                                 a.path, what, a.mode, b.path, what, b.mode, what));
  }
  if (!(threshold_pct >= 0) || !std::isfinite(threshold_pct))
    throw UsageError("--threshold is a percentage, 0 or more (e.g. 5)");
  Comparison c;
  c.a = a;
  c.b = b;
  c.threshold_pct = threshold_pct;
  // One backend each, but not the same one (ce against sm): the pairs are what is compared.
  const auto ba = backends_of(a), bb = backends_of(b);
  const bool across_backends = ba.size() == 1 && bb.size() == 1 && ba != bb;
  if (across_backends)
    c.notes.push_back(fmt::format("A ran backend {}, B backend {}: points matched by pair and size", *ba.begin(), *bb.begin()));
  const auto key = [&](const Point& p) { return Key{across_backends ? "" : p.backend, p.subject, p.size_bytes}; };
  std::map<Key, const Point*> in_b;
  for (const auto& p : b.points) in_b[key(p)] = &p;
  std::set<Key> matched;
  for (const auto& pa : a.points) {
    const auto it = in_b.find(key(pa));
    if (it == in_b.end()) {
      c.only_a.push_back(point_name(pa));
      continue;
    }
    matched.insert(it->first);
    const Point& pb = *it->second;
    Row r;
    r.backend_a = pa.backend;
    r.backend_b = pb.backend;
    r.subject = pa.subject;
    r.size_bytes = pa.size_bytes;
    r.a = pa;
    r.b = pb;
    r.delta_pct = pa.median != 0 ? (pb.median - pa.median) / pa.median * 100 : 0;
    const bool intervals = pa.level > 0 && pb.level > 0;
    r.beyond_noise = intervals && (pb.lo > pa.hi || pb.hi < pa.lo);
    r.beyond_threshold = std::abs(r.delta_pct) >= threshold_pct;
    r.worse = a.higher_is_better ? r.delta_pct < 0 : r.delta_pct > 0;
    r.verdict = !intervals             ? "no interval"
                : !r.beyond_noise      ? "within noise"
                : !r.beyond_threshold  ? "below threshold"
                : r.worse              ? "slower"
                                       : "faster";
    c.rows.push_back(std::move(r));
  }
  for (const auto& pb : b.points)
    if (!matched.count(key(pb))) c.only_b.push_back(point_name(pb));
  if (c.rows.empty())
    throw UsageError(fmt::format("'{}' and '{}' have no point in common (A: {} points, e.g. {}; B: {}, e.g. {}): "
                                 "compare runs of the same pairs and sizes", a.path, b.path, a.points.size(),
                                 point_name(a.points.front()), b.points.size(), point_name(b.points.front())));
  std::sort(c.rows.begin(), c.rows.end(), [](const Row& x, const Row& y) {
    return std::make_tuple(x.backend_a, subject_order(x.subject), x.size_bytes) <
           std::make_tuple(y.backend_a, subject_order(y.subject), y.size_bytes);
  });
  std::size_t no_interval = 0;
  for (const auto& r : c.rows) {
    no_interval += r.verdict == "no interval";
    if (c.subjects.empty() || c.subjects.back().backend != r.backend_a || c.subjects.back().subject != r.subject)
      c.subjects.push_back({r.backend_a, r.subject});
    auto& s = c.subjects.back();
    ++s.sizes;
    if (r.verdict != "slower" && r.verdict != "faster") continue;
    const bool first = s.slower + s.faster == 0;
    (r.verdict == "slower" ? s.slower : s.faster)++;
    s.min_delta_pct = first ? r.delta_pct : std::min(s.min_delta_pct, r.delta_pct);
    s.max_delta_pct = first ? r.delta_pct : std::max(s.max_delta_pct, r.delta_pct);
  }
  if (no_interval)
    c.notes.push_back(fmt::format("{} points have a single sample on one side: no interval, so no verdict (more "
                                  "repetitions give one)", no_interval));
  if (!c.only_a.empty() || !c.only_b.empty())
    c.notes.push_back(fmt::format("{} points only in A, {} only in B: left out", c.only_a.size(), c.only_b.size()));

  // The verdict line: the subjects that changed, each with its sizes and range of change.
  const std::string quantity = a.unit == "ns" ? "time" : a.unit;
  std::vector<std::string> changed;
  for (const auto& s : c.subjects) {
    if (s.slower + s.faster == 0) continue;
    const std::string dir = s.slower && s.faster ? "mixed" : s.slower ? "slower" : "faster";
    const std::string range = s.min_delta_pct == s.max_delta_pct
                                  ? fmt::format("{:+.1f} %", s.min_delta_pct)
                                  : fmt::format("{:+.1f} to {:+.1f} %", s.min_delta_pct, s.max_delta_pct);
    changed.push_back(fmt::format("{}{} {} ({} of {} {}, {} {})", across_backends || ba.size() < 2 ? "" : s.backend + " ",
                                  s.subject, dir, s.slower + s.faster, s.sizes, s.sizes == 1 ? "size" : "sizes", quantity,
                                  range));
  }
  const std::size_t n = c.subjects.size();
  const std::string rule = fmt::format("beyond both runs' intervals and at least {:g} %", threshold_pct);
  if (changed.empty()) {
    c.verdict = fmt::format("no change {}: {} {}, {} points compared", rule, n, subject_word(a, n), c.rows.size());
  } else {
    std::string list;
    for (const auto& s : changed) list += (list.empty() ? "" : "; ") + s;
    c.verdict = fmt::format("{} of {} {} changed {}: {}{}", changed.size(), n, subject_word(a, n), rule, list,
                            changed.size() < n ? fmt::format("; the other {} unchanged", n - changed.size()) : "");
  }
  return c;
}

// The backend is named only where A holds several (ce and staged in one campaign).
std::string subject_text(const Comparison& c, const SubjectSummary& s) {
  const bool several = std::any_of(c.subjects.begin(), c.subjects.end(),
                                   [&](const SubjectSummary& x) { return x.backend != c.subjects.front().backend; });
  return several && !s.backend.empty() ? s.backend + " " + s.subject : s.subject;
}

std::string value_text(const Loaded& l, double v) {
  if (l.unit == "ns") return format_duration_ns(v);
  return fmt::format("{:.3f} {}", v, l.unit);
}

namespace {

std::string interval_text(const Loaded& l, const Point& p) {
  if (p.level <= 0) return value_text(l, p.median) + " (1 sample)";
  return fmt::format("{} [{}, {}]", value_text(l, p.median), value_text(l, p.lo), value_text(l, p.hi));
}

nlohmann::json side_json(const Loaded& l) {
  return {{"path", l.path},   {"kind", kind_text(l.kind)}, {"description", l.description},
          {"mode", l.mode},   {"unit", l.unit},            {"higher_is_better", l.higher_is_better},
          {"started", l.started}, {"points", l.points.size()}};
}

nlohmann::json point_json(const Point& p) {
  return {{"median", p.median}, {"lo", p.lo}, {"hi", p.hi}, {"level", p.level}, {"n", p.n}};
}

}  // namespace

std::string to_text(const Comparison& c) {
  std::string o = "# p2pscope compare\n";
  for (const auto* side : {&c.a, &c.b})
    o += fmt::format("{}: {} ({}{})\n", side == &c.a ? "A" : "B", side->path, side->description,
                     side->started.empty() ? "" : ", started " + side->started);
  o += "\nverdict: " + c.verdict + "\n";
  o += fmt::format("(a point counts as changed when the two medians' 95 % intervals do not overlap and the change is at "
                   "least {:g} %; change = (B - A) / A of the median {})\n\n",
                   c.threshold_pct, c.a.unit == "ns" ? "time" : c.a.unit);
  const std::string noun = subject_noun(c.a.kind);
  Table subjects({noun, "points", "slower", "faster", "change"});
  for (const auto& s : c.subjects)
    subjects.add_row({subject_text(c, s),
                      std::to_string(s.sizes), std::to_string(s.slower), std::to_string(s.faster),
                      s.slower + s.faster ? fmt::format("{:+.1f} .. {:+.1f} %", s.min_delta_pct, s.max_delta_pct) : "-"});
  o += subjects.to_text();
  Table rows({noun, "size", "A median [95% interval]", "B median [95% interval]", "change", "verdict"});
  for (const auto& r : c.rows)
    if (r.verdict == "slower" || r.verdict == "faster")
      rows.add_row({r.subject, r.size_bytes ? format_size(r.size_bytes) : "-", interval_text(c.a, r.a),
                    interval_text(c.b, r.b), fmt::format("{:+.1f} %", r.delta_pct), r.verdict});
  if (!rows.rows().empty()) o += "\nchanged points:\n" + rows.to_text();
  o += "\n(every point with its intervals: --format json or --format html)\n";
  for (const auto& n : c.notes) o += "# " + n + "\n";
  return o;
}

nlohmann::json to_json(const Comparison& c) {
  nlohmann::json j = {{"kind", "p2pscope_compare"}, {"a", side_json(c.a)}, {"b", side_json(c.b)},
                      {"threshold_pct", c.threshold_pct}, {"verdict", c.verdict}, {"changed_points", c.changed()},
                      {"rule", "changed: the medians' intervals do not overlap and |change| >= threshold_pct"}};
  nlohmann::json subjects = nlohmann::json::array();
  for (const auto& s : c.subjects)
    subjects.push_back({{"backend", s.backend}, {"subject", s.subject}, {"points", s.sizes}, {"slower", s.slower},
                        {"faster", s.faster}, {"changed", s.slower + s.faster > 0},
                        {"min_change_pct", s.slower + s.faster ? nlohmann::json(s.min_delta_pct) : nlohmann::json(nullptr)},
                        {"max_change_pct", s.slower + s.faster ? nlohmann::json(s.max_delta_pct) : nlohmann::json(nullptr)}});
  j["subjects"] = subjects;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows)
    rows.push_back({{"backend_a", r.backend_a}, {"backend_b", r.backend_b}, {"subject", r.subject},
                    {"size_bytes", r.size_bytes}, {"a", point_json(r.a)}, {"b", point_json(r.b)},
                    {"change_pct", r.delta_pct}, {"beyond_both_intervals", r.beyond_noise},
                    {"beyond_threshold", r.beyond_threshold}, {"verdict", r.verdict}});
  j["rows"] = rows;
  j["only_in_a"] = c.only_a;
  j["only_in_b"] = c.only_b;
  j["notes"] = c.notes;
  return j;
}

}  // namespace p2pscope::compare
