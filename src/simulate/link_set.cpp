// links.json (and summary.json's sample counts) read back for export and predict.
#include "simulate/link_set.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "p2pscope/error.hpp"

namespace p2pscope::simulate {
namespace fs = std::filesystem;
namespace {

double number(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number())
    throw UsageError(fmt::format("{}: \"{}\" is missing or not a number", where, key));
  return j[key].get<double>();
}

analyze::AlphaBeta alpha_beta(const nlohmann::json& j, const std::string& where) {
  analyze::AlphaBeta f;
  if (j.is_null()) return f;  // analyze writes null for a fit that failed
  f.ok = true;
  f.alpha_ns = number(j, "alpha_ns", where);
  f.beta_bytes_per_s = number(j, "beta_bytes_per_s", where);
  if (!(f.beta_bytes_per_s > 0) || f.alpha_ns < 0)
    throw UsageError(fmt::format("{}: alpha_ns {} / beta_bytes_per_s {} out of range", where, f.alpha_ns, f.beta_bytes_per_s));
  f.r2_log = j.value("r2_log", 0.0);
  f.worst_rel_error = j.value("worst_rel_error", 0.0);
  return f;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

analyze::LinkModel link_model_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw UsageError(where + ": not an object");
  analyze::LinkModel m;
  m.backend = j.value("backend", "");
  m.link_class = j.value("link_class", "unknown");
  m.src = static_cast<int>(number(j, "src", where));
  m.dst = static_cast<int>(number(j, "dst", where));
  m.latency_floor_ns = j.value("latency_floor_ns", 0.0);
  m.smallest_size = j.value("latency_floor_size_bytes", 0.0);
  m.asymptotic_bytes_per_s = j.value("asymptotic_bytes_per_s", 0.0);
  m.n_half_bytes = j.contains("n_half_bytes") && j["n_half_bytes"].is_number() ? j["n_half_bytes"].get<double>() : NAN;
  m.fit = alpha_beta(j.value("alpha_beta", nlohmann::json()), where + " alpha_beta");
  const auto two = j.value("two_regime", nlohmann::json());
  if (two.is_object()) {
    m.two.ok = true;
    m.two.breakpoint_bytes = number(two, "breakpoint_bytes", where + " two_regime");
    m.two.below = alpha_beta(two.value("below", nlohmann::json()), where + " two_regime.below");
    m.two.above = alpha_beta(two.value("above", nlohmann::json()), where + " two_regime.above");
    m.two.worst_rel_error = two.value("worst_rel_error", 0.0);
    m.two.ok = m.two.below.ok && m.two.above.ok;
  }
  const auto three = j.value("three_regime", nlohmann::json());
  if (three.is_object()) {
    const std::string w = where + " three_regime";
    m.three.mid_from_bytes = number(three, "mid_from_bytes", w);
    m.three.high_from_bytes = number(three, "high_from_bytes", w);
    m.three.low = alpha_beta(three.value("low", nlohmann::json()), w + ".low");
    m.three.mid = alpha_beta(three.value("mid", nlohmann::json()), w + ".mid");
    m.three.high = alpha_beta(three.value("high", nlohmann::json()), w + ".high");
    m.three.worst_rel_error = three.value("worst_rel_error", 0.0);
    m.three.ok = m.three.low.ok && m.three.mid.ok && m.three.high.ok;
  }
  // analyze's rule, as it wrote it: "model" names the one to use.
  const std::string model = j.value("model", "alpha_beta");
  m.use_two_regime = model == "two_regime" && m.two.ok && m.fit.ok;
  m.model = m.use_two_regime || (model == "three_regime" && m.three.ok && m.fit.ok) ? model : "alpha_beta";
  for (const auto& p : j.value("points", nlohmann::json::array())) {
    m.sizes.push_back(number(p, "size_bytes", where + " points"));
    m.median_ns.push_back(number(p, "median_ns", where + " points"));
    m.bytes_per_s.push_back(p.value("bytes_per_s", 0.0));
  }
  return m;
}

std::vector<std::string> LinkSet::backends() const {
  std::vector<std::string> out;
  for (const auto& l : links)
    if (std::find(out.begin(), out.end(), l.backend) == out.end()) out.push_back(l.backend);
  return out;
}

LinkSet read_link_set(const std::string& dir) {
  LinkSet s;
  s.dir = dir;
  const fs::path d(dir);
  if (!fs::is_directory(d)) throw UsageError(dir + ": not a directory; give a campaign directory made by `p2pscope profile`");
  const fs::path lp = d / "links.json";
  if (!fs::exists(lp)) {
    const bool campaign = fs::exists(d / "execution_log.csv");
    throw UsageError(campaign ? fmt::format("{}: no links.json yet; run `p2pscope analyze {}` first (it fits the link models "
                                            "that export and predict read)", dir, dir)
                              : fmt::format("{}: no links.json and no execution_log.csv: not a campaign directory; run "
                                            "`p2pscope profile --out DIR` and then `p2pscope analyze DIR` first", dir));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(lp.string()));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("{}: not valid JSON ({}); run `p2pscope analyze {}` again", lp.string(), e.what(), dir));
  }
  if (!j.is_object() || j.value("kind", "") != "p2pscope_link_models" || !j.contains("links") || !j["links"].is_array())
    throw UsageError(lp.string() + ": not p2pscope's link models (kind p2pscope_link_models with a \"links\" array)");
  s.links_schema_version = j.value("schema_version", 0);
  if (s.links_schema_version != 1)
    throw UsageError(fmt::format("{}: schema_version {} is not the one this p2pscope reads (1)", lp.string(),
                                 s.links_schema_version));
  s.time_source = j.value("time_source", "unknown");
  for (std::size_t i = 0; i < j["links"].size(); ++i) {
    auto m = link_model_from_json(j["links"][i], fmt::format("{} links[{}]", lp.string(), i));
    if (m.fit.ok)
      s.links.push_back(std::move(m));
    else  // analyze writes "alpha_beta": null when too few sizes were measured
      s.notes.push_back(fmt::format("{} {}->{}: no alpha-beta fit in links.json (too few sizes): left out", m.backend,
                                    m.src, m.dst));
  }
  if (s.links.empty()) throw UsageError(lp.string() + ": no links (the campaign logged no valid ops)");

  if (fs::exists(d / "metadata.json")) {
    try {
      s.metadata = nlohmann::json::parse(read_text_file((d / "metadata.json").string()));
    } catch (const nlohmann::json::exception&) {
      s.notes.push_back("metadata.json is not valid JSON: machine and topology left out");
    }
  }
  if (!s.metadata.is_object()) s.metadata = nlohmann::json::object();
  // Sample counts per config (summary.json, written by the same analyze run).
  if (fs::exists(d / "summary.json")) {
    try {
      const auto sj = nlohmann::json::parse(read_text_file((d / "summary.json").string()));
      for (const auto& c : sj.value("configs", nlohmann::json::array()))
        s.samples[{c.value("backend", ""), c.value("src", 0), c.value("dst", 0), c.value("size_bytes", std::uint64_t{0})}] =
            {c.value("n", std::size_t{0}), c.value("n_raw", std::size_t{0})};
    } catch (const nlohmann::json::exception&) {
      s.notes.push_back("summary.json is not valid JSON: sample counts left out");
    }
  } else {
    s.notes.push_back("summary.json absent: sample counts left out");
  }
  return s;
}

std::string choose_backend(const LinkSet& s, const std::string& wanted, std::vector<std::string>* notes) {
  const auto all = s.backends();
  std::string list;
  for (const auto& b : all) list += (list.empty() ? "" : ", ") + b;
  if (!wanted.empty()) {
    if (std::find(all.begin(), all.end(), wanted) == all.end())
      throw UsageError(fmt::format("--backend {}: links.json has no links of that backend; it has: {}", wanted, list));
    return wanted;
  }
  if (all.size() == 1) return all.front();
  for (const char* b : {"nccl", "ce", "sm", "staged", "host"})
    if (std::find(all.begin(), all.end(), b) != all.end()) {
      notes->push_back(fmt::format("links.json holds several backends ({}); using {} (choose with --backend)", list, b));
      return b;
    }
  notes->push_back(fmt::format("links.json holds several backends ({}); using {} (choose with --backend)", list, all.front()));
  return all.front();
}

}  // namespace p2pscope::simulate
