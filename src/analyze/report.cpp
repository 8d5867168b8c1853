// report.html: one self-contained page (inline SVG, inline CSS, no scripts) with the
// curves, matrices, timelines, fitted models and the findings and link-model tables.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "analyze/conclusions.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::analyze {
namespace {
using charts::Format;
using charts::xml_escape;

std::string pair_name(const LinkModel& m, bool with_backend) {
  return (with_backend ? m.backend + " " : "") + fmt::format("{}->{} {}", m.src, m.dst, m.link_class);
}

// One colour per link: a class colour made every link of a class one line of one
// colour, and the links of a class are the ones a reader compares. Up to 12 links take
// the palette; more take evenly spaced hues, lightness alternating.
std::string link_color(std::size_t i, std::size_t n) {
  if (n <= 12) return charts::palette(i);
  return fmt::format("hsl({:.0f},70%,{}%)", 360.0 * static_cast<double>(i) / static_cast<double>(n), i % 2 ? 32 : 48);
}

std::map<std::tuple<std::string, int, int>, std::string> link_colors(const std::vector<LinkModel>& links) {
  std::map<std::tuple<std::string, int, int>, std::string> out;
  for (std::size_t i = 0; i < links.size(); ++i)
    out[{links[i].backend, links[i].src, links[i].dst}] = link_color(i, links.size());
  return out;
}

// Each section's id is its first word in lower case (#matrices, #findings): the
// conclusions link to them.
std::string section(const std::string& title, const std::string& body) {
  std::string id;
  for (char c : title.substr(0, title.find(' '))) id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "<h2 id=\"" + xml_escape(id) + "\">" + xml_escape(title) + "</h2>\n" + body;
}

std::string curves(const std::vector<LinkModel>& links, bool multi_backend) {
  const auto colors = link_colors(links);
  charts::LineChart bw{"Bandwidth vs message size (median)", {"message size", true, Format::size_bytes},
                       {"bandwidth", true, Format::bytes_per_s}, {}, 640, 440, true};
  charts::LineChart lat{"Latency vs message size (median time per op)", {"message size", true, Format::size_bytes},
                        {"time", true, Format::duration_ns}, {}, 640, 440, true};
  for (const auto& m : links) {
    const std::string& color = colors.at({m.backend, m.src, m.dst});
    bw.series.push_back({pair_name(m, multi_backend), color, m.sizes, m.bytes_per_s, true, true, false});
    lat.series.push_back({pair_name(m, multi_backend), color, m.sizes, m.median_ns, true, true, false});
  }
  return "<p class=\"note\">One colour per link; each name ends with its link class.</p>\n<div class=\"charts\">" +
         charts::render_line_chart(bw) + charts::render_line_chart(lat) + "</div>\n";
}

std::string fitted_models(const std::vector<LinkModel>& links, bool multi_backend) {
  std::string o = "<p class=\"note\">Markers: measured medians. Solid line: alpha-beta fit t(n) = alpha + n/beta. "
                  "Dashed: two- or three-regime model, drawn where it is recommended.</p>\n<div class=\"charts\">";
  for (const auto& m : links) {
    charts::LineChart c{"Model " + pair_name(m, multi_backend), {"message size", true, Format::size_bytes},
                        {"time", true, Format::duration_ns}, {}, 520, 300, true};
    c.series.push_back({"measured", charts::palette(0), m.sizes, m.median_ns, false, true, false});
    if (m.fit.ok) {
      std::vector<double> y;
      for (double n : m.sizes) y.push_back(m.fit.predict_ns(n));
      c.series.push_back({"alpha-beta", charts::palette(3), m.sizes, y, true, false, false});
    }
    if (m.model != "alpha_beta") {
      std::vector<double> y;
      for (double n : m.sizes) y.push_back(m.predict_ns(n));
      c.series.push_back({m.model == "two_regime" ? "two-regime" : "three-regime", charts::palette(2), m.sizes, y, true,
                          false, true});
    }
    o += charts::render_line_chart(c);
  }
  return o + "</div>\n";
}

// The median's 95% confidence interval from order statistics (no distribution
// assumed): ranks n/2 -+ 0.98 sqrt(n), clamped to the samples.
std::pair<double, double> median_interval(std::vector<double> v) {
  if (v.empty()) return {NAN, NAN};
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size()), h = 0.98 * std::sqrt(n);
  const auto rank = [&](double r) { return v[static_cast<std::size_t>(std::clamp(r, 0.0, n - 1))]; };
  return {rank(std::floor(n / 2 - h) - 1), rank(std::ceil(n / 2 + h))};
}

