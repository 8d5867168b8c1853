// compare::load (p2pscope/compare.hpp): what a path holds, read into points with the
// interval of each median. Every point's interval comes from its samples by the same
// order-statistics rule analyze uses, so the two sides of a comparison are alike
// whichever kind they are.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/compare.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::compare {
namespace fs = std::filesystem;

std::string kind_text(Kind k) {
  switch (k) {
    case Kind::bench_gpu: return "a bench gpu JSON";
    case Kind::bench_nccl: return "a bench nccl JSON";
    case Kind::campaign: return "a profile campaign directory";
    case Kind::sweep_tcp: return "a sweep tcp CSV";
    case Kind::survey: return "a survey JSON";
  }
  return "?";
}

namespace {

// The run's start from its metadata block: "metadata" since 2026-11-27, "run_metadata"
// in the benches' JSON before.
std::string started_of(const nlohmann::json& j) {
  for (const char* key : {"metadata", "run_metadata"})
    if (j.contains(key) && j[key].is_object()) return j[key].value("start_time", "");
  return "";
}

constexpr const char* kWhatWeRead =
    "compare reads bench gpu and bench nccl JSON (--format json), profile campaign directories, sweep tcp CSVs "
    "(sweep.csv) and survey JSON (survey.json)";

Point from_samples(std::string backend, std::string subject, std::uint64_t size, const std::vector<double>& samples) {
  Point p;
  p.backend = std::move(backend);
  p.subject = std::move(subject);
  p.size_bytes = size;
  p.n = samples.size();
  p.median = compute_stats(samples).median;
  const auto ci = analyze::median_interval(samples);
  p.lo = ci.lo_ns;
  p.hi = ci.hi_ns;
  p.level = ci.level;
  return p;
}

std::string pair_subject(int src, int dst) { return fmt::format("{}->{}", src, dst); }

// A row's per-iteration samples ("samples_ns", numbers only); empty when it has none.
std::vector<double> samples_of(const nlohmann::json& row) {
  std::vector<double> out;
  const auto it = row.find("samples_ns");
  if (it == row.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_number()) out.push_back(v.get<double>());
  return out;
}

Loaded load_campaign(const std::string& shown, const fs::path& dir) {
  const analyze::Campaign c = analyze::read_campaign(dir.string());
  Loaded r;
  r.kind = Kind::campaign;
  r.path = shown;
  r.unit = "ns";
  r.started = c.metadata.is_object() ? c.metadata.value("start_time", "") : "";
  std::vector<std::string> backends;
  for (const auto& s : analyze::summarize_configs(c, analyze::OutlierRule::tukey)) {
    if (s.kept.empty()) continue;
    Point p;
    p.backend = s.backend;
    p.subject = pair_subject(s.src, s.dst);
    p.size_bytes = s.size_bytes;
    p.n = s.kept.size();
    p.median = s.stats.median;
    p.lo = s.median_ci.lo_ns;
    p.hi = s.median_ci.hi_ns;
    p.level = s.median_ci.level;
    r.points.push_back(std::move(p));
    if (std::find(backends.begin(), backends.end(), s.backend) == backends.end()) backends.push_back(s.backend);
  }
  std::string list;
  for (const auto& b : backends) list += (list.empty() ? "" : ", ") + b;
  int reps = 0;
  const int processes = analyze::campaign_processes(c, &reps);
  r.description = fmt::format("profile campaign, backend {}, {} ops{}{}", list, c.ops.size(),
                              reps > 0 ? fmt::format(", {} repetitions", reps) : "",
                              processes > 1 ? fmt::format(" over {} processes", processes) : "");
  return r;
}

Loaded load_bench_gpu(const std::string& shown, const nlohmann::json& j) {
  Loaded r;
  r.kind = Kind::bench_gpu;
  r.path = shown;
  r.unit = "ns";
  r.mode = j.value("pattern", "");
  const std::string backend = j.value("backend", "");
  r.started = started_of(j);
  r.description = fmt::format("bench gpu, backend {}, {}, {} iterations", backend, r.mode, j.value("iters", 0));
  for (const auto& row : j["rows"]) {
    if (!row.is_object() || !row.value("supported", true)) continue;
    const std::vector<double> samples = samples_of(row);
    if (samples.empty()) continue;
    r.points.push_back(from_samples(backend, pair_subject(row.value("src", -1), row.value("dst", -1)),
                                    row.value("size_bytes", std::uint64_t{0}), samples));
  }
  return r;
}

// bench nccl: one row per size, its per-iteration samples; the subject is the op, and
// both sides must be the same op (mode).
Loaded load_bench_nccl(const std::string& shown, const nlohmann::json& j) {
  Loaded r;
  r.kind = Kind::bench_nccl;
  r.path = shown;
  r.unit = "ns";
  r.mode = j["op"].is_string() ? j["op"].get<std::string>() : "";
  r.started = started_of(j);
  const int ranks = j.contains("ranks") && j["ranks"].is_number_integer() ? j["ranks"].get<int>() : 0;
  r.description = fmt::format("bench nccl, {}{}", r.mode, ranks > 0 ? fmt::format(", {} ranks", ranks) : "");
  for (const auto& row : j["rows"]) {
    if (!row.is_object()) continue;
    const std::vector<double> samples = samples_of(row);
    if (samples.empty()) continue;
    r.points.push_back(from_samples("", r.mode, row.value("size_bytes", std::uint64_t{0}), samples));
  }
  return r;
}

// survey: each link direction of the first pass, its rounds in GB/s; the mode names the
// hosts and rails, so that surveys of two clusters are refused, not matched by rank.
Loaded load_survey(const std::string& shown, const nlohmann::json& j) {
  Loaded r;
  r.kind = Kind::survey;
  r.path = shown;
  r.unit = "GB/s";
  r.higher_is_better = true;
  r.started = started_of(j);
  std::vector<std::string> hosts;
  std::vector<std::vector<std::string>> nics;
  if (!j.contains("hosts") || !j["hosts"].is_array() || !j.contains("records") || !j["records"].is_array())
    throw UsageError(fmt::format("'{}' is a survey JSON without its hosts and records", shown));
  for (const auto& h : j["hosts"]) {
    if (!h.is_object() || !h.contains("host") || !h["host"].is_string()) continue;
    hosts.push_back(h["host"].get<std::string>());
    std::vector<std::string> names;
    if (h.contains("nics") && h["nics"].is_array())
      for (const auto& n : h["nics"])
        if (n.is_object() && n.contains("name") && n["name"].is_string()) names.push_back(n["name"].get<std::string>());
    nics.push_back(names);
  }
  std::vector<std::string> sorted = hosts;
  std::sort(sorted.begin(), sorted.end());
  const std::string rails = nics.empty() ? "" : join(nics.front(), ",");
  r.mode = fmt::format("{} hosts ({}), rails {}", hosts.size(), join(sorted, ","), rails.empty() ? "-" : rails);
  r.description = fmt::format("survey of {} hosts, rails {}", hosts.size(), rails.empty() ? "-" : rails);
  const auto name = [&](int h, int rail) {
    if (h < 0 || static_cast<std::size_t>(h) >= hosts.size()) return std::string("?");
    const auto& n = nics[static_cast<std::size_t>(h)];
    return rail >= 0 && static_cast<std::size_t>(rail) < n.size() ? hosts[static_cast<std::size_t>(h)] + " " + n[static_cast<std::size_t>(rail)]
                                                                  : hosts[static_cast<std::size_t>(h)];
  };
  for (const auto& rec : j["records"]) {
    if (!rec.is_object() || rec.value("step", "") != "bw" || rec.value("pass", 0) != 1 || rec.value("failure", "x") != "")
      continue;
    const int s = rec.value("server", -1), c = rec.value("client", -1), rail = rec.value("rail", -1);
    for (const auto& [from, to, key] : {std::tuple{c, s, "c2s_bytes_per_s"}, std::tuple{s, c, "s2c_bytes_per_s"}}) {
      std::vector<double> gbps;
      if (rec.contains(key) && rec[key].is_array())
        for (const auto& v : rec[key])
          if (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0) gbps.push_back(v.get<double>() / 1e9);
      if (!gbps.empty()) r.points.push_back(from_samples("", name(from, rail) + " -> " + name(to, rail), 0, gbps));
    }
  }
  return r;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) out.push_back(cell);
  return out;
}

