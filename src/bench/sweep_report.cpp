// Tables and JSON for a SweepResult. Bandwidths come from median times (GB/s = 1e9
// bytes/s); sizes are printed in 1024 multiples.
#include <algorithm>

#include <fmt/format.h>

#include "bench/sweep.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::bench {
namespace {

bool is_time_mode(Mode m) { return m == Mode::latency || m == Mode::blocking; }

// bytes over a time in ns as bytes per second, the base the GB/s columns convert from.
double rate(double bytes, double ns) { return gbps(bytes, ns) * 1e9; }

using out::Column;
using out::Hint;
using out::Unit;
Column us_col(std::string name) { return {std::move(name), Hint::duration, Unit::us, 2}; }
Column gbps_col(std::string name) { return {std::move(name), Hint::byte_rate, Unit::GBps, 2}; }
Column cv_col() { return {"cv_pct", Hint::ratio, Unit::percent, 1}; }

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

// The matrix cell: the rate from the median (bidirectional: the total), or the time;
// the column says which unit (matrix_columns).
out::Cell cell(const SweepResult& r, const SweepRow& row) {
  if (!row.support.ok) return "n/a (" + row.support.reason + ")";
  if (is_time_mode(r.mode)) return row.time_ns.median;
  if (r.mode == Mode::bidirectional) return rate(2.0 * static_cast<double>(row.bytes), row.total_time_ns.median);
  return rate(static_cast<double>(row.bytes), row.time_ns.median);
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

out::ResultTable matrix_table(const SweepResult& r, std::uint64_t bytes) {
  const int n = static_cast<int>(r.device_names.size());
  std::vector<Column> cols{{"src\\dst"}};
  for (int d = 0; d < n; ++d)
    cols.push_back(is_time_mode(r.mode) ? us_col(device_label(r, d)) : gbps_col(device_label(r, d)));
  out::ResultTable t(cols);
  for (int s = 0; s < n; ++s) {
    std::vector<out::Cell> row{device_label(r, s)};
    for (int d = 0; d < n; ++d) {
      out::Cell c = "-";
      for (const auto& x : r.rows)
        if (x.src == s && x.dst == d && x.bytes == bytes) c = cell(r, x);
      row.push_back(c);
    }
    t.add_row(row);
  }
  return t;
}

namespace {
std::vector<Column> rows_columns(Mode mode) {
  std::vector<Column> cols{
      {"src", Hint::count}, {"dst", Hint::count}, {"size", Hint::size}, {"size_bytes", Hint::bytes}};
  if (mode == Mode::latency) {
    cols.insert(cols.end(), {us_col("one_way_us"), us_col("p5_us"), us_col("p50_us"), us_col("p95_us"), cv_col()});
  } else if (mode == Mode::blocking) {
    cols.insert(cols.end(), {us_col("host_us"), us_col("p5_us"), us_col("p50_us"), us_col("p95_us"), cv_col(),
                             us_col("device_us")});
  } else {
    cols.insert(cols.end(), {us_col("time_us"), gbps_col("algbw_GBps"), us_col("p5_us"), us_col("p50_us"),
                             us_col("p95_us"), cv_col()});
    if (mode == Mode::bidirectional) cols.insert(cols.end(), {gbps_col("reverse_GBps"), gbps_col("total_GBps")});
  }
  cols.push_back({"check"});
  return cols;
}
}  // namespace

out::ResultTable rows_table(const SweepResult& r) {
  out::ResultTable t(rows_columns(r.mode));
  for (const auto& x : r.rows) {
    std::vector<out::Cell> row{x.src, x.dst, x.bytes, x.bytes};
    if (!x.support.ok) {
      row.push_back("n/a (" + x.support.reason + ")");
      t.add_row(row);
      continue;
    }
    const Stats& s = x.time_ns;
    const double b = static_cast<double>(x.bytes);
    if (r.mode == Mode::latency) {
      row.insert(row.end(), {s.median, s.p5, s.median, s.p95, s.cv});
    } else if (r.mode == Mode::blocking) {
      row.insert(row.end(), {s.median, s.p5, s.median, s.p95, s.cv,
                             x.total_time_ns.n ? out::Cell(x.total_time_ns.median) : out::Cell("-")});
    } else {
      row.insert(row.end(), {s.median, rate(b, s.median), s.p5, s.median, s.p95, s.cv});
      if (r.mode == Mode::bidirectional)
        row.insert(row.end(), {rate(b, x.reverse_time_ns.median), rate(2 * b, x.total_time_ns.median)});
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
                     {"rows", matrix_table(r, sizes[0]).rendered().to_json()}};
  }
  return out;
}

}  // namespace p2pscope::bench