struct Cells {
  std::vector<std::vector<double>> value, lo, hi;
};

std::string matrices(const std::vector<LinkModel>& links, const std::vector<ConfigSummary>& s) {
  std::map<std::string, std::vector<const LinkModel*>> by_backend;
  for (const auto& m : links) by_backend[m.backend].push_back(&m);
  std::map<std::tuple<std::string, int, int, double>, const ConfigSummary*> config;
  for (const auto& cs : s) config[{cs.backend, cs.src, cs.dst, static_cast<double>(cs.size_bytes)}] = &cs;
  std::string o = "<p class=\"note\">A cell is coloured only where its median's 95% interval (order statistics of "
                  "the repetitions) and the typical cell's do not overlap; white cells are within the noise.</p>\n"
                  "<div class=\"charts\">";
  for (const auto& [backend, ms] : by_backend) {
    std::set<int> devs;
    for (const auto* m : ms) devs.insert(m->src), devs.insert(m->dst);
    std::vector<int> d(devs.begin(), devs.end());
    std::vector<std::string> labels;
    for (int x : d) labels.push_back(std::to_string(x));
    const std::size_t n = d.size();
    const std::vector<std::vector<double>> empty(n, std::vector<double>(n, NAN));
    Cells bw{empty, empty, empty}, lat{empty, empty, empty};
    double largest = 0, smallest = INFINITY;
    for (const auto* m : ms) {
      const auto i = static_cast<std::size_t>(std::find(d.begin(), d.end(), m->src) - d.begin());
      const auto j = static_cast<std::size_t>(std::find(d.begin(), d.end(), m->dst) - d.begin());
      bw.value[i][j] = m->bytes_per_s.back();
      lat.value[i][j] = m->latency_floor_ns;
      if (const auto it = config.find({backend, m->src, m->dst, m->sizes.back()}); it != config.end()) {
        const auto [t_lo, t_hi] = median_interval(it->second->kept);
        bw.lo[i][j] = m->sizes.back() / t_hi * 1e9;  // the slow end of the time is the low bandwidth
        bw.hi[i][j] = m->sizes.back() / t_lo * 1e9;
      }
      if (const auto it = config.find({backend, m->src, m->dst, m->sizes.front()}); it != config.end())
        std::tie(lat.lo[i][j], lat.hi[i][j]) = median_interval(it->second->kept);
      largest = std::max(largest, m->sizes.back());
      smallest = std::min(smallest, m->sizes.front());
    }
    charts::Heatmap hb{fmt::format("{}: bandwidth at {}", backend, format_size(static_cast<std::uint64_t>(largest))),
                       "src", "dst", labels, labels, bw.value, Format::bytes_per_s, true, 80, bw.lo, bw.hi};
    charts::Heatmap hl{fmt::format("{}: latency at {}", backend, format_size(static_cast<std::uint64_t>(smallest))),
                       "src", "dst", labels, labels, lat.value, Format::duration_ns, false, 80, lat.lo, lat.hi};
    o += charts::render_heatmap(hb) + charts::render_heatmap(hl);
  }
  return o + "</div>\n";
}

std::string cv_chart(const std::vector<ConfigSummary>& s, const std::vector<LinkModel>& links, bool multi_backend) {
  const auto colors = link_colors(links);
  charts::LineChart c{"Coefficient of variation by size (after outlier removal; 5% line dashed)",
                      {"message size", true, Format::size_bytes}, {"CV", false, Format::percent}, {}, 640, 400, true};
  std::map<std::tuple<std::string, int, int>, std::size_t> idx;
  double lo = INFINITY, hi = 0;
  for (const auto& cs : s) {
    const auto k = std::make_tuple(cs.backend, cs.src, cs.dst);
    if (!idx.count(k)) {
      idx[k] = c.series.size();
      const auto it = std::find_if(links.begin(), links.end(), [&](const LinkModel& m) {
        return m.backend == cs.backend && m.src == cs.src && m.dst == cs.dst;
      });
      const std::string name = it != links.end() ? pair_name(*it, multi_backend) : fmt::format("{}->{}", cs.src, cs.dst);
      c.series.push_back({name, it != links.end() ? colors.at(k) : "", {}, {}, true, true, false});
    }
    auto& ser = c.series[idx[k]];
    ser.x.push_back(static_cast<double>(cs.size_bytes));
    ser.y.push_back(cs.stats.cv * 100);
    lo = std::min(lo, static_cast<double>(cs.size_bytes));
    hi = std::max(hi, static_cast<double>(cs.size_bytes));
  }
  if (std::isfinite(lo)) c.series.push_back({"5% limit", "#c00", {lo, hi}, {5, 5}, true, false, true});
  return "<div class=\"charts\">" + charts::render_line_chart(c) + "</div>\n";
}

