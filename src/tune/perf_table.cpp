// Result tables in NCCL logs and program output: nccl-tests' table (header, rows of
// size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong, the
// "# Avg bus bandwidth" line), `bench nccl` JSON, and "op size busbw=X GB/s" lines.
// Hand-written tokenizing: a log of millions of lines must not go through std::regex.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "p2pscope/collective.hpp"
#include "p2pscope/enum_names.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tune {
namespace {

bool to_u64(std::string_view s, std::uint64_t& v) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}
bool to_ll(std::string_view s, long long& v) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}
// A decimal (nccl-tests prints "160.70", "1e-05" in old error columns); -1 for N/A.
double num(std::string_view s) {
  if (s.empty() || s == "N/A" || s == "n/a") return -1;
  char buf[64];
  const std::size_t n = std::min(s.size(), sizeof buf - 1);
  s.copy(buf, n);
  buf[n] = 0;
  char* end = nullptr;
  const double v = std::strtod(buf, &end);
  return end == buf + n ? v : -1;
}

// "all_reduce_perf" (or a path to it) anywhere in the line -> "all_reduce".
std::string op_in(std::string_view l) {
  const auto p = l.find("_perf");
  if (p == std::string_view::npos) return {};
  std::size_t b = p;
  while (b > 0 && (std::isalnum(static_cast<unsigned char>(l[b - 1])) || l[b - 1] == '_')) --b;
  const std::string op(l.substr(b, p - b));
  return op.empty() ? std::string() : op;
}

}  // namespace

std::size_t PerfRun::wrong_rows() const {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const PerfRow& r) { return r.wrong(); }));
}

double PerfRun::peak_busbw() const {
  double best = -1;
  for (const auto& r : rows) best = std::max(best, r.busbw());
  return best;
}

PerfRun& PerfTableParser::current() {
  if (!open_) {
    if (runs_.size() >= kMaxRuns) {
      ++runs_dropped_;
      runs_.pop_back();  // keep the first runs, let the newest slot be reused
      index_.pop_back();
    }
    PerfRun r;
    r.source = source_;
    r.tool = "nccl-tests";
    r.op = pending_op_;
    runs_.push_back(std::move(r));
    index_.push_back(started_++);
    open_ = true;
  }
  return runs_.back();
}

// The column titles, e.g. "size count type redop root time algbw busbw #wrong [i_min i_max
// i_p99 i_cv%] time algbw busbw #wrong [...] [timestamp]": where each figure is. Read by
// name, never by position: -I's four columns per half moved the in-place figures, and
// i_p99 read as a busbw made 2779 GB/s of 4 H200s (issue 44).
bool PerfTableParser::header(std::string_view l) {
  const auto t = split_words(l.substr(l.find('#') + 1));
  Columns c;
  c.size = c.count = c.type = c.redop = -1;
  Half* half = nullptr;
  bool cpu = false;
  for (int i = 0; i < static_cast<int>(t.size()); ++i) {
    const std::string_view w = t[static_cast<std::size_t>(i)];
    if (w == "size") c.size = i;
    else if (w == "count") c.count = i;
    else if (w == "type") c.type = i;
    else if (w == "redop") c.redop = i;
    else if (w == "time" || w == "cputime") {
      cpu = cpu || w == "cputime";
      half = c.oop.time < 0 ? &c.oop : c.ip.time < 0 ? &c.ip : nullptr;
      if (half) half->time = i;
    } else if (half && w == "algbw") half->algbw = i;
    else if (half && w == "busbw") half->busbw = i;
    else if (half && (w == "#wrong" || w == "error")) half->wrong = i;  // "error": nccl-tests before 2.0's max error
    else if (half && w == "i_cv%") half->cv = i;
  }
  if (c.size != 0 || c.count < 0 || c.oop.time < 0 || c.oop.busbw < 0) return false;
  for (int i : {c.count, c.type, c.redop, c.oop.time, c.oop.algbw, c.oop.busbw, c.oop.wrong, c.oop.cv, c.ip.time,
                c.ip.algbw, c.ip.busbw, c.ip.wrong, c.ip.cv})
    c.needed = std::max(c.needed, i + 1);
  cols_ = c;
  pending_cpu_time_ = cpu;
  return true;
}