// sweep.csv: one line per repetition of a point; the point is (channels, chunk, window,
// sockets), its samples the repetitions' GB/s.
Loaded load_sweep_tcp(const std::string& shown, const std::string& text) {
  Loaded r;
  r.kind = Kind::sweep_tcp;
  r.path = shown;
  r.unit = "GB/s";
  r.higher_is_better = true;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  const auto header = split_csv_line(line);
  const auto col = [&](const char* name) -> std::size_t {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw UsageError(fmt::format("'{}': the sweep CSV has no '{}' column", shown, name));
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t ch = col("channels"), chunk = col("chunk_bytes"), win = col("window"), gbps = col("GBps");
  const auto sockets_it = std::find(header.begin(), header.end(), "sockets_per_channel");
  using Key = std::tuple<long long, long long, long long, long long>;
  std::map<Key, std::vector<double>> samples;
  std::size_t bad = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto cells = split_csv_line(line);
    try {
      const long long sockets =
          sockets_it == header.end() ? 1 : std::stoll(cells.at(static_cast<std::size_t>(sockets_it - header.begin())));
      samples[{std::stoll(cells.at(ch)), std::stoll(cells.at(chunk)), std::stoll(cells.at(win)), sockets}].push_back(
          std::stod(cells.at(gbps)));
    } catch (const std::exception&) {
      ++bad;  // a cut last line (Ctrl-C mid-write is rewritten whole, but a copy may be cut)
    }
  }
  for (const auto& [k, v] : samples) {
    const auto [c, chunk_bytes, window, sockets] = k;
    r.points.push_back(from_samples("", fmt::format("{} ch x {} chunks, window {}, {} socket{}", c,
                                                    format_size(static_cast<std::uint64_t>(chunk_bytes)), window,
                                                    sockets, sockets == 1 ? "" : "s"),
                                    0, v));
  }
  r.description = fmt::format("sweep tcp, {} points{}", r.points.size(),
                              bad ? fmt::format(" ({} unreadable lines skipped)", bad) : "");
  return r;
}

}  // namespace