std::string temperature_timelines(const Campaign& c) {
  if (c.temperatures.empty()) return "<p class=\"note\">No temperature samples (temperatures.csv absent or empty).</p>\n";
  std::int64_t t0 = c.temperatures.front().time_ns;
  for (const auto& t : c.temperatures) t0 = std::min(t0, t.time_ns);
  struct Metric { const char* title; const char* unit; double TempSample::*field; Format f; };
  const Metric metrics[] = {{"GPU temperature", "temperature (C)", &TempSample::temperature_c, Format::number},
                            {"GPU power", "power (W)", &TempSample::power_w, Format::number},
                            {"SM clock", "SM clock (MHz)", &TempSample::sm_clock_mhz, Format::number},
                            {"Memory clock", "memory clock (MHz)", &TempSample::mem_clock_mhz, Format::number}};
  std::string o = "<div class=\"charts\">";
  std::vector<std::string> still;  // metrics no GPU's value moved in: said, not drawn
  for (const auto& mt : metrics) {
    charts::LineChart ch{mt.title, {"time since first sample", false, Format::seconds}, {mt.unit, false, mt.f}, {}, 640, 320, true};
    std::map<int, std::size_t> idx;
    bool any = false;
    for (const auto& t : c.temperatures) {
      const double v = t.*(mt.field);
      if (!std::isfinite(v)) continue;
      if (!idx.count(t.gpu)) {
        idx[t.gpu] = ch.series.size();
        // GPU g has one colour in every chart, whichever GPUs a metric has.
        ch.series.push_back({fmt::format("GPU {}", t.gpu), charts::palette(static_cast<std::size_t>(std::max(0, t.gpu))),
                             {}, {}, true, false, false});
      }
      auto& s = ch.series[idx[t.gpu]];
      s.x.push_back(static_cast<double>(t.time_ns - t0) / 1e9);
      s.y.push_back(v);
      any = true;
    }
    if (!any) continue;
    bool moved = false;
    std::vector<std::string> values;
    for (const auto& s : ch.series) {
      const auto [lo, hi] = std::minmax_element(s.y.begin(), s.y.end());
      moved = moved || s.y.size() < 2 || *lo != *hi;
      values.push_back(fmt::format("{} at {}", s.name, charts::format_value(*lo, mt.f)));
    }
    if (moved) o += charts::render_line_chart(ch);
    else still.push_back(fmt::format("{}: {}", mt.title, join(values)));
  }
  o += "</div>\n";
  if (!still.empty())
    o += "<p class=\"note\">Not drawn, never moved during the run: " + xml_escape(join(still, "; ")) + ".</p>\n";
  return o;
}

