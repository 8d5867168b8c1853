// run's headline.json and index.html (run/index.hpp).
#include "run/index.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/charts.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::run {
namespace fs = std::filesystem;
namespace {

// Files a run writes besides the steps' own outputs and logs, with what each holds.
const std::vector<std::pair<std::string, std::string>> kRunFiles = {
    {"campaign/report.html", "the campaign report: curves, matrices, findings, link models"},
    {"predict.html", "collectives predicted from the link models (and measured with --measure)"},
    {"network.yml", "ASTRA-sim network input from the link models"},
    {"topology.json", "topology (JSON)"},
    {"campaign/summary.csv", "per-config statistics"},
    {"campaign/links.json", "link models"},
    {"campaign/findings.json", "every finding"},
    {"campaign/trace.json", "Chrome trace of the campaign (chrome://tracing, Perfetto)"},
    {"campaign/execution_log.csv", "every measured op"},
    {"campaign/monitor.csv", "CPU, IRQ, NIC and GPU samples during the campaign"},
    {"headline.json", "the figures of the Results box above, unrounded"},
    {"run.json", "every step: command, status, time, exit code"}};

std::string html_link(const std::string& href, const std::string& text) {
  return "<a href=\"" + charts::xml_escape(href) + "\">" + charts::xml_escape(text) + "</a>";
}

std::string step_rows(const fs::path& out, const std::vector<StepResult>& results) {
  const auto rel = [&](const std::string& p) { return p.empty() ? std::string() : fs::relative(p, out).string(); };
  std::string rows;
  for (const auto& r : results) {
    std::string out_cell = "-", log_cell = "-";
    if (!r.stdout_path.empty() && fs::exists(r.stdout_path)) out_cell = html_link(rel(r.stdout_path), rel(r.stdout_path));
    if (!r.log_path.empty() && fs::exists(r.log_path)) log_cell = html_link(rel(r.log_path), rel(r.log_path));
    rows += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{:.1f} s</td><td>{}</td><td>{}</td><td><code>{}</code>{}</td></tr>\n",
                        r.status == "ok" ? "ok" : "warning", charts::xml_escape(r.name), charts::xml_escape(r.status),
                        r.seconds, out_cell, log_cell, charts::xml_escape(r.command),
                        r.note.empty() ? "" : "<br>" + charts::xml_escape(r.note));
  }
  return rows;
}

}  // namespace

fs::path write_index(const fs::path& out, const std::vector<StepResult>& results, std::size_t planned,
                     const Headline& headline, const std::set<std::string>& stale) {
  const std::string rows = step_rows(out, results);
  std::string files;
  // A skipped step ran nothing: "10 of 10 steps run" with four skipped was not true.
  const auto ran =
      std::count_if(results.begin(), results.end(), [](const StepResult& r) { return r.status != "skipped"; });
  for (const auto& [name, what] : kRunFiles)
    if (fs::exists(out / name) && !stale.count(name))
      files += "<li>" + html_link(name, name) + ": " + charts::xml_escape(what) + "</li>\n";
  std::string body =
      "<h1>p2pscope run</h1>\n" + headline_html(headline) + "<p>" +
      charts::xml_escape(fs::absolute(out).lexically_normal().string()) +
      fmt::format(": {} of {} steps run.</p>\n", ran, planned) + "<h2>Files</h2>\n<ul>\n" +
      (files.empty() ? "<li>none written</li>\n" : files) + "</ul>\n<h2>Steps</h2>\n" +
      "<table><tr><th>step</th><th>status</th><th>time</th><th>output</th><th>log</th><th>command</th></tr>\n" + rows +
      "</table>\n";
  const fs::path index = fs::absolute(out / "index.html").lexically_normal();
  write_file_atomic(index, charts::html::page("p2pscope run", body), Replace::allow);
  return index;
}

Headline write_headline(const fs::path& out, const std::set<std::string>& stale) {
  Headline h = read_headline(out, stale);
  nlohmann::json j = {{"schema_version", kSchemaVersion}, {"kind", "p2pscope_run_headline"}, {"numbers", h.numbers},
                      {"items", nlohmann::json::array()}};
  for (const auto& i : h.items)
    j["items"].push_back({{"label", i.label}, {"value", i.value}, {"detail", i.detail}, {"source", i.href}});
  write_file_atomic(out / "headline.json", out::dump_json(j, 2) + "\n", Replace::allow);
  return h;
}

}  // namespace p2pscope::run