Loaded load(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec)) throw UsageError(fmt::format("'{}' does not exist; {}", path, kWhatWeRead));
  Loaded r;
  if (fs::is_directory(p, ec)) {
    if (fs::is_regular_file(p / "survey.json", ec)) {
      return load(path + "/survey.json");
    } else if (fs::exists(p / "execution_log.csv", ec)) {
      r = load_campaign(path, p);
    } else if (fs::is_regular_file(p / "sweep.csv", ec)) {
      r = load_sweep_tcp(path, read_regular_file(p / "sweep.csv", "sweep CSV"));
    } else {
      throw UsageError(fmt::format("'{}' is a directory with neither execution_log.csv (a profile campaign) nor "
                                   "sweep.csv (a sweep tcp run); {}", path, kWhatWeRead));
    }
  } else if (p.filename() == "execution_log.csv") {
    r = load_campaign(path, p.parent_path().empty() ? fs::path(".") : p.parent_path());
  } else {
    std::string why;
    const auto text = try_read_regular_file(p, kMaxReadBytes, &why);
    if (!text) throw UsageError(fmt::format("cannot read '{}': {}", path, why));
    const std::string& t = *text;
    if (t.size() >= 2 && static_cast<unsigned char>(t[0]) == 0x1f && static_cast<unsigned char>(t[1]) == 0x8b)
      throw UsageError(fmt::format("'{}' is gzip-compressed: gunzip it first ({})", path, kWhatWeRead));
    if (t.find('\0') != std::string::npos)
      throw UsageError(fmt::format("'{}' is a binary file; {}", path, kWhatWeRead));
    const std::size_t first = t.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) throw UsageError(fmt::format("'{}' is empty; {}", path, kWhatWeRead));
    if (t[first] == '{') {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(t);
      } catch (const nlohmann::json::exception& e) {
        throw UsageError(fmt::format("'{}' is not valid JSON ({}); {}", path, e.what(), kWhatWeRead));
      }
      if (j.is_object() && j.value("kind", "") == "p2pscope_survey") {
        r = load_survey(path, j);
      } else if (j.contains("rows") && j["rows"].is_array() && j.contains("op") && !j.contains("pattern")) {
        r = load_bench_nccl(path, j);
      } else if (!j.contains("rows") || !j["rows"].is_array() || !j.contains("pattern") || !j.contains("backend")) {
        throw UsageError(fmt::format("'{}' is JSON but not a bench gpu or bench nccl result{}; {}", path,
                                     j.contains("kind") && j["kind"].is_string()
                                         ? " (it is " + j["kind"].get<std::string>() + ")"
                                         : std::string(),
                                     kWhatWeRead));
      } else {
        r = load_bench_gpu(path, j);
      }
    } else if (t.compare(first, 9, "channels,") == 0) {
      r = load_sweep_tcp(path, t.substr(first));
    } else if (t.compare(first, 14, "config_id,src,") == 0) {
      r = load_campaign(path, p.parent_path().empty() ? fs::path(".") : p.parent_path());
    } else {
      throw UsageError(fmt::format("'{}' is none of the results compare reads ({}); its first line: '{}'", path,
                                   kWhatWeRead, t.substr(first, std::min<std::size_t>(60, t.find('\n', first) - first))));
    }
  }
  if (r.points.empty())
    throw UsageError(fmt::format("'{}' ({}) holds no measured point with samples to compare", path, kind_text(r.kind)));
  return r;
}

}  // namespace p2pscope::compare