// GPU timer against the host clock over the campaign, from each op's (gpu_ts_start_ns,
// ts_start_ns): the smallest offset per time bin (the op launched with the least delay),
// relative to the first bin. A steady slope is drift; a bend is drift that changed.
std::string clock_timeline(const Campaign& c) {
  // Offsets are differences of two clocks ~1e18 ns apart (GPU timer in Unix time,
  // host monotonic): subtract each GPU's first offset in integers before going to
  // double, which would round them to 256 ns.
  std::map<int, std::vector<std::pair<std::int64_t, double>>> by_gpu;  // host ts, offset change
  std::map<int, std::int64_t> ref;
  std::int64_t t0 = std::numeric_limits<std::int64_t>::max(), t1 = std::numeric_limits<std::int64_t>::min();
  for (const auto& op : c.ops) {
    if (op.gpu_ts_start_ns < 0 || op.ts_start_ns <= 0) continue;
    const std::int64_t off = op.gpu_ts_start_ns - op.ts_start_ns;
    const std::int64_t r0 = ref.emplace(op.src, off).first->second;
    by_gpu[op.src].push_back({op.ts_start_ns, static_cast<double>(off - r0)});
    t0 = std::min(t0, op.ts_start_ns);
    t1 = std::max(t1, op.ts_start_ns);
  }
  if (by_gpu.empty() || t1 <= t0) return "";
  // About 20 ops per bin (a minimum over fewer is still launch jitter), 4 to 60 bins.
  std::size_t fewest = std::numeric_limits<std::size_t>::max();
  for (const auto& [gpu, pts] : by_gpu) fewest = std::min(fewest, pts.size());
  const int kBins = static_cast<int>(std::clamp<std::size_t>(fewest / 20, 4, 60));
  const double bin_ns = static_cast<double>(t1 - t0) / kBins;
  charts::LineChart ch{"GPU clock against host clock (offset change; min per bin)", {"time since first op", false, Format::seconds},
                       {"offset change (ns)", false, Format::number}, {}, 640, 340, true};
  for (const auto& [gpu, pts] : by_gpu) {
    std::vector<double> lo(static_cast<std::size_t>(kBins) + 1, INFINITY);
    for (const auto& [ts, off] : pts) {
      auto& b = lo[static_cast<std::size_t>(static_cast<double>(ts - t0) / bin_ns)];
      b = std::min(b, off);
    }
    charts::Series ser{fmt::format("GPU {}", gpu), "", {}, {}, true, true, false};
    double first = NAN;
    for (int i = 0; i <= kBins; ++i) {
      if (!std::isfinite(lo[static_cast<std::size_t>(i)])) continue;
      if (std::isnan(first)) first = lo[static_cast<std::size_t>(i)];
      ser.x.push_back((i + 0.5) * bin_ns / 1e9);
      ser.y.push_back(lo[static_cast<std::size_t>(i)] - first);
    }
    ch.series.push_back(std::move(ser));
  }
  return charts::render_line_chart(ch);
}

std::string drift_table(const Campaign& c) {
  if (!c.drift.contains("devices") || !c.drift["devices"].is_array() || c.drift["devices"].empty()) return "";
  auto ppm = [](const nlohmann::json& d, const char* k) -> std::string {
    if (!d.contains(k) || !d[k].is_object() || !d[k].contains("ppm") || !d[k]["ppm"].is_number()) return "-";
    return fmt::format("{:+.3f}", d[k]["ppm"].get<double>());
  };
  std::vector<std::vector<std::string>> rows;
  for (const auto& d : c.drift["devices"]) {
    if (!d.is_object()) continue;
    const auto change = d.value("ppm_change", NAN);
    std::string unc = "-", causal = "-";
    // Since the clock map: the bound the ops were checked with; before it: the one line's.
    const char* line = d.contains("one_line_fit") ? "one_line_fit" : "campaign_fit";
    if (d.contains("causality") && d["causality"].is_object() && d["causality"].contains("offset_uncertainty_ns"))
      unc = fmt::format("+-{:.0f} ns", d["causality"].value("offset_uncertainty_ns", 0.0));
    else if (d.contains(line) && d[line].is_object() && d[line].contains("offset_uncertainty_ns"))
      unc = fmt::format("+-{:.0f} ns", d[line].value("offset_uncertainty_ns", 0.0));
    if (d.contains("causality") && d["causality"].is_object())
      causal = fmt::format("{} of {} ops", d["causality"].value("violations", 0), d["causality"].value("ops_checked", 0));
    rows.push_back({std::to_string(d.value("device", -1)), ppm(d, "start"), ppm(d, "end"),
                    std::isfinite(change) ? fmt::format("{:.3f}", change) : "-", ppm(d, line), unc, causal,
                    d.value("warning", std::string("-"))});
  }
  return "<p>Clock drift and alignment (clock_drift.json; ppm = (device rate / host rate - 1) x 1e6; a GPU time mapped "
         "to host time is within the offset bound; a causality violation is an op whose GPU interval leaves its host "
         "interval for every offset the sync allows):</p>\n" +
         charts::html::table({"GPU", "start ppm", "end ppm", "change", "one-line ppm", "offset bound", "causality violations",
                              "warning"}, rows);
}