bool PerfTableParser::row(std::string_view l) {
  const auto t = split_words(l);
  PerfRow r;
  if (static_cast<int>(t.size()) < cols_.needed || !to_u64(t[0], r.size_bytes) ||
      !to_u64(t[static_cast<std::size_t>(cols_.count)], r.count))
    return false;
  const auto at = [&](int i) { return i < 0 ? std::string_view() : t[static_cast<std::size_t>(i)]; };
  const auto gbps = [&](int i) { return num(at(i)) < 0 ? -1 : num(at(i)) * 1e9; };
  const auto wrong = [&](int i, long long& into) {
    long long w = -1;
    if (to_ll(at(i), w)) into = w;
  };
  r.type = std::string(at(cols_.type));
  r.redop = std::string(at(cols_.redop));
  r.oop_time_us = num(at(cols_.oop.time));
  r.oop_algbw = gbps(cols_.oop.algbw);
  r.oop_busbw = gbps(cols_.oop.busbw);
  r.oop_cv_pct = num(at(cols_.oop.cv));
  wrong(cols_.oop.wrong, r.oop_wrong);
  r.ip_time_us = num(at(cols_.ip.time));
  r.ip_algbw = gbps(cols_.ip.algbw);
  r.ip_busbw = gbps(cols_.ip.busbw);
  r.ip_cv_pct = num(at(cols_.ip.cv));
  wrong(cols_.ip.wrong, r.ip_wrong);
  auto& run = runs_.back();
  if (run.rows.size() < kMaxRows) run.rows.push_back(std::move(r));
  else ++run.rows_dropped;
  return true;
}

bool PerfTableParser::line(std::string_view l) {
  while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.remove_suffix(1);
  const auto first = l.find_first_not_of(" \t");
  if (first == std::string_view::npos) return false;
  if (l[first] == '#') {
    if (const std::string op = op_in(l); !op.empty()) pending_op_ = op;  // "# Collective test starting: all_reduce_perf"
    if (const auto v = l.find("nccl-tests version "); v != std::string_view::npos) {
      const auto w = split_words(l.substr(v + 19));
      if (!w.empty()) pending_version_ = external_text(w[0], 32);
      return true;
    }
    if (l.find("nThread") != std::string_view::npos) {  // a new nccl-tests run begins
      open_ = false;
      pending_ranks_ = 0;
      pending_gpu_.clear();
      return true;
    }
    const auto words = split_words(l.substr(first + 1));
    if (!words.empty() && words[0] == "Rank") {  // "#  Rank  0 Group  0 Pid 2509 on vm device  0 [0000:00:06] NVIDIA H200"
      ++pending_ranks_;
      if (const auto b = l.rfind(']'); b != std::string_view::npos && pending_gpu_.empty())
        pending_gpu_ = external_text(trim(l.substr(b + 1)), 80);
      return true;
    }
    if (l.find("algbw") != std::string_view::npos && l.find("size") != std::string_view::npos) {
      if (!header(l)) return false;
      if (!open_ || !runs_.back().rows.empty()) open_ = false;
      PerfRun& run = current();
      run.version = pending_version_;
      run.nranks = pending_ranks_ > 0 ? pending_ranks_ : -1;
      run.gpu = pending_gpu_;
      run.cpu_time = pending_cpu_time_;
      run.per_iteration = cols_.oop.cv >= 0;
      return true;
    }
    if (const auto p = l.find("Avg bus bandwidth"); p != std::string_view::npos && open_) {
      const auto colon = l.find(':', p);
      if (colon != std::string_view::npos) {
        const auto w = split_words(l.substr(colon + 1));
        if (!w.empty() && num(w[0]) >= 0) runs_.back().avg_busbw = num(w[0]) * 1e9;
      }
      runs_.back().complete = true;
      open_ = false;
      return true;
    }
    return false;
  }
  // "allreduce 64MiB busbw=3.99 GB/s": what a program printed about itself.
  if (const auto p = l.find("busbw="); p != std::string_view::npos) {
    const auto w = split_words(l.substr(0, p));
    const auto v = split_words(l.substr(p + 6));
    if (w.size() >= 2 && !v.empty() && num(v[0]) >= 0 && v.size() >= 2 && v[1] == "GB/s") {
      PerfRun r;
      r.source = source_;
      r.tool = "printed";
      r.op = std::string(w[w.size() - 2]);
      r.complete = true;
      PerfRow row;
      try {
        row.size_bytes = parse_size(std::string(w.back()));
      } catch (const Error&) {
      }
      row.oop_busbw = num(v[0]) * 1e9;
      r.rows.push_back(row);
      if (runs_.size() < kMaxRuns) {
        runs_.push_back(std::move(r));
        index_.push_back(started_++);
      } else {
        ++runs_dropped_;
      }
      open_ = false;
      return true;
    }
  }
  if (!open_) return false;
  return row(l);
}

