// links.json (and summary.json's sample counts) read back for export and predict.
#include "simulate/link_set.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/json_words.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::simulate {
namespace fs = std::filesystem;
namespace {

// Every number export and predict read is checked here, so that an edited or damaged
// links.json is refused with what is wrong (exit 2) instead of becoming inf, a device
// -2147483648 in ASTRA-sim's file or an internal error.
constexpr double kMaxDevice = 1 << 20;

double number(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number())
    throw UsageError(fmt::format("{}: \"{}\" is missing or not a number{}; run `p2pscope analyze` again to rewrite "
                                 "links.json", where, key,
                                 j.is_object() && j.contains(key) ? " (it is " + external_text(j[key].dump(), 40) + ")" : ""));
  const double v = j[key].get<double>();
  if (!std::isfinite(v))
    throw UsageError(fmt::format("{}: \"{}\" is {}, not a finite number; run `p2pscope analyze` again", where, key, v));
  return v;
}

// A number that must lie in [lo, hi].
double bounded(const nlohmann::json& j, const char* key, const std::string& where, double lo, double hi,
               const char* what) {
  const double v = number(j, key, where);
  if (v < lo || v > hi)
    throw UsageError(fmt::format("{}: \"{}\" {} is impossible for {} ({} .. {}); run `p2pscope analyze` again", where,
                                 key, v, what, lo, hi));
  return v;
}

// An optional number: `fallback` when absent or null, else as bounded().
double optional(const nlohmann::json& j, const char* key, const std::string& where, double fallback, double lo, double hi,
                const char* what) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return bounded(j, key, where, lo, hi, what);
}

std::string text(const nlohmann::json& j, const char* key, const std::string& where, const std::string& fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_string())
    throw UsageError(fmt::format("{}: \"{}\" is {}, not a string; run `p2pscope analyze` again", where, key,
                                 external_text(j[key].dump(), 40)));
  return external_text(j[key].get<std::string>(), 200);  // printed, and written into export's files
}

constexpr double kMaxNs = 1e13;  // 10^4 s: no transfer a campaign times lasts longer

analyze::AlphaBeta alpha_beta(const nlohmann::json& j, const std::string& where) {
  analyze::AlphaBeta f;
  if (j.is_null()) return f;  // analyze writes null for a fit that failed
  if (!j.is_object()) throw UsageError(where + ": not an object");
  f.ok = true;
  f.alpha_ns = bounded(j, "alpha_ns", where, 0, kMaxNs, "a latency in ns");
  // analyze writes 1e21 B/s for a link whose time does not grow with size (latency only)
  f.beta_bytes_per_s = bounded(j, "beta_bytes_per_s", where, 1, 1e24, "a bandwidth in B/s");
  f.r2_log = optional(j, "r2_log", where, 0, -1e12, 1, "an R^2");
  f.worst_rel_error = optional(j, "worst_rel_error", where, 0, 0, 1e12, "a relative error");
  return f;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  // Not an ifstream: it opens a directory as an empty file, which then read as "no
  // table" or "not JSON" (issue 31 item 7). A directory or device given for a file is
  // the user's to change (exit 2); a file that cannot be read is an error.
  std::string why;
  if (auto text = try_read_regular_file(path, kMaxReadBytes, &why)) return std::move(*text);
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw UsageError(path + ": " + why + "; give a file");
  throw Error("cannot read " + path + ": " + why);
}