// Rows with the warning tint; the table helper escapes cells, so rows are marked after.
std::string tinted_findings(const std::vector<std::vector<std::string>>& rows) {
  std::string t = charts::html::table({"severity", "kind", "subject", "finding"}, rows, "findings");
  std::string::size_type pos = 0;
  while ((pos = t.find("<tr><td>warning</td>", pos)) != std::string::npos) {
    t.replace(pos, 4, "<tr class=\"warning\">");
    pos += 20;
  }
  return t;
}

// "0->1 @ 4 KiB, 0->1 @ 8 KiB, ... and 9 more": the configs a group names.
std::string subjects(const KindGroup& g) {
  constexpr std::size_t kShown = 12;
  std::string out;
  for (std::size_t i = 0; i < g.members.size() && i < kShown; ++i) out += (i ? ", " : "") + g.members[i]->subject;
  if (g.members.size() > kShown) out += fmt::format(" and {} more", g.members.size() - kShown);
  return out;
}

std::string kind_table(const std::vector<KindGroup>& groups, bool measurement) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : groups) {
    if (g.about_measurement != measurement) continue;
    const std::string what = g.members.size() == 1 ? g.members[0]->message
                                                   : g.description + "; first: " + g.members[0]->message;
    rows.push_back({g.severity, g.kind, fmt::format("{}: {}", g.members.size(), subjects(g)), what});
  }
  if (rows.empty()) return "";
  std::string t = charts::html::table({"severity", "kind", "configs", "finding"}, rows, "findings");
  std::string::size_type pos = 0;
  while ((pos = t.find("<tr><td>warning</td>", pos)) != std::string::npos) {
    t.replace(pos, 4, "<tr class=\"warning\">");
    pos += 20;
  }
  return t;
}

// One row per kind with the configs it names, findings about the hardware first and
// those about the measurement (noise) apart; every finding in a fold below.
std::string findings_table(const std::vector<Finding>& f) {
  if (f.empty()) return "<p>No findings: every check passed.</p>\n";
  const auto groups = group_by_kind(f);
  std::string o;
  const std::string hw = kind_table(groups, false), meas = kind_table(groups, true);
  o += "<h3>About the hardware</h3>\n" + (hw.empty() ? "<p>None: no asymmetry, outlier, throttling or temperature "
                                                       "effect beyond the noise.</p>\n" : hw);
  if (!meas.empty())
    o += "<h3>About the measurement (noise, clocks, the log)</h3>\n<p class=\"note\">These say how far the numbers "
         "can be trusted, not what the hardware does; more --reps or a longer --min-sample-time narrow them.</p>\n" + meas;
  std::vector<std::vector<std::string>> all;
  for (const auto& x : f) all.push_back({x.severity, x.kind, x.subject, x.message});
  return o + "<details><summary>Every finding (" + std::to_string(f.size()) + ", findings.json)</summary>\n" +
         tinted_findings(all) + "</details>\n";
}

// The recommended model's error at every size, one column per link: where a model
// stops describing the link is visible at a glance.
std::string residual_table(const std::vector<LinkModel>& links) {
  std::vector<std::string> head{"size"};
  std::map<double, std::vector<std::string>> by_size;
  for (std::size_t l = 0; l < links.size(); ++l) {
    const auto& m = links[l];
    head.push_back(fmt::format("{} {}->{}", m.backend, m.src, m.dst));
    for (std::size_t i = 0; i < m.sizes.size(); ++i) {
      auto& row = by_size[m.sizes[i]];
      row.resize(links.size(), "-");
      if (m.fit.ok) row[l] = fmt::format("{:+.1f}%", 100 * m.residual(i));
    }
  }
  std::vector<std::vector<std::string>> rows;
  for (auto& [size, cells] : by_size) {
    cells.resize(links.size(), "-");
    std::vector<std::string> r{format_size(static_cast<std::uint64_t>(size))};
    r.insert(r.end(), cells.begin(), cells.end());
    rows.push_back(std::move(r));
  }
  return "<p>Model error per size: (model - measured) / measured, for the model each link recommends "
         "(links.json points[].rel_error).</p>\n" + charts::html::table(head, rows);
}

