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
#include "analyze/compare_parts.hpp"
#include "p2pscope/bounded_json.hpp"
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
    "compare reads bench gpu and bench nccl JSON (--format json), nccl-tests output (text or -J JSON), profile "
    "campaign directories, sweep tcp CSVs "
    "(sweep.csv) and survey JSON (survey.json)";

}  // namespace

Point point_from_samples(std::string backend, std::string subject, std::uint64_t size, const std::vector<double>& samples) {
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

namespace {

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
    const auto size = row.contains("size_bytes") ? row["size_bytes"] : nlohmann::json(0);
    if (!size.is_number_unsigned() && !(size.is_number_integer() && size.get<std::int64_t>() >= 0))
      throw UsageError(fmt::format("'{}': a row's size_bytes is {}, not a size in bytes", shown,
                                   external_text(size.dump(), 40)));
    for (const double v : samples)
      if (!std::isfinite(v) || v < 0)
        throw UsageError(fmt::format("'{}': a row's samples_ns holds {}, not a time", shown, v));
    r.points.push_back(point_from_samples(backend, pair_subject(row.value("src", -1), row.value("dst", -1)),
                                          size.get<std::uint64_t>(), samples));
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
  // Over sockets or a plugin: another transport is another measurement, refused as another mode.
  const std::string transport =
      j.contains("transport") && j["transport"].is_string() ? external_text(j["transport"].get<std::string>(), 300) : "tcp";
  r.mode = fmt::format("{} hosts ({}), rails {}, over {}", hosts.size(), join(sorted, ","), rails.empty() ? "-" : rails,
                       transport);
  r.description = fmt::format("survey of {} hosts, rails {}, over {}", hosts.size(), rails.empty() ? "-" : rails, transport);
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
      if (!gbps.empty()) r.points.push_back(point_from_samples("", name(from, rail) + " -> " + name(to, rail), 0, gbps));
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
      const double rate = std::stod(cells.at(gbps));
      const long long c = std::stoll(cells.at(ch)), b = std::stoll(cells.at(chunk)), w = std::stoll(cells.at(win));
      if (!std::isfinite(rate) || rate < 0 || c < 1 || b < 1 || w < 1 || sockets < 1) {
        ++bad;  // nan, a negative rate or size: not a measured point
        continue;
      }
      samples[{c, b, w, sockets}].push_back(rate);
    } catch (const std::exception&) {
      ++bad;  // a cut last line (Ctrl-C mid-write is rewritten whole, but a copy may be cut)
    }
  }
  for (const auto& [k, v] : samples) {
    const auto [c, chunk_bytes, window, sockets] = k;
    r.points.push_back(point_from_samples("", fmt::format("{} ch x {} chunks, window {}, {} socket{}", c,
                                                    format_size(static_cast<std::uint64_t>(chunk_bytes)), window,
                                                    sockets, sockets == 1 ? "" : "s"),
                                    0, v));
  }
  r.description = fmt::format("sweep tcp, {} points{}", r.points.size(),
                              bad ? fmt::format(" ({} unreadable lines skipped)", bad) : "");
  return r;
}


// Where the JSON of a result's text starts: at its first '{', after only NCCL's own lines
// (a `bench nccl --format json > file` with NCCL_DEBUG=WARN holds "NCCL version ..."
// first); npos when the text is not JSON. `skipped`: the lines passed over.
std::size_t json_start(const std::string& t, std::size_t* skipped) {
  *skipped = 0;
  for (std::size_t at = 0; at < t.size();) {
    const std::size_t first = t.find_first_not_of(" \t\r\n", at);
    if (first == std::string::npos) return std::string::npos;
    if (t[first] == '{') return first;
    const std::size_t eol = std::min(t.find('\n', first), t.size());
    if (t.compare(first, 5, "NCCL ") != 0 && t.find(" NCCL ", first) >= eol) return std::string::npos;
    ++*skipped;
    at = eol;
  }
  return std::string::npos;
}