analyze::LinkModel link_model_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw UsageError(where + ": not an object");
  analyze::LinkModel m;
  m.backend = text(j, "backend", where, "");
  m.link_class = text(j, "link_class", where, "unknown");
  const double src = bounded(j, "src", where, 0, kMaxDevice, "a device index"),
               dst = bounded(j, "dst", where, 0, kMaxDevice, "a device index");
  if (src != std::floor(src) || dst != std::floor(dst))
    throw UsageError(fmt::format("{}: device {}->{} is not a whole number", where, src, dst));
  m.src = static_cast<int>(src);
  m.dst = static_cast<int>(dst);
  m.latency_floor_ns = optional(j, "latency_floor_ns", where, 0, 0, kMaxNs, "a latency in ns");
  m.smallest_size = optional(j, "latency_floor_size_bytes", where, 0, 0, 1e18, "a size in bytes");
  m.asymptotic_bytes_per_s = optional(j, "asymptotic_bytes_per_s", where, 0, 0, 1e24, "a bandwidth in B/s");
  m.n_half_bytes = optional(j, "n_half_bytes", where, NAN, 0, 1e18, "a size in bytes");
  m.fit = alpha_beta(j.value("alpha_beta", nlohmann::json()), where + " alpha_beta");
  const auto two = j.value("two_regime", nlohmann::json());
  if (two.is_object()) {
    m.two.ok = true;
    m.two.breakpoint_bytes = bounded(two, "breakpoint_bytes", where + " two_regime", 0, 1e18, "a size in bytes");
    m.two.below = alpha_beta(two.value("below", nlohmann::json()), where + " two_regime.below");
    m.two.above = alpha_beta(two.value("above", nlohmann::json()), where + " two_regime.above");
    m.two.worst_rel_error = optional(two, "worst_rel_error", where, 0, 0, 1e12, "a relative error");
    m.two.ok = m.two.below.ok && m.two.above.ok;
  }
  const auto three = j.value("three_regime", nlohmann::json());
  if (three.is_object()) {
    const std::string w = where + " three_regime";
    m.three.mid_from_bytes = bounded(three, "mid_from_bytes", w, 0, 1e18, "a size in bytes");
    m.three.high_from_bytes = bounded(three, "high_from_bytes", w, 0, 1e18, "a size in bytes");
    m.three.low = alpha_beta(three.value("low", nlohmann::json()), w + ".low");
    m.three.mid = alpha_beta(three.value("mid", nlohmann::json()), w + ".mid");
    m.three.high = alpha_beta(three.value("high", nlohmann::json()), w + ".high");
    m.three.worst_rel_error = optional(three, "worst_rel_error", w, 0, 0, 1e12, "a relative error");
    m.three.ok = m.three.low.ok && m.three.mid.ok && m.three.high.ok;
  }
  // analyze's rule, as it wrote it: "model" names the one to use.
  const std::string model = text(j, "model", where, "alpha_beta");
  m.use_two_regime = model == "two_regime" && m.two.ok && m.fit.ok;
  m.model = m.use_two_regime || (model == "three_regime" && m.three.ok && m.fit.ok) ? model : "alpha_beta";
  if (j.contains("points") && !j["points"].is_array()) throw UsageError(where + ": \"points\" is not an array");
  for (const auto& p : j.value("points", nlohmann::json::array())) {
    if (!p.is_object()) throw UsageError(where + ": an element of \"points\" is not an object");
    const double n = bounded(p, "size_bytes", where + " points", 1, 1e18, "a size in bytes");
    if (!m.sizes.empty() && n <= m.sizes.back())
      throw UsageError(fmt::format("{} points: sizes not ascending ({} after {})", where, n, m.sizes.back()));
    m.sizes.push_back(n);
    m.median_ns.push_back(bounded(p, "median_ns", where + " points", 1e-3, kMaxNs, "a time in ns"));
    m.bytes_per_s.push_back(optional(p, "bytes_per_s", where + " points", 0, 0, 1e24, "a bandwidth in B/s"));
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
    throw UsageError(fmt::format("{}: not valid JSON ({}); run `p2pscope analyze {}` again", lp.string(),
                                 json_error_words(e.what()), dir));
  }
  if (!j.is_object() || !j.contains("kind") || j["kind"] != "p2pscope_link_models" || !j.contains("links") || !j["links"].is_array())
    throw UsageError(lp.string() + ": not p2pscope's link models (kind p2pscope_link_models with a \"links\" array)");
  s.links_schema_version = j.contains("schema_version") && j["schema_version"].is_number_integer()
                               ? j["schema_version"].get<int>() : 0;
  if (s.links_schema_version != 1)
    throw UsageError(fmt::format("{}: schema_version {} is not the one this p2pscope reads (1)", lp.string(),
                                 s.links_schema_version));
  s.time_source = text(j, "time_source", lp.string(), "unknown");
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
      for (const auto& c : sj.value("configs", nlohmann::json::array())) {
        SampleCount n{c.value("n", std::size_t{0}), c.value("n_raw", std::size_t{0})};
        if (c.contains("median_ci") && c["median_ci"].is_object()) {
          n.ci_lo_ns = c["median_ci"].value("lo_ns", NAN);
          n.ci_hi_ns = c["median_ci"].value("hi_ns", NAN);
          n.ci_level = c["median_ci"].value("level", NAN);
        }
        s.samples[{c.value("backend", ""), c.value("src", 0), c.value("dst", 0), c.value("size_bytes", std::uint64_t{0})}] = n;
      }
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
  const std::string list = join(all);
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
