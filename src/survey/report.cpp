#include "survey/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/charts.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/tcp.hpp"

namespace p2pscope::survey {
namespace {

const char* metric_name(Metric m) { return m == Metric::bandwidth ? "bandwidth" : "latency"; }

std::string host(const Result& r, int h) {
  return h >= 0 && static_cast<std::size_t>(h) < r.names.hosts.size() ? r.names.hosts[static_cast<std::size_t>(h)]
                                                                     : std::to_string(h);
}

std::string figure_value(Metric m, double v) {
  return m == Metric::bandwidth ? rate_text(v) : fmt::format("{:.1f} us", v / 1e3);
}

}  // namespace

std::string rate_text(double bps) {
  if (!std::isfinite(bps)) return "n/a";
  if (bps < 1e9) return fmt::format("{:.1f} MB/s", bps / 1e6);
  return fmt::format("{:.2f} GB/s", bps / 1e9);
}

std::vector<std::vector<double>> rail_matrix(const Result& r, int rail, int pass) {
  const std::size_t n = r.hosts.size();
  std::vector<std::vector<double>> m(n, std::vector<double>(n, NAN));
  for (const Judged& j : r.judged)
    if (j.figure.metric == Metric::bandwidth && j.figure.rail == rail && j.figure.pass == pass &&
        !j.figure.samples.empty())
      m[static_cast<std::size_t>(j.figure.from)][static_cast<std::size_t>(j.figure.to)] = j.median;
  return m;
}

std::string to_text(const Result& r) {
  std::string o = "survey: " + r.verdict.headline + "\n";
  for (std::size_t i = 1; i < r.verdict.findings.size(); ++i) o += "  - " + r.verdict.findings[i].text + "\n";
  o += fmt::format("\n{} hosts, {} rail{} ({}), {} round{} of pairs{}, {:.1f} s\n", r.hosts.size(), r.names.rails.size(),
                   r.names.rails.size() == 1 ? "" : "s", fmt::join(r.names.rails, ", "), r.rounds,
                   r.rounds == 1 ? "" : "s",
                   r.recheck_rounds ? fmt::format(" and {} of the second pass", r.recheck_rounds) : "", r.wall_s);
  // Per class: its median and spread, so a reader sees what "normal" was.
  std::map<std::pair<int, std::string>, std::vector<const Judged*>> classes;
  for (const Judged& j : r.judged)
    if (j.figure.pass == 1 && !j.figure.samples.empty()) classes[{static_cast<int>(j.figure.metric), j.figure.cls}].push_back(&j);
  // Device pairs: a class per pair (56 on 8 GPUs), folded into one line of their medians.
  std::vector<double> device_medians;
  for (const auto& [k, js] : classes) {
    const Judged& f = *js.front();
    const Metric m = static_cast<Metric>(k.first);
    if (f.figure.dev_src >= 0) {
      device_medians.push_back(f.class_median);
      continue;
    }
    o += fmt::format("{} class {}: {} figures, median {} [{}, {}], MAD {}\n", metric_name(m), k.second, js.size(),
                     figure_value(m, f.class_median), figure_value(m, f.class_lo), figure_value(m, f.class_hi),
                     figure_value(m, f.class_mad));
  }
  if (!device_medians.empty()) {
    const auto [lo, hi] = std::minmax_element(device_medians.begin(), device_medians.end());
    o += fmt::format("device pairs inside the hosts: {} classes (each pair against the same pair on the other hosts), "
                     "medians {} to {}\n",
                     device_medians.size(), figure_value(Metric::bandwidth, *lo), figure_value(Metric::bandwidth, *hi));
  }
  for (std::size_t rail = 0; rail < r.names.rails.size(); ++rail) {
    const auto m = rail_matrix(r, static_cast<int>(rail));
    o += fmt::format("\nrail {} ({}), bandwidth MB/s, row sends to column (* flagged):\n{:>10}", rail, r.names.rails[rail], "");
    for (std::size_t c = 0; c < r.hosts.size(); ++c) o += fmt::format(" {:>9}", host(r, static_cast<int>(c)).substr(0, 9));
    o += "\n";
    for (std::size_t a = 0; a < r.hosts.size(); ++a) {
      o += fmt::format("{:>10}", host(r, static_cast<int>(a)).substr(0, 10));
      for (std::size_t b = 0; b < r.hosts.size(); ++b) {
        bool flagged = false;
        for (const Judged& j : r.judged)
          if (j.flagged && j.figure.pass == 1 && j.figure.metric == Metric::bandwidth &&
              j.figure.rail == static_cast<int>(rail) && j.figure.from == static_cast<int>(a) &&
              j.figure.to == static_cast<int>(b))
            flagged = true;
        o += std::isfinite(m[a][b]) ? fmt::format(" {:>8.1f}{}", m[a][b] / 1e6, flagged ? "*" : " ") : fmt::format(" {:>9}", "-");
      }
      o += "\n";
    }
  }
  std::vector<std::string> local;
  for (const Record& rec : r.records)
    if (rec.step == "local")
      local.push_back(fmt::format("{} {}", host(r, rec.server),
                                  rec.failure.empty() ? rate_text(median(rec.c2s_bytes_per_s)) : "failed: " + rec.failure));
  if (!local.empty()) o += "\nlocal ceilings (bench tcp over loopback, one host's CPUs alone): " + fmt::format("{}", fmt::join(local, ", ")) + "\n";
  int failed = 0;
  for (const Record& rec : r.records)
    if (!rec.failure.empty()) {
      if (failed++ < 10)
        o += fmt::format("failed: pass {} round {} {} {} <-> {} rail {}: {}\n", rec.pass, rec.round, rec.step,
                         host(r, rec.server), host(r, rec.client), rec.rail, rec.failure);
    }
  if (failed > 10) o += fmt::format("... and {} more failed sessions (every one is in the JSON)\n", failed - 10);
  if (r.verdict.bandwidth_unrepeated > 0)
    o += fmt::format("note: {} link{} flagged in the first pass and normal when measured again: the moment's load, not "
                     "the link\n",
                     r.verdict.bandwidth_unrepeated, r.verdict.bandwidth_unrepeated == 1 ? "" : "s");
  if (r.verdict.latency_unrepeated > 0)
    o += fmt::format("note: {} latency flag{} of the first pass not repeated when measured again: the moment's "
                     "load, not the link\n",
                     r.verdict.latency_unrepeated, r.verdict.latency_unrepeated == 1 ? "" : "s");
  for (const std::string& n : r.notes) o += "note: " + n + "\n";
  return o;
}

nlohmann::json to_json(const Result& r) {
  nlohmann::json hosts = nlohmann::json::array(), records = nlohmann::json::array(), figures = nlohmann::json::array(),
                 findings = nlohmann::json::array();
  for (const HostInfo& h : r.hosts) hosts.push_back(to_json(h));
  for (const Record& rec : r.records) records.push_back(to_json(rec));
  for (const Judged& j : r.judged)
    figures.push_back({{"metric", metric_name(j.figure.metric)}, {"pass", j.figure.pass},
                       {"from", host(r, j.figure.from)}, {"to", host(r, j.figure.to)}, {"rail", j.figure.rail},
                       {"class", j.figure.cls}, {"n", j.figure.samples.size()}, {"median", j.median},
                       {"lo", j.lo}, {"hi", j.hi}, {"level", j.level}, {"p99", j.p99},
                       {"class_median", j.class_median}, {"class_lo", j.class_lo}, {"class_hi", j.class_hi},
                       {"class_mad", j.class_mad}, {"ratio", j.ratio}, {"ratio_lo", j.ratio_lo},
                       {"ratio_hi", j.ratio_hi}, {"flagged", j.flagged}, {"why", j.why},
                       {"unit", j.figure.metric == Metric::bandwidth ? "B/s" : "ns"}});
  for (const Finding& f : r.verdict.findings)
    findings.push_back({{"kind", f.kind}, {"host", f.host >= 0 ? host(r, f.host) : ""},
                        {"peer", f.peer >= 0 ? host(r, f.peer) : ""}, {"rail", f.rail}, {"ratio", f.ratio},
                        {"ratio_lo", f.ratio_lo}, {"ratio_hi", f.ratio_hi}, {"text", f.text}});
  return {{"kind", "p2pscope_survey"},
          {"verdict", {{"headline", r.verdict.headline}, {"links", r.verdict.links},
                       {"slow_links", r.verdict.slow_links}, {"latency_flags", r.verdict.latency_flags}, {"latency_unrepeated", r.verdict.latency_unrepeated}, {"bandwidth_unrepeated", r.verdict.bandwidth_unrepeated},
                       {"findings", findings}}},
          {"hosts", hosts},
          {"rails", r.names.rails},
          {"transport", r.transport},
          {"gone", r.gone},
          {"ranks", r.members},  // by host: its ranks (several under --per gpu)
          {"rounds", r.rounds},
          {"recheck_rounds", r.recheck_rounds},
          {"wall_s", r.wall_s},
          {"shared_kernel", r.shared_kernel},
          {"shared_cpus", r.shared_cpus},
          {"figures", figures},
          {"records", records},
          {"notes", r.notes}};
}

std::string to_csv(const Result& r) {
  std::string o = "metric,pass,from,to,rail,class,n,median,lo,hi,level,p99,class_median,ratio,ratio_lo,ratio_hi,flagged,unit\n";
  for (const Judged& j : r.judged)
    o += fmt::format("{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.4f},{:.6g},{:.6g},{:.4f},{:.4f},{:.4f},{},{}\n",
                     metric_name(j.figure.metric), j.figure.pass, host(r, j.figure.from), host(r, j.figure.to),
                     j.figure.rail, j.figure.cls, j.figure.samples.size(), j.median, j.lo, j.hi, j.level, j.p99,
                     j.class_median, j.ratio, j.ratio_lo, j.ratio_hi, j.flagged ? 1 : 0,
                     j.figure.metric == Metric::bandwidth ? "B/s" : "ns");
  return o;
}

std::string to_html(const Result& r) {
  using charts::xml_escape;
  std::string body = "<h1>p2pscope survey</h1>\n<p><b>" + xml_escape(r.verdict.headline) + "</b></p>\n";
  if (r.verdict.findings.size() > 1) {
    body += "<ul>\n";
    for (std::size_t i = 1; i < r.verdict.findings.size(); ++i) body += "<li>" + xml_escape(r.verdict.findings[i].text) + "</li>\n";
    body += "</ul>\n";
  }
  std::vector<std::string> names;
  for (std::size_t h = 0; h < r.hosts.size(); ++h) names.push_back(host(r, static_cast<int>(h)));
  body += "<h2>Bandwidth per rail (MB/s, row sends to column)</h2>\n<div class=\"charts\">\n";
  for (std::size_t rail = 0; rail < r.names.rails.size(); ++rail) {
    auto m = rail_matrix(r, static_cast<int>(rail));
    for (auto& row : m)
      for (double& v : row) v /= 1e6;
    body += tcp::heatmap_svg(fmt::format("rail {} ({})", rail, r.names.rails[rail]), "sender", names, "receiver", names, m,
                             "MB/s");
  }
  body += "</div>\n<h2>Figures</h2>\n";
  std::vector<std::vector<std::string>> rows;
  for (const Judged& j : r.judged)
    rows.push_back({metric_name(j.figure.metric), std::to_string(j.figure.pass), host(r, j.figure.from),
                    host(r, j.figure.to), std::to_string(j.figure.rail), figure_value(j.figure.metric, j.median),
                    fmt::format("[{}, {}]", figure_value(j.figure.metric, j.lo), figure_value(j.figure.metric, j.hi)),
                    fmt::format("{:.0f} %", j.ratio * 100), j.flagged ? "FLAGGED" : "", j.why});
  body += charts::html::table({"metric", "pass", "from", "to", "rail", "median", "interval", "of class", "flag", "why"}, rows);
  for (const std::string& n : r.notes) body += "<p class=\"note\">" + xml_escape(n) + "</p>\n";
  return charts::html::page("p2pscope survey", body);
}

}  // namespace p2pscope::survey