// A file's text, refused by name where it is no result (gzip, binary, empty).
std::string result_text(const std::string& path) {
  std::string why;
  const auto text = try_read_regular_file(fs::path(path), kMaxReadBytes, &why);
  if (!text) throw UsageError(fmt::format("cannot read '{}': {}", path, why));
  const std::string& t = *text;
  if (t.size() >= 2 && static_cast<unsigned char>(t[0]) == 0x1f && static_cast<unsigned char>(t[1]) == 0x8b)
    throw UsageError(fmt::format("'{}' is gzip-compressed: gunzip it first ({})", path, kWhatWeRead));
  if (t.find('\0') != std::string::npos) throw UsageError(fmt::format("'{}' is a binary file; {}", path, kWhatWeRead));
  if (t.find_first_not_of(" \t\r\n") == std::string::npos)
    throw UsageError(fmt::format("'{}' is empty; {}", path, kWhatWeRead));
  return *text;
}

Loaded load_json(const std::string& path, const nlohmann::json& j, std::vector<std::string> notes) {
  Loaded r;
  if (j.is_object() && j.contains("kind") && j["kind"] == "p2pscope_survey") {
    r = load_survey(path, j);
  } else if (is_bench_nccl(j)) {
    r = nccl_side({read_nccl_run(path, j)});
  } else if (tune::is_nccl_tests_json(j)) {
    r = nccl_side({nccl_tests_run(path, {tune::perf_from_nccl_tests_json(j, path)})});
  } else if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array() || !j.contains("pattern") ||
             !j.contains("backend")) {
    throw UsageError(fmt::format("'{}' is JSON but not a bench gpu or bench nccl result{}; {}", path,
                                 j.is_object() && j.contains("kind") && j["kind"].is_string()
                                     ? " (it is " + external_text(j["kind"].get<std::string>(), 60) + ")"
                                     : std::string(),
                                 kWhatWeRead));
  } else {
    r = load_bench_gpu(path, j);
  }
  r.notes.insert(r.notes.begin(), notes.begin(), notes.end());
  return r;
}

Loaded load_file(const std::string& path, const fs::path& p) {
  const std::string t = result_text(path);
  const std::size_t first = t.find_first_not_of(" \t\r\n");
  std::size_t skipped = 0;
  if (json_start(t, &skipped) != std::string::npos) {
    std::vector<std::string> notes;
    const nlohmann::json j = parse_result_json(path, t, &notes);
    try {
      return load_json(path, j, notes);
    } catch (const nlohmann::json::exception&) {  // a field of another type than its writer gives it
      throw UsageError(fmt::format("'{}' is JSON whose fields are not of the types p2pscope writes (a hand-edited or "
                                   "another tool's file?); {}", path, kWhatWeRead));
    }
  }
  if (t.compare(first, 9, "channels,") == 0) return load_sweep_tcp(path, t.substr(first));
  if (t.compare(first, 14, "config_id,src,") == 0)
    return load_campaign(path, p.parent_path().empty() ? fs::path(".") : p.parent_path());
  // Tables for people: their JSON is what compare reads (the text holds no samples).
  if (t.find("\n# p2pscope bench nccl: ") != std::string::npos || t.compare(first, 22, "# p2pscope bench nccl:") == 0)
    throw UsageError(fmt::format("'{}' is bench nccl's text table: compare reads its JSON (bench nccl --format json "
                                 "--out FILE)", path));
  if (t.find("# nThread ") != std::string::npos && t.find("busbw") != std::string::npos) {
    // nccl-tests' text: the table reader the doctor and predict --measured use.
    tune::PerfTableParser parser(path);
    for (const std::string_view line : split_lines(t)) parser.line(line);
    return nccl_side({nccl_tests_run(path, parser.finish())});
  }
  const std::size_t eol = std::min(t.find('\n', first), t.size());
  throw UsageError(fmt::format("'{}' is none of the results compare reads ({}); its first line: '{}'", path,
                               kWhatWeRead, external_text(t.substr(first, std::min<std::size_t>(60, eol - first)), 60)));
}

}  // namespace

