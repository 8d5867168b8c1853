// compare (p2pscope/compare.hpp): matching two results point by point, the verdict per
// point and per subject, and the verdict lines, one per pattern of change (renderings:
// compare_text.cpp, compare_html.cpp).
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

#include "analyze/compare_parts.hpp"
#include "p2pscope/compare.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
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

std::string plural(const Loaded& l, std::size_t n) { return std::string(subject_noun(l.kind)) + (n == 1 ? "" : "s"); }

// bench nccl: an op of both sides must be one setup (a time or busbw of 2 ranks is
// another quantity than of 4, and of float another than of half); ops of one side only
// and another machine are said.
void check_nccl(const Loaded& a, const Loaded& b, std::vector<std::string>& notes) {
  std::vector<std::string> only_a, only_b, both;
  for (const auto& sa : a.setups) {
    const auto sb = std::find_if(b.setups.begin(), b.setups.end(), [&](const OpSetup& o) { return o.op == sa.op; });
    if (sb == b.setups.end()) {
      only_a.push_back(sa.op);
    } else if (sb->ranks != sa.ranks || sb->dtype != sa.dtype) {
      throw UsageError(
          fmt::format("'{}' ran {} and '{}' {}: a time or busbw of another rank count or dtype is another "
                      "quantity; compare runs of one setup",
                      a.path, setup_text(sa), b.path, setup_text(*sb)));
    } else {
      both.push_back(sa.op);
    }
  }
  for (const auto& sb : b.setups)
    if (std::none_of(a.setups.begin(), a.setups.end(), [&](const OpSetup& o) { return o.op == sb.op; }))
      only_b.push_back(sb.op);
  if (both.empty())
    throw UsageError(fmt::format("'{}' measured {} and '{}' {}: no op in common; compare runs of one op", a.path,
                                 join(only_a), b.path, join(only_b)));
  if (!only_a.empty()) notes.push_back(fmt::format("{} only in A: left out", join(only_a)));
  if (!only_b.empty()) notes.push_back(fmt::format("{} only in B: left out", join(only_b)));
  if (a.machine != b.machine)
    notes.push_back(fmt::format("A ran on {}, B on {}: a change may be the machine's", a.machine, b.machine));
}

void check_kinds(const Loaded& a, const Loaded& b, double threshold_pct) {
  if (a.kind != b.kind)
    throw UsageError(fmt::format("'{}' is {} and '{}' is {}: compare takes two results of the same kind", a.path,
                                 kind_text(a.kind), b.path, kind_text(b.kind)));
  if (a.mode != b.mode && a.kind == Kind::survey)
    throw UsageError(
        fmt::format("'{}' is a survey of {} and '{}' of {}: not the same cluster; compare two surveys of "
                    "one set of hosts and rails over one transport",
                    a.path, a.mode, b.path, b.mode));
  if (a.mode != b.mode)
    throw UsageError(
        fmt::format("'{}' measured pattern {} and '{}' pattern {}: not the same quantity; compare two runs "
                    "of one pattern",
                    a.path, a.mode, b.path, b.mode));
  if (!(threshold_pct >= 0) || !std::isfinite(threshold_pct))
    throw UsageError("--threshold is a percentage, 0 or more (e.g. 5)");
}

// One matched point: the change, and whether it is beyond the noise. The figures'
// own intervals where both sides have several figures; else, for bench nccl, each
// run's event pass, whose intervals must lie apart in the direction the figures moved.
Row judge(const Loaded& a, const Point& pa, const Point& pb, double threshold_pct) {
  Row r;
  r.backend_a = pa.backend;
  r.backend_b = pb.backend;
  r.subject = pa.subject;
  r.size_bytes = pa.size_bytes;
  r.a = pa;
  r.b = pb;
  r.delta_pct = pa.median != 0 ? (pb.median - pa.median) / pa.median * 100 : 0;
  r.has_rate = pa.rate > 0 && pb.rate > 0;
  if (r.has_rate) r.rate_delta_pct = (pb.rate - pa.rate) / pa.rate * 100;
  const bool figures = pa.level > 0 && pb.level > 0;
  r.by_events = !figures && pa.ev_level > 0 && pb.ev_level > 0;
  const bool intervals = figures || r.by_events;
  if (figures) r.beyond_noise = pb.lo > pa.hi || pb.hi < pa.lo;
  if (r.by_events)
    r.beyond_noise = (pb.ev_lo > pa.ev_hi && pb.median > pa.median) || (pb.ev_hi < pa.ev_lo && pb.median < pa.median);
  r.beyond_threshold = std::abs(r.delta_pct) >= threshold_pct;
  r.worse = a.higher_is_better ? r.delta_pct < 0 : r.delta_pct > 0;
  r.verdict = !intervals            ? "no interval"
              : !r.beyond_noise     ? "within noise"
              : !r.beyond_threshold ? "below threshold"
              : r.worse             ? "slower"
                                    : "faster";
  return r;
}

