// Timelines of monitor.csv (src/monitor's long format time_ns,source,key,value) for
// report.html. A big machine writes hundreds of series (one per CPU, IRQ, thread), so
// series are grouped by source kind and key (cpu*/softirq_pct, nic:*/rx_bytes_per_s,
// gpu*/temperature_c...), one chart per group, the few busiest sources drawn.
#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::analyze {
namespace {

constexpr std::size_t kMaxCharts = 12;
constexpr std::size_t kMaxLines = 6;

// "cpu12" -> "cpu", "nic:eth0" -> "nic", "thread:4242:nccl" -> "thread", "gpu3" -> "gpu".
std::string source_kind(const std::string& source) {
  const auto colon = source.find(':');
  if (colon != std::string::npos) return source.substr(0, colon);
  std::string k = source;
  while (!k.empty() && std::isdigit(static_cast<unsigned char>(k.back()))) k.pop_back();
  return k.empty() ? source : k;
}

// Charts first for the keys that explain a transfer; the rest follow by name.
int priority(const std::string& kind, const std::string& key) {
  static const std::vector<std::pair<const char*, const char*>> order = {
      {"gpu", "temperature_c"},    {"gpu", "power_w"},          {"gpu", "sm_clock_mhz"},   {"gpu", "utilization_pct"},
      {"gpu", "pcie_tx_kbps"},     {"gpu", "pcie_rx_kbps"},     {"nic", "rx_bytes_per_s"}, {"nic", "tx_bytes_per_s"},
      {"nic", "irq_per_s"},        {"cpu", "busy_pct"},         {"cpu", "softirq_pct"},    {"irq", "per_s"},
      {"thread", "cpu_pct"},       {"cpu", "system_pct"},       {"cpu", "user_pct"}};
  for (std::size_t i = 0; i < order.size(); ++i)
    if (kind == order[i].first && key == order[i].second) return static_cast<int>(i);
  return static_cast<int>(order.size());
}

charts::Format format_of(const std::string& key) {
  if (key.find("bytes_per_s") != std::string::npos) return charts::Format::bytes_per_s;
  return charts::Format::number;
}

// One chart's worth of monitor.csv: a kind of source and a key, a series per source.
struct MonitorGroup {
  std::string kind, key;
  std::map<std::string, charts::Series> by_source;
};
using MonitorGroups = std::map<std::pair<std::string, std::string>, MonitorGroup>;

// The samples worth a chart, grouped by source kind and key, time from t0.
MonitorGroups group_monitor_samples(const Campaign& c, double t0) {
  MonitorGroups groups;
  for (const auto& m : c.monitor) {
    if (m.source == "note" || m.key == "throttle_reasons" || m.key == "last_cpu") continue;
    std::string key = m.key;
    double value = m.value;
    if (key == "idle_pct") {  // drawn as busy: the busiest CPUs are the interesting ones
      key = "busy_pct";
      value = 100 - value;
    } else if (source_kind(m.source) == "cpu" && key.size() > 4 && key.compare(key.size() - 4, 4, "_pct") == 0 &&
               key != "softirq_pct" && key != "system_pct" && key != "user_pct") {
      continue;  // irq_pct and the like: in monitor.csv, not worth a chart each
    }
    auto& g = groups[{source_kind(m.source), key}];
    g.kind = source_kind(m.source);
    g.key = key;
    auto& s = g.by_source[m.source];
    s.name = m.source;
    s.markers = false;
    s.x.push_back(m.time_s - t0);
    s.y.push_back(value);
  }
  return groups;
}

void colour_by_source(MonitorGroups& groups) {
  // One colour per source in every chart (gpu2 is the same colour in the temperature
  // and the power chart), whatever its rank by peak: its place among the sources of its
  // kind, by name, in the colour-blind-safe palette.
  std::map<std::string, std::map<std::string, std::size_t>> colour_index;
  for (auto& [k, g] : groups)
    for (auto& [src, series] : g.by_source) colour_index[g.kind].emplace(src, 0);
  for (auto& [kind, sources] : colour_index) {
    std::size_t i = 0;
    for (auto& [src, index] : sources) index = i++;
  }
  for (auto& [k, g] : groups)
    for (auto& [src, series] : g.by_source) series.color = charts::palette(colour_index[g.kind][src]);
}

}  // namespace