nlohmann::json parse_result_json(const std::string& shown, const std::string& text, std::vector<std::string>* notes) {
  std::size_t skipped = 0;
  const std::size_t start = json_start(text, &skipped);
  if (start == std::string::npos) throw UsageError(fmt::format("'{}' holds no JSON object; {}", shown, kWhatWeRead));
  if (skipped)
    notes->push_back("lines of NCCL's own output before the JSON passed over (NCCL_DEBUG prints to stdout)");
  JsonLimits limits;
  limits.max_bytes = kMaxReadBytes;
  limits.max_depth = 64;             // p2pscope's results nest 6 deep
  limits.max_elements = 1u << 24;    // 16 M values: far past any result, short of exhausting memory
  limits.max_string_bytes = 1u << 20;
  const std::string_view body = std::string_view(text).substr(start);
  BoundedJson j = parse_json_bounded(body, limits);
  if (j.ok()) return std::move(j.value);
  if (j.error_byte == std::string::npos)
    throw UsageError(fmt::format("'{}' is JSON past what compare reads: {}", shown, j.error));
  const std::size_t at = std::min(start + (j.error_byte ? j.error_byte - 1 : 0), text.size());
  if (at + 1 >= text.size() || text.find_first_not_of(" \t\r\n", at) == std::string::npos)
    throw UsageError(fmt::format("'{}' ends before its JSON does: a cut file (a run stopped while writing, a copy "
                                 "cut short?)", shown));
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  const std::size_t bol = text.rfind('\n', at == 0 ? 0 : at - 1);
  const std::size_t col = at - (bol == std::string::npos || at == 0 ? 0 : bol + 1) + 1;
  const std::size_t from = at > start + 16 ? at - 16 : start;
  throw UsageError(fmt::format("'{}' is not valid JSON: it breaks at line {}, column {} (near '{}')", shown, line, col,
                               external_text(text.substr(from, at - from + 16), 40)));
}

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
    r = load_file(path, p);
  }
  if (r.points.empty())
    throw UsageError(fmt::format("'{}' ({}) holds no measured point with samples to compare", path, kind_text(r.kind)));
  return r;
}

Loaded load_side(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return load(paths.front());
  std::vector<NcclRun> runs;
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_directory(fs::path(path), ec))
      throw UsageError(fmt::format("'{}' is a directory: several results a side are bench nccl or nccl-tests files",
                                   path));
    std::vector<std::string> notes;
    const std::string text = result_text(path);
    std::size_t skipped = 0;
    if (json_start(text, &skipped) == std::string::npos && text.find("# nThread ") != std::string::npos) {
      // Repeated nccl-tests runs, one a file: their points get intervals from them all.
      tune::PerfTableParser parser(path);
      for (const std::string_view line : split_lines(text)) parser.line(line);
      runs.push_back(nccl_tests_run(path, parser.finish()));
      continue;
    }
    const nlohmann::json j = parse_result_json(path, text, &notes);
    if (tune::is_nccl_tests_json(j)) {
      runs.push_back(nccl_tests_run(path, {tune::perf_from_nccl_tests_json(j, path)}));
      continue;
    }
    if (!is_bench_nccl(j))
      throw UsageError(fmt::format("'{}' is not bench nccl JSON or nccl-tests output: several results a side are read "
                                   "for repeated bench nccl or nccl-tests runs only (other kinds: one result a side)",
                                   path));
    try {
      runs.push_back(read_nccl_run(path, j));
    } catch (const nlohmann::json::exception&) {
      throw UsageError(fmt::format("'{}' is bench nccl JSON whose fields are not of the types p2pscope writes", path));
    }
    runs.back().notes.insert(runs.back().notes.begin(), notes.begin(), notes.end());
  }
  Loaded r = nccl_side(runs);
  if (r.points.empty()) throw UsageError(fmt::format("'{}' hold no measured point to compare", r.path));
  return r;
}

}  // namespace p2pscope::compare