std::string links_table(const std::vector<LinkModel>& links) {
  std::vector<std::vector<std::string>> rows;
  auto pct = [](double v) { return fmt::format("{:.1f}%", v * 100); };
  for (const auto& m : links) {
    std::string two = "-";
    if (m.model == "three_regime")
      two = fmt::format("three regimes from {} and {}: worst {}", format_size(static_cast<std::uint64_t>(m.three.mid_from_bytes)),
                        format_size(static_cast<std::uint64_t>(m.three.high_from_bytes)), pct(m.three.worst_rel_error));
    else if (m.two.ok)
      two = fmt::format("{} at {}: worst {}", m.use_two_regime ? "recommended" : "not needed",
                        format_size(static_cast<std::uint64_t>(m.two.breakpoint_bytes)), pct(m.two.worst_rel_error));
    rows.push_back({m.backend, fmt::format("{}->{}", m.src, m.dst), m.link_class, format_duration_ns(m.latency_floor_ns),
                    format_rate(m.asymptotic_bytes_per_s),
                    std::isnan(m.n_half_bytes) ? "-" : format_size(static_cast<std::uint64_t>(m.n_half_bytes)),
                    m.fit.ok ? format_duration_ns(m.fit.alpha_ns) : "-", m.fit.ok ? format_rate(m.fit.beta_bytes_per_s) : "-",
                    m.fit.ok ? fmt::format("{:.4f}", m.fit.r2_log) : "-", m.fit.ok ? pct(m.fit.worst_rel_error) : "-", two});
  }
  return charts::html::table({"backend", "pair", "class", "latency floor", "asymptotic bw", "n-half", "alpha", "beta",
                              "R^2 (log)", "worst rel. error", "two-regime"},
                             rows);
}

std::string comparison_section(const Comparison& cmp) {
  std::string o;
  for (const auto& n : cmp.notes) o += "<p class=\"note\">" + xml_escape(n) + "</p>\n";
  if (cmp.rows.empty()) return o;
  std::vector<std::vector<std::string>> mape;
  for (const char* r : {"latency", "transition", "bandwidth", "all"}) {
    const auto it = cmp.mape.find(r);
    mape.push_back({r, it == cmp.mape.end() ? "-" : fmt::format("{:.2f}%", it->second),
                    std::to_string(cmp.count.count(r) ? cmp.count.at(r) : 0)});
  }
  o += charts::html::table({"regime", "MAPE", "configs"}, mape);
  charts::LineChart ch{"Prediction error by size ((predicted - measured) / measured)", {"message size", true, Format::size_bytes},
                       {"error", false, Format::percent}, {}, 640, 380, true};
  std::map<std::pair<int, int>, std::size_t> idx;
  for (const auto& r : cmp.rows) {
    if (!idx.count({r.src, r.dst})) {
      idx[{r.src, r.dst}] = ch.series.size();
      ch.series.push_back({fmt::format("{}->{}", r.src, r.dst), "", {}, {}, true, true, false});
    }
    auto& s = ch.series[idx[{r.src, r.dst}]];
    s.x.push_back(static_cast<double>(r.size_bytes));
    s.y.push_back(r.error_pct);
  }
  o += "<div class=\"charts\">" + charts::render_line_chart(ch) + "</div>\n";
  auto worst = cmp.rows;
  std::sort(worst.begin(), worst.end(), [](const auto& a, const auto& b) { return std::fabs(a.error_pct) > std::fabs(b.error_pct); });
  if (worst.size() > 10) worst.resize(10);
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : worst)
    rows.push_back({std::to_string(r.config_id), fmt::format("{}->{}", r.src, r.dst), format_size(r.size_bytes),
                    format_duration_ns(r.measured_ns), format_duration_ns(r.predicted_ns), fmt::format("{:+.1f}%", r.error_pct)});
  return o + "<p>Worst configs:</p>\n" +
         charts::html::table({"config", "pair", "size", "measured", "predicted", "error"}, rows);
}