std::string monitor_timelines(const Campaign& c) {
  using Group = MonitorGroup;
  double t0 = INFINITY, t1 = -INFINITY;
  for (const auto& m : c.monitor) t0 = std::min(t0, m.time_s), t1 = std::max(t1, m.time_s);
  // One sampling time (a run shorter than the monitor's interval): no line anywhere, so
  // one sentence instead of a dozen charts with axes around a single point.
  if (!(t1 > t0))
    return "<p class=\"note\">monitor.csv holds one sample per source (the run was shorter than the monitor's "
           "interval): nothing to draw over time; the values are in monitor.csv.</p>\n";
  MonitorGroups groups = group_monitor_samples(c, t0);
  colour_by_source(groups);
  std::vector<Group*> ordered;
  for (auto& [k, g] : groups) ordered.push_back(&g);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Group* a, const Group* b) { return priority(a->kind, a->key) < priority(b->kind, b->key); });
  std::string o =
      "<p class=\"note\">From monitor.csv (time axis: seconds since its first sample). One chart per kind of "
      "source and key; at most " +
      std::to_string(kMaxLines) + " sources each, those with the highest peak.</p>\n<div class=\"charts\">";
  std::size_t shown = 0;
  std::vector<std::string> flat;  // groups with one point per source: named in one line, not charted
  // Sources whose value never moved (an idle NIC: a flat line at 0 on a 0..1 B/s axis)
  // are said in words, per group; a group with nothing that moved gets no chart.
  std::vector<std::string> still;
  std::size_t still_groups = 0;  // groups in `still` alone, with no chart
  for (const Group* g : ordered) {
    if (shown == kMaxCharts) break;
    std::vector<const charts::Series*> lines;
    bool any_line = false;
    std::vector<std::string> idle, constant;
    for (const auto& [src, s] : g->by_source) {
      any_line = any_line || s.x.size() > 1;
      const auto [lo, hi] = std::minmax_element(s.y.begin(), s.y.end());
      if (s.x.size() > 1 && *lo == *hi) {
        if (*lo == 0 && format_of(g->key) == charts::Format::bytes_per_s) idle.push_back(src);
        else constant.push_back(fmt::format("{} at {}", src, charts::format_value(*lo, format_of(g->key))));
        continue;
      }
      lines.push_back(&s);
    }
    if (!any_line) {
      flat.push_back(g->kind + " " + g->key);
      continue;
    }
    if (!idle.empty() || !constant.empty()) {
      std::string what = g->kind + " " + g->key + ": ";
      if (!idle.empty()) what += "no traffic on " + join(idle);
      if (!constant.empty()) what += (idle.empty() ? "" : "; ") + join(constant) + " throughout";
      still.push_back(what);
    }
    if (lines.empty()) {
      ++still_groups;
      continue;
    }
    auto peak = [](const charts::Series* s) { return *std::max_element(s->y.begin(), s->y.end()); };
    std::stable_sort(lines.begin(), lines.end(), [&](const auto* a, const auto* b) { return peak(a) > peak(b); });
    const std::size_t hidden = lines.size() > kMaxLines ? lines.size() - kMaxLines : 0;
    lines.resize(std::min(lines.size(), kMaxLines));
    std::string title = g->kind + " " + g->key;
    if (hidden) title += fmt::format(" (top {} of {})", lines.size(), lines.size() + hidden);
    charts::LineChart ch{title, {"time", false, charts::Format::seconds}, {g->key, false, format_of(g->key)}, {}, 560, 300, true};
    for (const auto* s : lines) ch.series.push_back(*s);
    o += charts::render_line_chart(ch);
    ++shown;
  }
  o += "</div>\n";
  if (!flat.empty()) {
    const std::string names = join(flat);
    o += fmt::format("<p class=\"note\">Not drawn, one interval each (the run was shorter than two of the monitor's "
                     "intervals): {}; their values are in monitor.csv.</p>\n", charts::xml_escape(names));
  }
  if (!still.empty())
    o += fmt::format("<p class=\"note\">Not drawn, never moved during the run: {}.</p>\n",
                     charts::xml_escape(join(still, "; ")));
  const std::size_t drawn_or_named = shown + flat.size() + still_groups;
  if (ordered.size() > drawn_or_named)
    o += fmt::format("<p class=\"note\">{} more groups in monitor.csv are not drawn.</p>\n", ordered.size() - drawn_or_named);
  return o;
}

}  // namespace p2pscope::analyze
