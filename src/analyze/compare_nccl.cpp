// compare's bench nccl side (compare_parts.hpp): the figures a bench nccl table prints,
// its time column and busbw beside it, read from the JSON of one run or of several.
// The per-iteration event pass (p5/p50/p95) is a second measurement of the same size:
// it is not what the table's time is, so it only judges the noise where a side has a
// single figure per point, never the change itself (issue 44: a run 2x slower in its
// table read "no change" when compare looked at the event pass alone).
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "analyze/compare_parts.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::compare {
namespace {

using nlohmann::json;

std::string shown_value(const json& v) { return v.is_discarded() ? "absent" : external_text(v.dump(), 40); }

// A positive finite number, or UsageError naming where: "'a.json': allreduce @ 64 KiB: time_us is -3".
double positive(const json& v, const std::string& where, const char* key) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    throw UsageError(
        fmt::format("{}: {} is {}, not a positive number: not a bench nccl figure", where, key, shown_value(v)));
  return v.get<double>();
}

std::uint64_t size_of(const json& row, const std::string& where) {
  const json v = row.contains("size_bytes") ? row["size_bytes"] : json(json::value_t::discarded);
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
  throw UsageError(
      fmt::format("{}: size_bytes is {}, not a size in bytes (a whole number, 0 or more)", where, shown_value(v)));
}

std::vector<double> positives(const json& row, const char* key, const std::string& where, double scale) {
  std::vector<double> out;
  const auto it = row.find(key);
  if (it == row.end() || it->is_null()) return out;
  if (!it->is_array()) throw UsageError(fmt::format("{}: {} is {}, not a list of times", where, key, shown_value(*it)));
  for (const auto& v : *it) out.push_back(positive(v, where, key) * scale);
  return out;
}

// One row: the time its table printed (time_us; before 2026-11-28 the table's time was
// the event pass's median, time_ns.median), every span where --spans took several.
NcclFigures row_figures(const json& row, const std::string& where) {
  NcclFigures f;
  double time_ns = 0;
  if (row.contains("time_us")) {
    time_ns = positive(row["time_us"], where, "time_us") * 1e3;
  } else if (row.contains("time_ns") && row["time_ns"].is_object() && row["time_ns"].contains("median")) {
    time_ns = positive(row["time_ns"]["median"], where, "time_ns.median");
  } else {
    throw UsageError(fmt::format("{}: no time_us, the time bench nccl's table prints", where));
  }
  f.times_ns = positives(row, "spans_us", where, 1e3);
  if (f.times_ns.empty()) f.times_ns = {time_ns};
  if (row.contains("busbw_GBps")) {
    const json& b = row["busbw_GBps"];
    if (!b.is_number() || !std::isfinite(b.get<double>()) || b.get<double>() < 0)
      throw UsageError(fmt::format("{}: busbw_GBps is {}, not a rate (0 or more)", where, shown_value(b)));
    f.rate_k = b.get<double>() * time_ns;
  }
  f.events_ns = positives(row, "samples_ns", where, 1);
  return f;
}

// "host vm, NVIDIA H200 x 2, NCCL 2.28.3": what a change may be the machine's.
std::string machine_of(const json& j) {
  std::string host, nccl, gpus;
  for (const char* key : {"metadata", "run_metadata"}) {
    if (!j.contains(key) || !j[key].is_object()) continue;
    const json& m = j[key];
    if (m.contains("hostname") && m["hostname"].is_string()) host = m["hostname"].get<std::string>();
    if (m.contains("versions") && m["versions"].is_object() && m["versions"].contains("nccl") &&
        m["versions"]["nccl"].is_string())
      nccl = m["versions"]["nccl"].get<std::string>();
  }
  if (j.contains("topology") && j["topology"].is_object() && j["topology"].contains("gpus") &&
      j["topology"]["gpus"].is_array()) {
    std::map<std::string, int> models;
    for (const auto& g : j["topology"]["gpus"])
      if (g.is_object() && g.contains("name") && g["name"].is_string()) ++models[g["name"].get<std::string>()];
    for (const auto& [name, n] : models) gpus += (gpus.empty() ? "" : ", ") + fmt::format("{} x {}", name, n);
  }
  std::string out = "host " + (host.empty() ? std::string("?") : external_text(host, 64));
  if (!gpus.empty()) out += ", " + external_text(gpus, 120);
  if (!nccl.empty()) out += ", NCCL " + external_text(nccl, 32);
  return out;
}