std::string summary_table(const std::vector<ConfigSummary>& s) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : s)
    rows.push_back({std::to_string(c.config_id), c.backend, fmt::format("{}->{}", c.src, c.dst), format_size(c.size_bytes),
                    std::to_string(c.stats.n), std::to_string(c.outliers), format_duration_ns(c.stats.median),
                    format_duration_ns(c.median_ci.lo_ns) + " .. " + format_duration_ns(c.median_ci.hi_ns),
                    fmt::format("{:.1f}%", c.median_ci.level * 100), format_duration_ns(c.stats.p5), format_duration_ns(c.stats.p95), fmt::format("{:.2f}%", c.stats.cv * 100),
                    format_rate(c.bytes_per_s)});
  const bool split = !s.empty() && s.front().median_ci.processes > 1;
  const std::string what = split ? fmt::format("<p>The median interval holds the spread between the {} processes the "
                                               "repetitions were split over (summary.json median_ci says how).</p>\n",
                                               s.front().median_ci.processes)
                                 : "<p>The median interval is within one process: between-process variation is not "
                                   "included (profile --processes K measures it).</p>\n";
  return "<details><summary>All configs (" + std::to_string(s.size()) + ")</summary>\n" + what +
         charts::html::table({"config", "backend", "pair", "size", "n", "outliers", "median", "median interval",
                              "interval level", "p5", "p95", "CV", "bw at median"},
                             rows) +
         "</details>\n";
}

}  // namespace

std::string render_report(const Campaign& c, const std::vector<ConfigSummary>& s, const std::vector<LinkModel>& links,
                          const std::vector<Finding>& findings, const Comparison* cmp, OutlierRule rule) {
  std::set<std::string> backends;
  bool device_timed = !s.empty();
  for (const auto& cs : s) backends.insert(cs.backend), device_timed = device_timed && cs.device_timed;
  const bool multi = backends.size() > 1;
  std::string gpus;
  if (c.metadata.contains("devices") && c.metadata["devices"].is_array())
    for (const auto& d : c.metadata["devices"])
      gpus += fmt::format("{}{}: {}", gpus.empty() ? "" : "; ", d.value("device", -1), d.value("name", std::string("?")));
  const std::string backend_list = join(backends);
  std::size_t measurement = 0;
  for (const auto& f : findings) measurement += about_measurement(f);
  std::string body = "<h1>p2pscope campaign report</h1>\n";
  std::vector<std::vector<std::string>> facts = {
      {"directory", c.dir},
      {"devices", gpus.empty() ? "-" : gpus},
      {"backends", backend_list.empty() ? "-" : backend_list},
      {"ops analyzed", fmt::format("{} ({} garbled rows skipped, {} duplicates ignored)", c.ops.size(), c.rows_skipped, c.rows_duplicate)},
      {"configs / links", fmt::format("{} / {}", s.size(), links.size())},
      {"timing", device_timed ? "GPU-measured durations" : "host CLOCK_MONOTONIC durations (or mixed)"},
      {"outlier rule", outlier_rule_text(rule)},
      {"findings", fmt::format("{} about the hardware, {} about the measurement (noise)", findings.size() - measurement,
                               measurement)},
      {"campaign status", c.completeness.empty() ? c.metadata.value("status", std::string("-"))
                                                 : c.completeness + " (metadata.json: " +
                                                       c.metadata.value("status", std::string("-")) + ")"}};
  // Conclusions first; how it was measured after.
  if (!links.empty()) body += conclusions_html(links, findings, cmp);
  body += "<h2>This campaign</h2>\n" + charts::html::table({"", ""}, facts);
  for (const auto& n : c.notes) body += "<p class=\"note\">" + xml_escape(n) + "</p>\n";
  if (links.empty()) {
    body += "<p>No valid measurements: nothing to chart.</p>\n";
    return charts::html::page("p2pscope report", body);
  }
  body += section("Bandwidth and latency curves", curves(links, multi));
  body += section("Matrices", matrices(links, s));
  body += section("Variance", cv_chart(s, links, multi));
  body += section("Findings", findings_table(findings));
  body += section("Link models (links.json)", links_table(links) + residual_table(links));
  body += section("Fitted models over the measurements", fitted_models(links, multi));
  body += section("Temperature, power and clocks", temperature_timelines(c) + "<div class=\"charts\">" +
                                                        clock_timeline(c) + "</div>\n" + drift_table(c));
  if (!c.monitor.empty()) body += section("Monitor timelines (monitor.csv)", monitor_timelines(c));
  if (cmp) body += section("Simulator predictions", comparison_section(*cmp));
  if (const std::string h = contention_section(c.dir); !h.empty()) body += section("Contention (profile --pattern)", h);
  body += section("Per-config statistics (summary.csv)", summary_table(s));
  return charts::html::page("p2pscope report", body);
}

}  // namespace p2pscope::analyze