std::vector<PerfRun> PerfTableParser::finish(const std::vector<std::string>* transports) {
  std::vector<PerfRun> out;
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    auto& r = runs_[i];
    if (transports && index_[i] < transports->size() && !(*transports)[index_[i]].empty())
      r.transport = (*transports)[index_[i]];
    if (!r.rows.empty() || r.avg_busbw > 0) out.push_back(std::move(r));
  }
  runs_.clear();
  index_.clear();
  open_ = false;
  return out;
}

namespace {

// One row of bench nccl's JSON, every figure checked: the message names the file, the row
// and the field, never the JSON library's own text.
PerfRow bench_row(const nlohmann::json& row, const std::string& source, std::size_t n) {
  const std::string where = "'" + source + "', row " + std::to_string(n);
  if (!row.is_object()) throw UsageError(where + " is not an object");
  // A figure: absent gives `absent`; present, a finite number >= 0 (a negative or
  // non-numeric figure is no measurement).
  const auto figure = [&](const nlohmann::json& o, const char* key, double absent) {
    if (!o.contains(key) || o[key].is_null()) return absent;
    if (!o[key].is_number()) throw UsageError(where + ": \"" + std::string(key) + "\" is not a number");
    const double v = o[key].get<double>();
    if (!(v >= 0) || v > 1e18) throw UsageError(where + ": \"" + std::string(key) + "\" is " + std::to_string(v) + ", not a measurement");
    return v;
  };
  const auto text = [&](const char* key) {
    return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : std::string();
  };
  PerfRow p;
  if (!row.contains("size_bytes") || !row["size_bytes"].is_number_integer() || row["size_bytes"].get<long long>() < 0)
    throw UsageError(where + ": \"size_bytes\" is missing or not a size in bytes (a whole number >= 0)");
  p.size_bytes = row["size_bytes"].get<std::uint64_t>();
  p.count = static_cast<std::uint64_t>(figure(row, "count", 0));
  p.type = text("type");
  // time_us: nccl-tests' span (since bench nccl timed as nccl-tests does); older files
  // carried the per-iteration median as time_ns.
  if (row.contains("time_us")) p.oop_time_us = figure(row, "time_us", -1);
  else if (row.contains("time_ns") && row["time_ns"].is_object()) p.oop_time_us = figure(row["time_ns"], "median", -1e3) / 1e3;
  if (row.contains("in_place") && row["in_place"].is_object()) {
    const auto& ip = row["in_place"];
    p.ip_time_us = figure(ip, "time_us", -1);
    p.ip_algbw = figure(ip, "algbw_GBps", -1) * 1e9;
    p.ip_busbw = figure(ip, "busbw_GBps", -1) * 1e9;
  }
  p.oop_algbw = figure(row, "algbw_GBps", -1) * 1e9;
  p.oop_busbw = figure(row, "busbw_GBps", -1) * 1e9;
  p.oop_wrong = text("check").empty() || text("check") == "ok" ? 0 : 1;
  return p;
}

}  // namespace

PerfRun perf_from_bench_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array())
    throw UsageError("'" + source + "' is not a `p2pscope bench nccl --format json` document (no \"rows\" array)");
  PerfRun r;
  r.source = source;
  r.tool = "bench nccl";
  r.complete = true;  // written whole at the end of its run
  std::string op = j.contains("op") && j["op"].is_string() ? j["op"].get<std::string>() : std::string();
  // bench nccl says "allreduce"; nccl-tests says "all_reduce": compare in one language.
  if (const auto c = find_enum(kCollectiveOps, op)) op = std::string(collective_row(*c).nccl_tests_name);
  r.op = op;
  if (j["rows"].size() > PerfTableParser::kMaxRows)
    throw UsageError("'" + source + "' has " + std::to_string(j["rows"].size()) + " rows, more than the " +
                     std::to_string(PerfTableParser::kMaxRows) + " the doctor reads from one table: split it, or give the run's own file");
  std::size_t n = 0;
  for (const auto& row : j["rows"]) r.rows.push_back(bench_row(row, source, ++n));
  return r;
}

