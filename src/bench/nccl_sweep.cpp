// run_nccl_sweep: bench nccl's sizes, one collective each, with the data check
// (nccl_sweep.hpp). The loop used to live in the CLI, and predict --measure had its own.
#include "bench/nccl_sweep.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "p2pscope/phase_trace.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::bench {
namespace {

// nccl-tests' algbw and busbw of the row's spans (formulas.hpp).
void set_rates(const NcclSweepResult& res, NcclSweepRow& row) {
  const double S = static_cast<double>(row.bytes);
  row.algbw_GBps = algbw_gbps(S, row.span_ns * 1e-9);
  row.busbw_GBps = busbw_gbps(res.op, res.ranks, S, row.span_ns * 1e-9);
  if (row.span_in_place_ns > 0) {
    row.algbw_in_place_GBps = algbw_gbps(S, row.span_in_place_ns * 1e-9);
    row.busbw_in_place_GBps = busbw_gbps(res.op, res.ranks, S, row.span_in_place_ns * 1e-9);
  }
}

NcclSweepRow to_row(const NcclSweepResult& res, CollectiveResult&& c) {
  NcclSweepRow row;
  row.bytes = c.bytes;
  row.count = c.bytes / type_size(res.type);
  row.time_ns = compute_stats(c.elapsed_ns);
  row.span_ns = c.span_ns;
  row.spans_ns = c.spans_ns.empty() ? std::vector<double>{c.span_ns} : c.spans_ns;
  row.span_in_place_ns = c.span_in_place_ns;
  set_rates(res, row);
  row.samples_ns = std::move(c.elapsed_ns);
  row.by_rank_ns = std::move(c.by_rank_ns);
  row.first_bad = c.first_bad;
  row.bad_rank = c.bad_rank;
  row.held_start = c.held_start;
  return row;
}

// Iterations a span at `bytes` (NcclSweepSpec::span_target_ns): the size before it,
// scaled by bytes, estimates an iteration; a latency-bound size's estimate is high,
// which only keeps its count at collective.iters.
// Ranks of a launch each time their own spans, so they could choose different counts
// and leave NCCL calls unmatched: there every size runs collective.iters.
int iters_for(const NcclSweepSpec& spec, bool one_process, const std::vector<NcclSweepRow>& rows, std::uint64_t bytes) {
  const int most = spec.collective.iters;
  if (!one_process || !(spec.span_target_ns > 0) || rows.empty() || rows.back().bytes == 0) return most;
  const double est = rows.back().span_ns * static_cast<double>(bytes) / static_cast<double>(rows.back().bytes);
  if (!(est > 0)) return most;
  const double want = std::ceil(spec.span_target_ns / est);
  return static_cast<int>(std::clamp(want, static_cast<double>(std::min(kMinSpanIters, most)), static_cast<double>(most)));
}

NcclSweepResult start_result(const NcclSweepSpec& spec, CollectiveRanks* ranks) {
  // Without NCCL, run_collective throws "not built in" with what to do (a rank object
  // exists only where NCCL does, or as a test's double).
  if (!ranks && !nccl_collectives_built()) run_collective(spec.collective);
  if (spec.sizes.empty()) throw UsageError("bench nccl: no sizes given");
  if (spec.collective.iters < 1) throw UsageError("--iters must be at least 1");
  if (spec.collective.warmup < 0) throw UsageError("--warmup must be 0 or more");
  NcclSweepResult res;
  res.op = spec.collective.op;
  res.type = spec.collective.type;
  res.warmup = spec.collective.warmup;
  res.iters = spec.collective.iters;
  if (ranks && !ranks->local_gpus().empty()) {
    res.gpus = ranks->local_gpus();
  } else if (ranks) {
    for (int r = 0; r < ranks->ranks(); ++r) {
      res.gpus.push_back(r);
      res.rank_names.push_back(ranks->rank_name(r));
    }
  } else {
    if (spec.collective.gpus.empty()) throw UsageError("bench nccl: no GPU to run on (an empty GPU list)");
    res.gpus = spec.collective.gpus;
  }
  res.ranks = static_cast<int>(res.gpus.size());
  return res;
}

// NcclSweepSpec::settle_iters calls of the first size, in runs of at most 100 (the
// blocking start holds a bounded queue), nothing timed or checked.
void settle(CollectiveRanks& ranks, CollectiveSpec one, std::uint64_t bytes, int iters, NcclSweepResult& res) {
  one.bytes = bytes;
  one.warmup = 0;
  one.in_place = false;
  one.per_iteration = false;
  one.check = false;
  one.spans = 1;
  const std::int64_t t0 = monotonic_ns();
  for (int left = iters; left > 0; left -= one.iters) {
    one.iters = std::min(left, 100);
    ranks.run(one);
  }
  res.settle_iters = iters;
  res.settle_s = static_cast<double>(monotonic_ns() - t0) * 1e-9;
}

// The later spans of the spread sizes (NcclSweepSpec::spread_spans_max_bytes): one pass
// over them per span, each a whole nccl-tests measurement (warm-up, one op and a wait,
// the span), unchecked and without the event pass, which the first pass made. A failure
// or a stop keeps every span taken so far. Every rank of a launch makes the same calls.
void spread_spans(const NcclSweepSpec& spec, CollectiveRanks& ranks, CollectiveSpec one, NcclSweepResult& res) {
  const int spans = std::max(1, spec.collective.spans);
  one.spans = 1;
  one.check = false;
  one.per_iteration = false;
  std::vector<std::vector<double>> in_place(res.rows.size());
  for (std::size_t i = 0; i < res.rows.size(); ++i)
    if (res.rows[i].span_in_place_ns > 0) in_place[i].push_back(res.rows[i].span_in_place_ns);
  for (int pass = 1; pass < spans && res.stopped.empty(); ++pass)
    for (std::size_t i = 0; i < res.rows.size(); ++i) {
      NcclSweepRow& row = res.rows[i];
      if (row.bytes > spec.spread_spans_max_bytes) continue;
      if (spec.stop && spec.stop->load()) {
        res.interrupted = true;
        res.stopped = fmt::format("interrupted in pass {} of {} over the sizes up to {}: those sizes keep {} span(s)",
                                  pass + 1, spans, format_size(spec.spread_spans_max_bytes), pass);
        break;
      }
      one.bytes = row.bytes;
      one.iters = row.iters;  // as its first span ran
      try {
        const CollectiveResult c = ranks.run(one);
        row.spans_ns.push_back(c.span_ns);
        if (c.span_in_place_ns > 0) in_place[i].push_back(c.span_in_place_ns);
      } catch (const std::exception& e) {
        res.stopped = fmt::format("stopped in pass {} of {} at {}: {}", pass + 1, spans, format_size(row.bytes), e.what());
        break;
      }
    }
  for (std::size_t i = 0; i < res.rows.size(); ++i) {
    NcclSweepRow& row = res.rows[i];
    if (row.bytes > spec.spread_spans_max_bytes) continue;
    row.spans_spread = true;
    row.span_ns = median(row.spans_ns);
    if (!in_place[i].empty()) row.span_in_place_ns = median(in_place[i]);
    set_rates(res, row);
  }
}

}  // namespace

