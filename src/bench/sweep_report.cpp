// Tables and JSON for a SweepResult. Bandwidths come from median times (GB/s = 1e9
// bytes/s); sizes are printed in 1024 multiples.
#include <algorithm>

#include <fmt/format.h>

#include "bench/sweep.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::bench {
namespace {

bool is_time_mode(Mode m) { return m == Mode::latency || m == Mode::blocking; }

std::string device_label(const SweepResult& r, int d) {
  const auto& n = r.device_names[static_cast<std::size_t>(d)];
  return n.rfind("host pinned", 0) == 0 ? fmt::format("{} (host)", d) : std::to_string(d);
}

std::string check_text(const SweepRow& row) {
  if (!row.checked) return "-";
  if (row.first_bad >= 0) return fmt::format("BAD@{}", row.first_bad);
  if (row.first_bad_reverse >= 0) return fmt::format("BAD(rev)@{}", row.first_bad_reverse);
  return "ok";
}

// The matrix cell: GB/s from the median (bidirectional: the total), or us.
std::string cell(const SweepResult& r, const SweepRow& row) {
  if (!row.support.ok) return "n/a (" + row.support.reason + ")";
  if (is_time_mode(r.mode)) return fixed(row.time_ns.median / 1e3, 2);
  if (r.mode == Mode::bidirectional) return fixed(gbps(2.0 * static_cast<double>(row.bytes), row.total_time_ns.median), 2);
  return fixed(gbps(static_cast<double>(row.bytes), row.time_ns.median), 2);
}

nlohmann::json stats_json(const Stats& s) {
  if (s.n == 0) return nullptr;
  return {{"n", s.n}, {"median", s.median}, {"p5", s.p5}, {"p95", s.p95}, {"p99", s.p99}, {"min", s.min},
          {"max", s.max}, {"mean", s.mean}, {"stddev", s.stddev}, {"cv", s.cv}};
}

}  // namespace

std::string describe(const SweepResult& r) {
  const std::string base = fmt::format("backend {}, {} iterations after {} warmup, median first; ", r.backend, r.iters, r.warmup);
  switch (r.mode) {
    case Mode::unidirectional:
      return base + "unidirectional: time of one transfer src -> dst, algbw = size / time (GB/s = 1e9 B/s)";
    case Mode::bidirectional:
      return base + "bidirectional: both directions at once; algbw per direction = size / its time, "
                    "total = 2 x size / time until both are done";
    case Mode::latency:
      return base + "latency: ping-pong, one-way = round trip / 2 (microseconds)";
    case Mode::blocking:
      return base + "blocking: one operation issued and waited for by the host, CLOCK_MONOTONIC (microseconds); "
                    "device_us = the same operation timed by events";
  }
  return base;
}

Table matrix_table(const SweepResult& r, std::uint64_t bytes) {
  const int n = static_cast<int>(r.device_names.size());
  std::vector<std::string> head{"src\\dst"};
  for (int d = 0; d < n; ++d) head.push_back(device_label(r, d));
  Table t(head);
  for (int s = 0; s < n; ++s) {
    std::vector<std::string> row{device_label(r, s)};
    for (int d = 0; d < n; ++d) {
      std::string c = "-";
      for (const auto& x : r.rows)
        if (x.src == s && x.dst == d && x.bytes == bytes) c = cell(r, x);
      row.push_back(c);
    }
    t.add_row(row);
  }
  return t;
}

