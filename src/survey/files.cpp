// A survey's files (survey/files.hpp).
#include "survey/files.hpp"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/error.hpp"
#include "p2pscope/json_words.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/text.hpp"
#include "survey/campaign.hpp"
#include "survey/report.hpp"

namespace p2pscope::survey {
namespace {

void write_survey_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
  if (!f) throw Error("survey: could not write " + p.string());
}

}  // namespace

ResumeRecords read_resume(const std::string& dir) {
  const std::filesystem::path p = std::filesystem::path(dir) / "rounds.jsonl";
  std::ifstream f(p);
  if (!f) throw UsageError(fmt::format("--resume {}: no rounds.jsonl there (the --out DIR of an earlier survey)", dir));
  ResumeRecords out;
  out.path = p;
  std::string line;
  int& n = out.lines;
  int& bad = out.bad_lines;
  while (std::getline(f, line)) {
    ++n;
    if (trim(line).empty()) continue;
    try {
      out.records.push_back(record_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception&) {
      ++bad;  // a line cut by a crash: that task runs again
    }
  }
  return out;
}


Result read_survey_json(const std::string& path_text) {
  std::filesystem::path p(path_text);
  if (std::filesystem::is_directory(p)) p /= "survey.json";
  std::ifstream f(p);
  if (!f) throw UsageError("--from " + path_text + ": no survey.json there (a survey's --out DIR or its survey.json)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception&) {
    throw UsageError("--from " + p.string() + ": not JSON (a survey's survey.json)");
  }
  if (!j.is_object() || j.value("kind", "") != "p2pscope_survey")
    throw UsageError("--from " + p.string() + ": not a survey's JSON (its kind is not p2pscope_survey)");
  Result r;
  try {
    for (const auto& h : j.at("hosts")) r.hosts.push_back(host_from_json(h));
    for (const auto& rec : j.at("records")) r.records.push_back(record_from_json(rec));
    r.names.rails = j.at("rails").get<std::vector<std::string>>();
    r.wall_s = j.at("wall_s").get<double>();
    r.shared_kernel = j.at("shared_kernel").get<bool>();
    r.shared_cpus = j.value("shared_cpus", r.shared_kernel);
    r.transport = j.value("transport", std::string("tcp"));
  } catch (const std::exception& e) {
    throw UsageError("--from " + p.string() + ": a survey JSON this version cannot read (" +
                     json_error_words(e.what()) + ")");
  }
  return r;
}


LinksWritten write_survey_files(const std::filesystem::path& dir, const Result& r, const std::string& json_text,
                                bool sizes) {
  write_survey_file(dir / "survey.json", json_text);
  write_survey_file(dir / "survey.csv", to_csv(r));
  write_survey_file(dir / "survey.html", to_html(r));
  LinksWritten w;
  if (!sizes) return w;
  // --sizes: the links' models where export reads them (analyze's links.json).
  const auto links = link_models(r);
  if (!links.empty()) write_survey_file(dir / "links.json", out::dump_json(links_json(r, links), 1) + "\n");
  w.links = links.size();
  for (const auto& m : links)
    if (m.backend.find(" + ") != std::string::npos) {
      w.grid_backend = m.backend;
      break;
    }
  return w;
}

}  // namespace p2pscope::survey