std::string NcclSweepRow::check() const {
  return first_bad < 0 ? "ok" : fmt::format("BAD rank {} @{}", bad_rank, first_bad);
}

bool NcclSweepResult::all_held() const {
  for (const auto& r : rows)
    if (!r.held_start) return false;
  return true;
}

std::string NcclSweepResult::first_failure() const {
  for (const auto& r : rows) {
    if (r.first_bad < 0) continue;
    const auto who = static_cast<std::size_t>(r.bad_rank);
    const std::string name = !rank_names.empty() && who < rank_names.size() ? rank_names[who]
                             : who < gpus.size()                            ? fmt::format("GPU {}", gpus[who])
                                                                            : fmt::format("rank {}", r.bad_rank);
    return fmt::format("{} at {}: rank {} ({}) holds a wrong value at element {}", to_string(op), format_size(r.bytes),
                       r.bad_rank, name, r.first_bad);
  }
  return "";
}

NcclSweepResult run_nccl_sweep(const NcclSweepSpec& spec, CollectiveRanks* ranks) {
  NcclSweepResult res = start_result(spec, ranks);
  CollectiveSpec one = spec.collective;
  one.gpus = res.gpus;
  std::unique_ptr<CollectiveRanks> local;  // one process: communicators made once for every size
  if (!ranks) ranks = (local = make_local_collectives(res.gpus)).get();
  const bool one_process = !ranks->local_gpus().empty();
  trace_phase("bench nccl: communicators ready");
  if (spec.settle_iters > 0) settle(*ranks, one, spec.sizes.front(), spec.settle_iters, res);
  trace_phase("bench nccl: settled");
  const int spans = std::max(1, one.spans);
  const bool spread = spans > 1 && spec.spread_spans_max_bytes > 0;
  for (std::uint64_t bytes : spec.sizes) {
    one.spans = spread && bytes <= spec.spread_spans_max_bytes ? 1 : spans;
    if (spec.stop && spec.stop->load()) {
      res.interrupted = true;
      res.stopped = fmt::format("interrupted before {}: {} of {} sizes measured", format_size(bytes), res.rows.size(),
                                spec.sizes.size());
      break;
    }
    one.bytes = bytes;
    one.iters = iters_for(spec, one_process, res.rows, bytes);
    trace_phase("bench nccl: " + to_string(spec.collective.op) + " " + format_size(bytes));
    CollectiveResult c;
    try {
      c = ranks->run(one);
    } catch (const std::exception& e) {
      if (res.rows.empty()) throw;  // nothing measured yet: the plain error says it all
      res.stopped = fmt::format("stopped at {}: {}", format_size(bytes), e.what());
      break;
    }
    res.rows.push_back(to_row(res, std::move(c)));
    res.rows.back().iters = one.iters;
    if (spec.on_row) spec.on_row(res.rows.size(), spec.sizes.size(), res.rows.back());
  }
  if (spread) spread_spans(spec, *ranks, one, res);
  return res;
}