Table rows_table(const SweepResult& r) {
  std::vector<std::string> head{"src", "dst", "size", "size_bytes"};
  if (r.mode == Mode::latency) {
    head.insert(head.end(), {"one_way_us", "p5_us", "p50_us", "p95_us", "cv_pct"});
  } else if (r.mode == Mode::blocking) {
    head.insert(head.end(), {"host_us", "p5_us", "p50_us", "p95_us", "cv_pct", "device_us"});
  } else {
    head.insert(head.end(), {"time_us", "algbw_GBps", "p5_us", "p50_us", "p95_us", "cv_pct"});
    if (r.mode == Mode::bidirectional) head.insert(head.end(), {"reverse_GBps", "total_GBps"});
  }
  head.push_back("check");
  Table t(head);
  for (const auto& x : r.rows) {
    std::vector<std::string> row{std::to_string(x.src), std::to_string(x.dst), format_size_compact(x.bytes),
                                 std::to_string(x.bytes)};
    if (!x.support.ok) {
      row.push_back("n/a (" + x.support.reason + ")");
      t.add_row(row);
      continue;
    }
    const Stats& s = x.time_ns;
    const auto us = [](double ns) { return fixed(ns / 1e3, 2); };
    const double b = static_cast<double>(x.bytes);
    if (r.mode == Mode::latency) {
      row.insert(row.end(), {us(s.median), us(s.p5), us(s.median), us(s.p95), fixed(s.cv * 100, 1)});
    } else if (r.mode == Mode::blocking) {
      row.insert(row.end(), {us(s.median), us(s.p5), us(s.median), us(s.p95), fixed(s.cv * 100, 1),
                             x.total_time_ns.n ? us(x.total_time_ns.median) : "-"});
    } else {
      row.insert(row.end(), {us(s.median), fixed(gbps(b, s.median), 2), us(s.p5), us(s.median), us(s.p95), fixed(s.cv * 100, 1)});
      if (r.mode == Mode::bidirectional)
        row.insert(row.end(), {fixed(gbps(b, x.reverse_time_ns.median), 2), fixed(gbps(2 * b, x.total_time_ns.median), 2)});
    }
    row.push_back(check_text(x));
    t.add_row(row);
  }
  return t;
}

nlohmann::json to_json(const SweepResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : r.rows) {
    nlohmann::json j = {{"src", x.src}, {"dst", x.dst}, {"size_bytes", x.bytes}, {"supported", x.support.ok}};
    if (!x.support.ok) {
      j["reason"] = x.support.reason;
      j["cell"] = "n/a (" + x.support.reason + ")";
      rows.push_back(j);
      continue;
    }
    const double b = static_cast<double>(x.bytes);
    j["time_ns"] = stats_json(x.time_ns);
    j["samples_ns"] = x.samples_ns;
    if (r.mode == Mode::unidirectional || r.mode == Mode::bidirectional) j["algbw_GBps"] = gbps(b, x.time_ns.median);
    if (r.mode == Mode::bidirectional) {
      j["reverse_time_ns"] = stats_json(x.reverse_time_ns);
      j["total_time_ns"] = stats_json(x.total_time_ns);
      j["reverse_GBps"] = gbps(b, x.reverse_time_ns.median);
      j["total_GBps"] = gbps(2 * b, x.total_time_ns.median);
    }
    if (r.mode == Mode::latency) j["one_way_us"] = x.time_ns.median / 1e3;
    if (r.mode == Mode::blocking) {
      j["host_us"] = x.time_ns.median / 1e3;
      j["device_time_ns"] = stats_json(x.total_time_ns);
    }
    j["check"] = check_text(x);
    j["first_bad_offset"] = x.first_bad >= 0 ? nlohmann::json(x.first_bad) : nlohmann::json(nullptr);
    if (x.first_bad_reverse >= 0) j["first_bad_offset_reverse"] = x.first_bad_reverse;
    j["note"] = x.note;
    rows.push_back(j);
  }
  nlohmann::json out = {{"backend", r.backend},  {"pattern", to_string(r.mode)}, {"warmup", r.warmup},
                        {"iters", r.iters},      {"devices", r.device_names},   {"description", describe(r)},
                        {"units", {{"time", "ns"}, {"bandwidth", "GB/s = 1e9 bytes/s, from the median time"},
                                   {"sizes", "bytes; K/M/G in text are 1024 multiples"}}},
                        {"data_ok", r.data_ok()}, {"rows", rows}};
  if (!r.stopped.empty()) out["stopped"] = r.stopped;
  if (r.interrupted) out["interrupted"] = true;
  std::vector<std::uint64_t> sizes;
  for (const auto& x : r.rows)
    if (std::find(sizes.begin(), sizes.end(), x.bytes) == sizes.end()) sizes.push_back(x.bytes);
  if (sizes.size() == 1) {
    out["matrix"] = {{"size_bytes", sizes[0]},
                     {"unit", is_time_mode(r.mode) ? "us" : "GB/s"},
                     {"rows", matrix_table(r, sizes[0]).to_json()}};
  }
  return out;
}

}  // namespace p2pscope::bench