void read_op(NcclRun& run, const json& op) {
  const std::string& shown = run.path;
  if (!op.is_object() || !op.contains("op") || !op["op"].is_string() || !op.contains("rows") || !op["rows"].is_array())
    throw UsageError(fmt::format("'{}': an op without its name and rows: not bench nccl JSON as it writes it", shown));
  OpSetup s;
  s.op = external_text(op["op"].get<std::string>(), 40);
  s.dtype = op.contains("dtype") && op["dtype"].is_string() ? external_text(op["dtype"].get<std::string>(), 40) : "?";
  s.ranks = op.contains("ranks") && op["ranks"].is_number_integer() ? op["ranks"].get<int>() : 0;
  for (const auto& o : run.setups)
    if (o.op == s.op) throw UsageError(fmt::format("'{}' holds {} twice: one run of each op is compared", shown, s.op));
  run.setups.push_back(s);
  // bench nccl writes one row a size, tens of them; far more is not its result (and would
  // take seconds and gigabytes to compare).
  constexpr std::size_t kMaxRows = 4096;
  if (op["rows"].size() > kMaxRows)
    throw UsageError(fmt::format("'{}': {} has {} rows, past the {} that compare reads (bench nccl writes one a size)",
                                 shown, s.op, op["rows"].size(), kMaxRows));
  if (op.contains("stopped") && op["stopped"].is_string())
    run.notes.push_back(fmt::format("'{}': {} ended early ({}): its sizes after that are missing", shown, s.op,
                                    external_text(op["stopped"].get<std::string>(), 160)));
  std::size_t bad = 0;
  for (std::size_t i = 0; i < op["rows"].size(); ++i) {
    const json& row = op["rows"][i];
    const std::string at = fmt::format("'{}': {} row {}", shown, s.op, i + 1);
    if (!row.is_object()) throw UsageError(at + " is not an object: not bench nccl JSON as it writes it");
    const std::uint64_t size = size_of(row, at);
    const std::string where = fmt::format("'{}': {} @ {}", shown, s.op, format_size(size));
    if (run.figures.count({s.op, size})) throw UsageError(where + " is there twice: one row a size");
    run.figures[{s.op, size}] = row_figures(row, where);
    bad += row.contains("check") && row["check"].is_string() && row["check"].get<std::string>() != "ok";
  }
  if (bad)
    run.notes.push_back(
        fmt::format("'{}': {} of {}'s sizes failed bench nccl's data check: their figures are of wrong "
                    "results",
                    shown, bad, s.op));
}

}  // namespace

std::string setup_text(const OpSetup& s) {
  return fmt::format("{} of {} over {} rank{}", s.op, s.dtype, s.ranks, s.ranks == 1 ? "" : "s");
}

bool is_bench_nccl(const json& j) {
  if (!j.is_object() || j.contains("pattern")) return false;
  return (j.contains("ops") && j["ops"].is_array()) || (j.contains("rows") && j["rows"].is_array() && j.contains("op"));
}

NcclRun read_nccl_run(const std::string& shown, const json& j) {
  NcclRun run;
  run.path = shown;
  for (const char* key : {"metadata", "run_metadata"})
    if (j.contains(key) && j[key].is_object() && j[key].contains("start_time") && j[key]["start_time"].is_string())
      run.started = external_text(j[key]["start_time"].get<std::string>(), 40);
  run.machine = machine_of(j);
  if (j.contains("ops")) {
    for (const auto& op : j["ops"]) read_op(run, op);
  } else {
    read_op(run, j);
  }
  return run;
}

Loaded nccl_side(const std::vector<NcclRun>& runs) {
  Loaded r;
  r.kind = Kind::bench_nccl;
  r.unit = "ns";
  const NcclRun& first = runs.front();
  r.started = first.started;
  r.machine = first.machine;
  std::map<std::pair<std::string, std::uint64_t>, NcclFigures> pooled;
  std::map<std::pair<std::string, std::uint64_t>, std::size_t> runs_with;
  for (const auto& run : runs) {
    r.files.push_back(run.path);
    r.notes.insert(r.notes.end(), run.notes.begin(), run.notes.end());
    if (run.machine != first.machine)
      r.notes.push_back(fmt::format("'{}' ran on {}, '{}' on {}: one side's runs are of two machines", first.path,
                                    first.machine, run.path, run.machine));
    for (const auto& s : run.setups) {
      const auto same = std::find_if(r.setups.begin(), r.setups.end(), [&](const OpSetup& o) { return o.op == s.op; });
      if (same == r.setups.end()) {
        r.setups.push_back(s);
      } else if (same->ranks != s.ranks || same->dtype != s.dtype) {
        throw UsageError(fmt::format("'{}' ran {} and '{}' {}: the runs of one side must be of one setup", first.path,
                                     setup_text(*same), run.path, setup_text(s)));
      }
    }
    for (const auto& [key, f] : run.figures) {
      auto& p = pooled[key];
      p.times_ns.insert(p.times_ns.end(), f.times_ns.begin(), f.times_ns.end());
      if (p.rate_k == 0) p.rate_k = f.rate_k;
      ++runs_with[key];
      if (runs.size() == 1) p.events_ns = f.events_ns;
    }
  }
  r.path = join(r.files, ", ");
  std::size_t partial = 0;
  for (const auto& [key, f] : pooled) {
    Point p = point_from_samples("", key.first, key.second, f.times_ns);
    if (f.rate_k > 0) {
      p.rate = f.rate_k / p.median;
      p.rate_lo = f.rate_k / p.hi;
      p.rate_hi = f.rate_k / p.lo;
    }
    if (!f.events_ns.empty()) {
      const auto ci = analyze::median_interval(f.events_ns);
      p.ev_lo = ci.lo_ns;
      p.ev_hi = ci.hi_ns;
      p.ev_level = ci.level;
      p.ev_n = f.events_ns.size();
    }
    partial += runs_with[key] < runs.size();
    r.points.push_back(std::move(p));
  }
  if (partial)
    r.notes.push_back(fmt::format("{} points are in some of {}'s {} runs only: they have fewer figures", partial,
                                  r.path, runs.size()));
  std::vector<std::string> ops;
  for (const auto& s : r.setups) ops.push_back(setup_text(s));
  std::size_t spans = 0;
  for (const auto& [key, f] : pooled) spans = std::max(spans, f.times_ns.size());
  r.description = fmt::format("{}, {}; {} run{}{}", first.tool, join(ops, ", "), runs.size(), runs.size() == 1 ? "" : "s",
                              spans > runs.size() ? fmt::format(", up to {} figures a point (--spans)", spans) : "");
  return r;
}

}  // namespace p2pscope::compare