out::ResultTable nccl_rows_table(const NcclSweepResult& r) {
  using out::Hint;
  using out::Unit;
  const out::Column us{"", Hint::duration, Unit::us, 2}, gbps{"", Hint::byte_rate, Unit::GBps, 2};
  auto named = [](out::Column c, const char* name) { return c.name = name, c; };
  out::ResultTable t({{"size", Hint::size},
                      {"size_bytes", Hint::bytes},
                      {"count", Hint::count},
                      {"type"},
                      named(us, "time_us"),
                      named(gbps, "algbw_GBps"),
                      named(gbps, "busbw_GBps"),
                      named(us, "ip_time_us"),
                      named(gbps, "ip_algbw_GBps"),
                      named(gbps, "ip_busbw_GBps"),
                      named(us, "p5_us"),
                      named(us, "p50_us"),
                      named(us, "p95_us"),
                      {"cv_pct", Hint::ratio, Unit::percent, 1},
                      {"check"}});
  const std::string type = to_string(r.type);
  // The rows hold GB/s (nccl-tests' figures); the table holds bytes/s, as every rate column.
  const auto rate = [](double GBps) { return out::Cell(GBps * 1e9); };
  for (const auto& row : r.rows) {
    const Stats& s = row.time_ns;
    const bool ip = row.span_in_place_ns > 0;
    t.add_row({row.bytes, row.bytes, row.count, type, row.span_ns, rate(row.algbw_GBps), rate(row.busbw_GBps),
               ip ? out::Cell(row.span_in_place_ns) : out::Cell("-"),
               ip ? rate(row.algbw_in_place_GBps) : out::Cell("-"), ip ? rate(row.busbw_in_place_GBps) : out::Cell("-"),
               s.p5, s.median, s.p95, s.cv, row.check()});
  }
  return t;
}

nlohmann::json nccl_rows_json(const NcclSweepResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    const Stats& s = row.time_ns;
    nlohmann::json ip = nullptr;
    if (row.span_in_place_ns > 0)
      ip = {{"time_us", row.span_in_place_ns / 1e3},
            {"algbw_GBps", row.algbw_in_place_GBps},
            {"busbw_GBps", row.busbw_in_place_GBps}};
    rows.push_back({{"size_bytes", row.bytes},
                    {"count", row.count},
                    {"type", to_string(r.type)},
                    {"time_us", row.span_ns / 1e3},
                    {"algbw_GBps", row.algbw_GBps},
                    {"busbw_GBps", row.busbw_GBps},
                    {"in_place", ip},
                    {"spans_us", [&] {
                       std::vector<double> v;
                       for (double x : row.spans_ns) v.push_back(x / 1e3);
                       return v;
                     }()},
                    {"spans_spread", row.spans_spread},
                    {"iters", row.iters},
                    {"per_iteration_ns", {{"median", s.median}, {"p5", s.p5}, {"p95", s.p95}, {"cv", s.cv}, {"n", s.n}}},
                    {"samples_ns", row.samples_ns},
                    {"check", row.check()}});
    if (!row.by_rank_ns.empty()) rows.back()["samples_ns_by_rank"] = row.by_rank_ns;
  }
  return rows;
}

}  // namespace p2pscope::bench