bool is_nccl_tests_json(const nlohmann::json& j) {
  return j.is_object() && j.contains("results") && j["results"].is_array() && j.contains("config") &&
         j["config"].is_object();
}

PerfRun perf_from_nccl_tests_json(const nlohmann::json& j, const std::string& source) {
  const std::string file = "'" + external_text(source, 300) + "'";
  if (!is_nccl_tests_json(j))
    throw UsageError(file + " is not nccl-tests' -J JSON (no \"results\" list beside a \"config\")");
  PerfRun r;
  r.source = source;
  r.tool = "nccl-tests";
  const auto& cfg = j["config"];
  if (j.contains("args") && j["args"].is_array() && !j["args"].empty() && j["args"][0].is_string())
    r.op = op_in(j["args"][0].get<std::string>());  // the binary: all_reduce_perf
  if (cfg.contains("devices") && cfg["devices"].is_array()) {
    r.nranks = static_cast<int>(std::min<std::size_t>(cfg["devices"].size(), 1u << 20));
    const auto& d0 = cfg["devices"].empty() ? nlohmann::json() : cfg["devices"][0];
    if (d0.is_object() && d0.contains("device_info") && d0["device_info"].is_string())
      r.gpu = external_text(d0["device_info"].get<std::string>(), 80);
  }
  if (r.nranks == 0) r.nranks = -1;
  r.per_iteration = cfg.contains("per_iter_timing") && cfg["per_iter_timing"] == "true";
  const auto& results = j["results"];
  if (results.size() > PerfTableParser::kMaxRows)
    throw UsageError(fmt::format("{} has {} results, more than the {} read from one table: give the run's own file",
                                 file, results.size(), PerfTableParser::kMaxRows));
  std::size_t n = 0;
  for (const auto& x : results) {
    const std::string where = fmt::format("{}, result {}", file, ++n);
    if (!x.is_object()) throw UsageError(where + " is not an object");
    if (!x.contains("size") || !x["size"].is_number_integer() || x["size"].get<long long>() < 0)
      throw UsageError(where + ": \"size\" is missing or not a size in bytes (a whole number >= 0)");
    PerfRow row;
    row.size_bytes = x["size"].get<std::uint64_t>();
    if (x.contains("count") && x["count"].is_number_integer() && x["count"].get<long long>() >= 0)
      row.count = x["count"].get<std::uint64_t>();
    for (const char* key : {"type", "redop"})
      if (x.contains(key) && x[key].is_string()) (key[0] == 't' ? row.type : row.redop) = external_text(x[key].get<std::string>(), 32);
    // A half's figure: a finite number >= 0; absent or not a number (an unchecked
    // "nwrong"), -1. A negative or absurd figure is refused, not read.
    const auto half = [&](const char* name, const char* key) {
      if (!x.contains(name) || !x[name].is_object() || !x[name].contains(key) || !x[name][key].is_number()) return -1.0;
      const double v = x[name][key].get<double>();
      if (!(v >= 0) || v > 1e18)
        throw UsageError(fmt::format("{}: {}.{} is {}, not a measurement", where, name, key, v));
      return v;
    };
    row.oop_time_us = half("out_of_place", "time");
    row.oop_algbw = half("out_of_place", "alg_bw") < 0 ? -1 : half("out_of_place", "alg_bw") * 1e9;
    row.oop_busbw = half("out_of_place", "bus_bw") < 0 ? -1 : half("out_of_place", "bus_bw") * 1e9;
    row.oop_wrong = static_cast<long long>(half("out_of_place", "nwrong"));
    row.ip_time_us = half("in_place", "time");
    row.ip_algbw = half("in_place", "alg_bw") < 0 ? -1 : half("in_place", "alg_bw") * 1e9;
    row.ip_busbw = half("in_place", "bus_bw") < 0 ? -1 : half("in_place", "bus_bw") * 1e9;
    row.ip_wrong = static_cast<long long>(half("in_place", "nwrong"));
    row.oop_cv_pct = half("out_of_place_per_iter", "cv_pct");
    if (x.contains("out_of_place_per_iter") && x["out_of_place_per_iter"].is_object() &&
        x["out_of_place_per_iter"].contains("times_us") && x["out_of_place_per_iter"]["times_us"].is_array())
      for (const auto& v : x["out_of_place_per_iter"]["times_us"])
        if (v.is_number() && v.get<double>() > 0 && v.get<double>() < 1e12 && row.oop_iter_us.size() < 100000)
          row.oop_iter_us.push_back(v.get<double>());
    row.ip_cv_pct = half("in_place_per_iter", "cv_pct");
    if (row.oop_time_us < 0 && row.ip_time_us < 0) throw UsageError(where + ": no \"time\" in either half");
    r.rows.push_back(std::move(row));
  }
  if (j.contains("average_bus_bandwidth") && j["average_bus_bandwidth"].is_object()) {
    const auto& a = j["average_bus_bandwidth"];
    if (a.contains("bandwidth") && a["bandwidth"].is_number() && a["bandwidth"].get<double>() >= 0 &&
        a["bandwidth"].get<double>() < 1e9) {
      r.avg_busbw = a["bandwidth"].get<double>() * 1e9;
      r.complete = true;  // written at the end of the run
    }
  }
  return r;
}

