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

}  // namespace

std::string monitor_timelines(const Campaign& c) {
  struct Group {
    std::string kind, key;
    std::map<std::string, charts::Series> by_source;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  double t0 = INFINITY, t1 = -INFINITY;
  for (const auto& m : c.monitor) t0 = std::min(t0, m.time_s), t1 = std::max(t1, m.time_s);
  // One sampling time (a run shorter than the monitor's interval): no line anywhere, so
  // one sentence instead of a dozen charts with axes around a single point.
  if (!(t1 > t0))
    return "<p class=\"note\">monitor.csv holds one sample per source (the run was shorter than the monitor's "
           "interval): nothing to draw over time; the values are in monitor.csv.</p>\n";
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
  for (const Group* g : ordered) {
    if (shown == kMaxCharts) break;
    std::vector<const charts::Series*> lines;
    bool any_line = false;
    for (const auto& [src, s] : g->by_source) lines.push_back(&s), any_line = any_line || s.x.size() > 1;
    if (!any_line) {
      flat.push_back(g->kind + " " + g->key);
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
  if (ordered.size() > shown + flat.size())
    o += fmt::format("<p class=\"note\">{} more groups in monitor.csv are not drawn.</p>\n", ordered.size() - shown - flat.size());
  return o;
}

}  // namespace p2pscope::analyze
