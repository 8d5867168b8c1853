// The contention section of report.html: each `profile --pattern` run saved in the
// campaign directory (DIR/contention.json or DIR/*/contention.json), per flow and size
// the bandwidth with the other flows running next to the same flow alone, so a reader
// sees where the isolated link models stop holding.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::analyze {
namespace fs = std::filesystem;

std::vector<std::string> contention_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "contention.json", ec)) files.push_back((fs::path(dir) / "contention.json").string());
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && fs::exists(e.path() / "contention.json", ec))
      files.push_back((e.path() / "contention.json").string());
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

double number_or_nan(const nlohmann::json& r, const char* key) {
  return r.contains(key) && r[key].is_number() ? r[key].get<double>() : NAN;
}

std::string one_run(const nlohmann::json& j, const std::string& name) {
  using charts::Format;
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, charts::Series> alone, together;  // per flow
  for (const auto& r : j.value("summary", nlohmann::json::array())) {
    if (!r.is_object()) continue;
    const std::string flow = fmt::format("{}->{}", r.value("src", -1), r.value("dst", -1));
    const double n = number_or_nan(r, "size_bytes"), a = number_or_nan(r, "alone_bytes_per_s"),
                 t = number_or_nan(r, "together_bytes_per_s");
    if (!(n > 0) || !(a > 0)) continue;
    rows.push_back({format_size(static_cast<std::uint64_t>(n)), flow, std::to_string(r.value("flows", 0)),
                    format_rate(a), std::isfinite(t) ? format_rate(t) : "-",
                    std::isfinite(t) ? fmt::format("{:.2f}", t / a) : "-",
                    std::isfinite(number_or_nan(r, "aggregate_bytes_per_s")) ? format_rate(r["aggregate_bytes_per_s"].get<double>()) : "-"});
    auto& sa = alone[flow];
    sa.name = flow + " alone";
    sa.dashed = true;
    sa.markers = false;
    sa.x.push_back(n);
    sa.y.push_back(a);
    auto& st = together[flow];
    st.name = flow + " together";
    st.x.push_back(n);
    st.y.push_back(t);
  }
  if (rows.empty()) return "";
  charts::LineChart ch{fmt::format("{} on {}: bandwidth per flow", j.value("pattern", "?"), j.value("backend", "?")),
                       {"message size", true, Format::size_bytes}, {"bandwidth", true, Format::bytes_per_s}, {}, 680, 380,
                       true};
  std::size_t k = 0;
  for (auto& [flow, s] : together) {
    const bool any = std::any_of(s.y.begin(), s.y.end(), [](double v) { return std::isfinite(v); });
    alone[flow].color = s.color = charts::palette(k++);
    ch.series.push_back(alone[flow]);
    if (any) ch.series.push_back(s);
  }
  return "<h3>" + charts::xml_escape(fmt::format("{} ({})", j.value("pattern", "?"), name)) + "</h3>\n" +
         charts::render_line_chart(ch) +
         charts::html::table({"size", "flow", "flows at once", "alone", "together", "together / alone", "aggregate"}, rows);
}

}  // namespace

std::string contention_section(const std::string& dir) {
  std::string out;
  for (const auto& f : contention_files(dir)) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(ss.str());
    } catch (const std::exception&) {
      out += "<p class=\"note\">" + charts::xml_escape(f) + ": not readable JSON, left out</p>\n";
      continue;
    }
    if (!j.is_object() || j.value("kind", "") != "p2pscope_contention") continue;
    out += one_run(j, fs::relative(f, dir).string());
  }
  if (out.empty()) return "";
  return "<p>Flows run alone, then together with the others of the pattern (`profile --pattern`); where together / "
         "alone falls below 1 the flows share a path, and the isolated link models above over-predict.</p>\n" + out;
}

}  // namespace p2pscope::analyze