nlohmann::json to_json(const PerfRun& r) {
  auto gbps = [](double v) { return v < 0 ? nlohmann::json() : nlohmann::json(v / 1e9); };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : r.rows)
    rows.push_back({{"size_bytes", x.size_bytes}, {"count", x.count}, {"type", x.type}, {"redop", x.redop},
                    {"out_of_place", {{"time_us", x.oop_time_us < 0 ? nlohmann::json() : nlohmann::json(x.oop_time_us)},
                                      {"algbw_GBps", gbps(x.oop_algbw)}, {"busbw_GBps", gbps(x.oop_busbw)}, {"wrong", x.oop_wrong}}},
                    {"in_place", {{"time_us", x.ip_time_us < 0 ? nlohmann::json() : nlohmann::json(x.ip_time_us)},
                                  {"algbw_GBps", gbps(x.ip_algbw)}, {"busbw_GBps", gbps(x.ip_busbw)}, {"wrong", x.ip_wrong}}}});
  return {{"source", r.source}, {"tool", r.tool}, {"op", r.op}, {"transport", r.transport},
          {"avg_busbw_GBps", gbps(r.avg_busbw)}, {"peak_busbw_GBps", gbps(r.peak_busbw())},
          {"rows_dropped", r.rows_dropped}, {"version", r.version}, {"ranks", r.nranks}, {"gpu", r.gpu},
          {"cpu_time", r.cpu_time}, {"complete", r.complete}, {"wrong_rows", r.wrong_rows()}, {"rows", rows}};
}

}  // namespace p2pscope::tune

namespace p2pscope::tune {

std::string p2p_against_average(const std::vector<const PerfRun*>& runs) {
  const PerfRun* p2p = nullptr;
  const PerfRun* avg = nullptr;
  for (const PerfRun* r : runs) {
    if (!r) continue;
    if (r->op == "sendrecv" && !p2p && r->peak_busbw() > 0) p2p = r;
    if (r->op != "sendrecv" && r->avg_busbw > 0 && !avg) avg = r;
  }
  if (!p2p || !avg) return "";
  const auto gb = [](double b) { return fmt::format("{:.2f} GB/s", b / 1e9); };
  // The collective's own busbw at the point-to-point table's largest size, where it has it.
  std::uint64_t top = 0;
  for (const PerfRow& row : p2p->rows) top = std::max(top, row.size_bytes);
  std::string at;
  for (const PerfRow& row : avg->rows)
    if (row.size_bytes == top && row.busbw() > 0) at = fmt::format(", and its busbw at that size is {}", gb(row.busbw()));
  return fmt::format(
      "not one figure: {} ({}) is point to point, one link one way, peak {}; {}'s {} is nccl-tests' Avg bus "
      "bandwidth of {}, an average over its whole size sweep (small sizes included){}. Set a size's busbw beside the "
      "point-to-point figure at that size, or peak beside peak",
      p2p->source, p2p->tool, gb(p2p->peak_busbw()), avg->source, gb(avg->avg_busbw),
      avg->op.empty() ? "a collective" : avg->op, at);
}

}  // namespace p2pscope::tune