std::string pct_text(double level) {
  const std::string s = fmt::format("{:.1f}", level * 100);
  return s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0 ? s.substr(0, s.size() - 2) : s;
}

// The levels the intervals used have ("75 %", "50-75 %") and what they are of.
void describe_noise(Comparison& c) {
  std::set<double> levels;
  std::size_t figures = 0, events = 0, n_lo = SIZE_MAX, n_hi = 0, ev_n = 0;
  for (const auto& r : c.rows) {
    if (r.verdict == "no interval") continue;
    for (const Point* p : {&r.a, &r.b}) {
      levels.insert(std::round((r.by_events ? p->ev_level : p->level) * 1000) / 1000);
      n_lo = std::min(n_lo, r.by_events ? p->ev_n : p->n);
      n_hi = std::max(n_hi, r.by_events ? p->ev_n : p->n);
      ev_n = std::max(ev_n, p->ev_n);
    }
    (r.by_events ? events : figures)++;
  }
  if (levels.empty()) return;
  c.levels = levels.size() == 1 ? pct_text(*levels.begin()) + " %"
                                : fmt::format("{}-{} %", pct_text(*levels.begin()), pct_text(*levels.rbegin()));
  const std::string n = n_lo == n_hi ? fmt::format("n = {}", n_lo) : fmt::format("n = {}-{}", n_lo, n_hi);
  if (events == 0) {
    c.noise = c.a.kind == Kind::bench_nccl ? fmt::format("of each point's figures over a side's runs and spans, {}", n)
                                           : fmt::format("of each point's samples, {}", n);
  } else if (figures == 0) {
    c.noise = fmt::format(
        "of each run's per-iteration event pass, {}; one figure a side, so they hold each run's own "
        "noise, not how runs differ: give several runs a side (A1 A2 A3 vs B1 B2 B3) for that",
        n);
  } else {
    c.noise = fmt::format("of the figures where both sides have several, else of the runs' event passes, {}", n);
  }
}

std::string range_text(double lo, double hi) {
  return lo == hi ? fmt::format("{:+.1f} %", lo) : fmt::format("{:+.1f} to {:+.1f} %", lo, hi);
}

std::string sizes_text(const std::vector<std::uint64_t>& sizes) {
  return join(sizes, ", ", [](std::uint64_t s) { return format_size(s); });
}

// One pattern's line: who (all N pairs, one op, K pairs named), which way at which
// sizes, and the range of the change of every figure (time, and busbw beside it).
std::string pattern_line(const Comparison& c, const std::vector<const SubjectSummary*>& group) {
  const SubjectSummary& s = *group.front();
  const std::string noun = subject_noun(c.a.kind);
  std::vector<std::string> names;
  for (const auto* g : group) names.push_back(subject_text(c, *g));
  std::string who =
      group.size() == 1 ? names.front()
      : group.size() == c.subjects.size()
          ? fmt::format("all {} {}s", group.size(), noun)
          : fmt::format("{} {}s ({}{})", group.size(), noun,
                        join(std::vector<std::string>(
                            names.begin(),
                            names.begin() + std::min<std::ptrdiff_t>(6, static_cast<std::ptrdiff_t>(names.size())))),
                        names.size() > 6 ? ", ..." : "");
  const bool sized = c.rows.front().size_bytes != 0;
  std::string how;
  if (s.slower_sizes.empty() || s.faster_sizes.empty()) {
    const auto& sizes = s.slower_sizes.empty() ? s.faster_sizes : s.slower_sizes;
    how = s.slower_sizes.empty() ? "faster" : "slower";
    if (sized)
      how += sizes.size() == s.sizes ? (s.sizes == 1 ? " at its one size" : fmt::format(" at every size ({})", s.sizes))
                                     : fmt::format(" at {} ({} of {} sizes)", sizes_text(sizes), sizes.size(), s.sizes);
  } else {
    how = sized ? fmt::format("mixed: slower at {}, faster at {} (of {} sizes)", sizes_text(s.slower_sizes),
                              sizes_text(s.faster_sizes), s.sizes)
                : "mixed";
  }
  double lo = INFINITY, hi = -INFINITY, rlo = INFINITY, rhi = -INFINITY;
  bool rates = true;
  for (const auto& r : c.rows) {
    if ((r.verdict != "slower" && r.verdict != "faster") ||
        std::none_of(group.begin(), group.end(),
                     [&](const SubjectSummary* g) { return g->backend == r.backend_a && g->subject == r.subject; }))
      continue;
    lo = std::min(lo, r.delta_pct);
    hi = std::max(hi, r.delta_pct);
    rates = rates && r.has_rate;
    if (r.has_rate) rlo = std::min(rlo, r.rate_delta_pct), rhi = std::max(rhi, r.rate_delta_pct);
  }
  const std::string quantity = c.a.unit == "ns" ? "time" : c.a.unit;
  return fmt::format("{} {}: {} {}{}", who, how, quantity, range_text(lo, hi),
                     rates ? ", busbw " + range_text(rlo, rhi) : "");
}

// The verdict: a headline, then one line per pattern of change (the same sizes changed
// the same way), then the unchanged subjects.
void write_verdict(Comparison& c) {
  std::vector<std::pair<std::tuple<std::vector<std::uint64_t>, std::vector<std::uint64_t>, std::size_t, bool, bool>,
                        std::vector<const SubjectSummary*>>>
      groups;
  std::vector<std::string> unchanged;
  for (const auto& s : c.subjects) {
    if (s.slower + s.faster == 0) {
      unchanged.push_back(subject_text(c, s));
      continue;
    }
    const auto key = std::make_tuple(s.slower_sizes, s.faster_sizes, s.sizes, s.slower > 0, s.faster > 0);
    const auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) groups.push_back({key, {&s}});
    else it->second.push_back(&s);
  }
  const std::size_t n = c.subjects.size(), changed = n - unchanged.size();
  const bool events = std::all_of(c.rows.begin(), c.rows.end(),
                                  [](const Row& r) { return r.by_events || r.verdict == "no interval"; }) &&
                      std::any_of(c.rows.begin(), c.rows.end(), [](const Row& r) { return r.by_events; });
  const std::string rule =
      fmt::format("beyond {} {}intervals and at least {:g} %", events ? "each run's own" : "both sides'",
                  c.levels.empty() ? "" : c.levels + " ", c.threshold_pct);
  if (std::all_of(c.rows.begin(), c.rows.end(), [](const Row& r) { return r.verdict == "no interval"; })) {
    c.verdict = fmt::format("no verdict: none of the {} points compared has an interval on both sides (see the notes)",
                            c.rows.size());
    return;
  }
  if (changed == 0) {
    c.verdict = fmt::format("no change {}: {} {}, {} points compared", rule, n, plural(c.a, n), c.rows.size());
    return;
  }
  c.verdict = fmt::format("{} of {} {} changed, {}", changed, n, plural(c.a, n), rule);
  for (const auto& g : groups) c.patterns.push_back(pattern_line(c, g.second));
  if (unchanged.size() == 1) c.patterns.push_back(unchanged.front() + " unchanged");
  if (unchanged.size() > 1)
    c.patterns.push_back(fmt::format("the other {} {} unchanged{}", unchanged.size(), plural(c.a, unchanged.size()),
                                     unchanged.size() <= 6 ? " (" + join(unchanged) + ")" : ""));
}

void summarize(Comparison& c) {
  std::size_t no_interval = 0, uneven = 0;
  for (const auto& r : c.rows) {
    no_interval += r.verdict == "no interval";
    uneven += r.verdict == "no interval" && (r.a.level > 0) != (r.b.level > 0);
    if (c.subjects.empty() || c.subjects.back().backend != r.backend_a || c.subjects.back().subject != r.subject)
      c.subjects.push_back({r.backend_a, r.subject});
    auto& s = c.subjects.back();
    ++s.sizes;
    if (r.verdict != "slower" && r.verdict != "faster") continue;
    const bool first = s.slower + s.faster == 0;
    (r.verdict == "slower" ? s.slower : s.faster)++;
    (r.verdict == "slower" ? s.slower_sizes : s.faster_sizes).push_back(r.size_bytes);
    s.min_delta_pct = first ? r.delta_pct : std::min(s.min_delta_pct, r.delta_pct);
    s.max_delta_pct = first ? r.delta_pct : std::max(s.max_delta_pct, r.delta_pct);
  }
  if (uneven && c.a.kind == Kind::bench_nccl)
    c.notes.push_back(
        fmt::format("{} points have several figures on one side and one on the other: no interval to "
                    "judge both by, so no verdict (give both sides several runs, or one each)",
                    uneven));
  else if (no_interval && c.a.kind == Kind::bench_nccl)
    c.notes.push_back(
        fmt::format("{} points have one figure a side and no event pass beside it: no interval, so no "
                    "verdict (several runs a side, or --spans 3, give one)",
                    no_interval));
  else if (no_interval)
    c.notes.push_back(
        fmt::format("{} points have a single sample on one side: no interval, so no verdict (more "
                    "repetitions give one)",
                    no_interval));
  const auto some = [](const std::vector<std::string>& v) {
    return join(std::vector<std::string>(
               v.begin(), v.begin() + std::min<std::ptrdiff_t>(4, static_cast<std::ptrdiff_t>(v.size())))) +
           (v.size() > 4 ? ", ..." : "");
  };
  if (!c.only_a.empty() || !c.only_b.empty())
    c.notes.push_back(fmt::format("{} points only in A{}, {} only in B{}: left out", c.only_a.size(),
                                  c.only_a.empty() ? "" : " (" + some(c.only_a) + ")", c.only_b.size(),
                                  c.only_b.empty() ? "" : " (" + some(c.only_b) + ")"));
}

}  // namespace

const char* subject_noun(Kind k) {
  return k == Kind::sweep_tcp ? "point" : k == Kind::bench_nccl ? "op" : k == Kind::survey ? "link" : "pair";
}

std::size_t Comparison::changed() const {
  return static_cast<std::size_t>(std::count_if(
      rows.begin(), rows.end(), [](const Row& r) { return r.verdict == "slower" || r.verdict == "faster"; }));
}

Comparison compare(const Loaded& a, const Loaded& b, double threshold_pct) {
  check_kinds(a, b, threshold_pct);
  Comparison c;
  c.a = a;
  c.b = b;
  c.threshold_pct = threshold_pct;
  // What loading noted, each once: "... passed over (in 6 files)".
  std::vector<std::pair<std::string, int>> loaded;
  for (const auto* side : {&a, &b})
    for (const auto& n : side->notes) {
      const auto it = std::find_if(loaded.begin(), loaded.end(), [&](const auto& x) { return x.first == n; });
      if (it == loaded.end()) loaded.push_back({n, 1});
      else ++it->second;
    }
  for (const auto& [n, k] : loaded) c.notes.push_back(k > 1 ? fmt::format("{} (in {} files)", n, k) : n);
  if (a.kind == Kind::bench_nccl) check_nccl(a, b, c.notes);
  // One backend each, but not the same one (ce against sm): the pairs are what is compared.
  const auto ba = backends_of(a), bb = backends_of(b);
  const bool across_backends = ba.size() == 1 && bb.size() == 1 && ba != bb;
  if (across_backends)
    c.notes.push_back(
        fmt::format("A ran backend {}, B backend {}: points matched by pair and size", *ba.begin(), *bb.begin()));
  const auto key = [&](const Point& p) { return Key{across_backends ? "" : p.backend, p.subject, p.size_bytes}; };
  std::map<Key, const Point*> in_b;
  for (const auto& p : b.points) in_b[key(p)] = &p;
  std::set<Key> matched;
  // bench nccl: an op of one side only is said once (check_nccl), not size by size.
  const auto has_op = [&](const Loaded& l, const std::string& op) {
    return a.kind != Kind::bench_nccl ||
           std::any_of(l.setups.begin(), l.setups.end(), [&](const OpSetup& s) { return s.op == op; });
  };
  for (const auto& pa : a.points) {
    const auto it = in_b.find(key(pa));
    if (it == in_b.end()) {
      if (has_op(b, pa.subject)) c.only_a.push_back(point_name(pa));
      continue;
    }
    matched.insert(it->first);
    c.rows.push_back(judge(a, pa, *it->second, threshold_pct));
  }
  for (const auto& pb : b.points)
    if (!matched.count(key(pb)) && has_op(a, pb.subject)) c.only_b.push_back(point_name(pb));
  if (c.rows.empty())
    throw UsageError(fmt::format(
        "'{}' and '{}' have no point in common (A: {} points, e.g. {}; B: {}, e.g. {}): "
        "compare runs of the same pairs and sizes",
        a.path, b.path, a.points.size(), point_name(a.points.front()), b.points.size(), point_name(b.points.front())));
  std::sort(c.rows.begin(), c.rows.end(), [](const Row& x, const Row& y) {
    return std::make_tuple(x.backend_a, subject_order(x.subject), x.size_bytes) <
           std::make_tuple(y.backend_a, subject_order(y.subject), y.size_bytes);
  });
  summarize(c);
  describe_noise(c);
  write_verdict(c);
  return c;
}

// The backend is named only where A holds several (ce and staged in one campaign).
std::string subject_text(const Comparison& c, const SubjectSummary& s) {
  const bool several = std::any_of(c.subjects.begin(), c.subjects.end(),
                                   [&](const SubjectSummary& x) { return x.backend != c.subjects.front().backend; });
  return several && !s.backend.empty() ? s.backend + " " + s.subject : s.subject;
}

}  // namespace p2pscope::compare
