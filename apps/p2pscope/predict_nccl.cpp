// predict --algo nccl (predict_nccl.hpp).
#include "predict_nccl.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/nccl_collective.hpp"
#include "bench/nccl_sweep.hpp"
#include "bench_common.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"
#include "simulate/link_set.hpp"
#include "simulate/nccl_model.hpp"

namespace p2pscope::app {
namespace {

const std::vector<std::string> kOps = {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"};

struct Cell {
  std::string op;
  int ranks = 0;
  std::uint64_t bytes = 0;
  simulate::NcclPrediction p;
  double measured_ns = NAN;
  std::string measured_from;
  double spread = NAN;  // NCCL's own spans of this cell: max / min - 1 (NaN: one span, or text)
  double measured_gpu_ns = NAN;  // bench nccl's per-iteration p50 (NaN: nccl-tests text, or not kept)
};

// A measured cell: nccl-tests' time, the file it came from, and how far its own spans
// (bench nccl --spans K) lay apart: a model cannot be judged closer than that.
struct MeasuredCell {
  double ns = NAN;
  std::string from;
  double spread = NAN;
  // The GPU's own time per iteration (bench nccl's event pass, p50): what a simulator
  // models, and what repeats between processes where the span is the host's launch rate.
  double gpu_ns = NAN;
};
// Measured cells by (op, ranks, S).
using Measured = std::map<std::tuple<std::string, int, std::uint64_t>, MeasuredCell>;

double spread_of(const std::vector<double>& spans) {
  if (spans.size() < 2) return NAN;
  const auto [lo, hi] = std::minmax_element(spans.begin(), spans.end());
  return *lo > 0 ? *hi / *lo - 1 : NAN;
}

std::vector<std::string> parse_ops(const std::string& text) {
  if (text.empty() || text == "all") return kOps;
  std::vector<std::string> out;
  for (const std::string& op : split_list(text, "--ops")) {
    if (std::find(kOps.begin(), kOps.end(), op) == kOps.end())
      throw UsageError(fmt::format("--ops '{}': no such op; the ops are: {}", op, join(kOps)));
    if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
  }
  return out;
}

std::vector<int> parse_ranks(const std::string& text, std::size_t gpus) {
  std::vector<int> out;
  if (text.empty()) {
    if (gpus > 2) out.push_back(2);
    out.push_back(static_cast<int>(std::max<std::size_t>(gpus, 2)));
    return out;
  }
  for (const std::string& item : split_list(text, "--ranks")) {
    int n = 0;
    if (std::sscanf(item.c_str(), "%d", &n) != 1 || n < 2 || std::to_string(n) != item)
      throw UsageError(fmt::format("--ranks '{}': give rank counts of 2 or more, e.g. --ranks 2,4", item));
    out.push_back(n);
  }
  return out;
}

// nccl-tests' op names (all_reduce_perf prints "all_reduce") to ours.
std::string from_nccl_tests(const std::string& op) {
  static const std::map<std::string, std::string> m = {{"all_reduce", "allreduce"}, {"all_gather", "allgather"},
                                                       {"reduce_scatter", "reducescatter"}, {"alltoall", "alltoall"},
                                                       {"broadcast", "broadcast"}, {"sendrecv", "sendrecv"}};
  const auto it = m.find(op);
  return it == m.end() ? op : it->second;
}

// --measured FILE: bench nccl JSON (one op, or several under "ops"), or nccl-tests'
// text output (its "#  Rank N" lines give the rank count, its header the op).
void read_measured(const std::string& file, Measured& m, const std::string& campaign_gpu) {
  const std::string text = simulate::read_text_file(file);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(fmt::format("--measured {}: starts like JSON but does not parse ({}): a cut file?", file, e.what()));
    }
    const auto add = [&](const nlohmann::json& one) {
      if (!one.contains("op") || !one.contains("ranks") || !one.contains("rows"))
        throw UsageError(fmt::format("--measured {}: not bench nccl's JSON (no op, ranks or rows)", file));
      const std::string op = one["op"].get<std::string>();
      const int n = one["ranks"].get<int>();
      for (const auto& r : one["rows"]) {
        const double t = r.contains("time_us") ? r["time_us"].get<double>() * 1e3
                                               : r.at("time_ns").value("median", NAN);  // before nccl-tests' timing
        std::vector<double> spans;
        if (r.contains("spans_us") && r["spans_us"].is_array())
          for (const auto& x : r["spans_us"])
            if (x.is_number()) spans.push_back(x.get<double>());
        double gpu = NAN;
        if (r.contains("per_iteration_ns") && r["per_iteration_ns"].is_object() &&
            r["per_iteration_ns"].value("median", 0.0) > 0)
          gpu = r["per_iteration_ns"]["median"].get<double>();
        m[{op, n, r.at("size_bytes").get<std::uint64_t>()}] = {t, file, spread_of(spans), gpu};
      }
    };
    if (j.contains("ops"))
      for (const auto& one : j["ops"]) add(one);
    else
      add(j);
    return;
  }
  tune::PerfTableParser parser(file);
  int ranks = 0;
  std::istringstream in(text);
  std::string line;
  std::string gpu;  // the GPU model nccl-tests names at the end of each rank line
  while (std::getline(in, line)) {
    if (line.rfind("#  Rank", 0) == 0 || line.rfind("#   Rank", 0) == 0) {
      ++ranks;
      const auto bracket = line.rfind(']');
      if (bracket != std::string::npos && gpu.empty()) gpu = line.substr(bracket + 1);
    }
    parser.line(line);
  }
  gpu.erase(0, gpu.find_first_not_of(' '));
  gpu.erase(gpu.find_last_not_of(" \r") + 1);
  // The campaign names a GPU "GPU 0 (NVIDIA H100 80GB HBM3)", nccl-tests "NVIDIA H100 80GB HBM3".
  if (!gpu.empty() && !campaign_gpu.empty() && campaign_gpu.find(gpu) == std::string::npos)
    throw UsageError(fmt::format("--measured {}: nccl-tests ran on {}, the campaign on {}: compare runs of the same "
                                 "machine", file, gpu, campaign_gpu));
  const auto runs = parser.finish();
  if (runs.empty() || runs.front().rows.empty())
    throw UsageError(fmt::format("--measured {}: no nccl-tests table and not bench nccl JSON; give nccl-tests' output "
                                 "(e.g. all_reduce_perf -b 8 -e 1G -f 2 -g 4 > FILE) or bench nccl --format json",
                                 file));
  if (ranks < 1)
    throw UsageError(fmt::format("--measured {}: its '#  Rank' lines are missing, so the rank count is unknown; keep "
                                 "nccl-tests' whole output", file));
  for (const auto& run : runs) {
    const std::string op = from_nccl_tests(run.op);
    if (std::find(kOps.begin(), kOps.end(), op) == kOps.end())
      throw UsageError(fmt::format("--measured {}: nccl-tests op '{}' is not one predict models", file, run.op));
    for (const auto& r : run.rows) {
      if (r.oop_time_us <= 0)
        throw UsageError(fmt::format("--measured {}: the out-of-place time of {} is missing (in-place only?)", file,
                                     r.size_bytes));
      m[{op, ranks, r.size_bytes}] = {r.oop_time_us * 1e3, file, NAN};
    }
  }
}

// --measure: every op at every rank count here, NCCL quiet, timed as nccl-tests times.
void measure_here(const NcclPredictArgs& a, const std::vector<std::string>& ops, const std::vector<int>& ranks,
                  Measured& m) {
  for (int n : ranks) {
    if (static_cast<std::size_t>(n) > a.devices.size()) {
      std::fprintf(stderr, "predict --measure: %d ranks need %d of the campaign's GPUs, it has %zu: not measured\n", n, n,
                   a.devices.size());
      continue;
    }
    const std::vector<int> gpus(a.devices.begin(), a.devices.begin() + n);
    auto local = bench::make_local_collectives(gpus);
    bool settled = false;
    for (const std::string& op : ops) {
      bench::NcclSweepSpec spec;
      spec.settle_iters = settled ? 0 : 2000;  // once per set of communicators (bench nccl --settle)
      settled = true;
      spec.collective.op = bench::parse_nccl_op(op);
      spec.collective.type = bench::parse_nccl_type(a.dtype);
      spec.collective.gpus = gpus;
      spec.collective.warmup = a.warmup;
      spec.collective.iters = a.iters;
      spec.collective.in_place = false;
      spec.collective.per_iteration = true;  // the GPU's time per iteration, beside the span
      spec.collective.check = false;
      spec.collective.spans = 3;  // the median of three spans: one OS hiccup does not make the figure
      spec.sizes = a.sizes;
      std::fprintf(stderr, "predict --measure: %s on %d GPUs\n", op.c_str(), n);
      const auto r = bench::run_nccl_sweep(spec, local.get());
      for (std::size_t i = 0; i < r.rows.size(); ++i)
        m[{op, n, a.sizes[i]}] = {r.rows[i].span_ns, "measured here", spread_of(r.rows[i].spans_ns),
                                  r.rows[i].time_ns.median > 0 ? r.rows[i].time_ns.median : NAN};
      if (!r.stopped.empty()) throw Error("predict --measure: " + op + ": " + r.stopped);
    }
  }
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += std::log(std::max(x, 1e-6));
  return std::exp(s / static_cast<double>(v.size()));
}

struct Summary {
  std::size_t n = 0;
  double geomean_pct = NAN, worst_pct = NAN;
  std::string worst_cell;
  double worst_spread_pct = NAN;  // how far NCCL's own spans lay apart in the worst cell
};

// A cell whose measurement did not repeat within this (its spans' max / min) says more
// about the machine at that moment than about the model.
constexpr double kSteadySpread = 0.10;

// What a summary compares: nccl-tests' time (the span), or the GPU's time per iteration.
enum class Compared { span, gpu };

Summary summarize(const std::vector<Cell>& cells, const std::string& role, std::uint64_t lo, std::uint64_t hi,
                  bool steady_only = false, Compared what = Compared::span) {
  std::vector<double> e;
  Summary s;
  double worst = -1;
  for (const auto& c : cells) {
    const double predicted = what == Compared::gpu ? c.p.gpu_ns : c.p.time_ns;
    const double measured = what == Compared::gpu ? c.measured_gpu_ns : c.measured_ns;
    if (c.p.role != role || std::isnan(measured) || c.bytes < lo || c.bytes > hi) continue;
    if (steady_only && c.spread > kSteadySpread) continue;
    const double x = std::abs(predicted - measured) / measured;
    e.push_back(x);
    if (x > worst) {
      worst = x;
      s.worst_cell = fmt::format("{} {} ranks {}", c.op, c.ranks, format_size(c.bytes));
      s.worst_spread_pct = c.spread * 100;
    }
  }
  s.n = e.size();
  s.geomean_pct = geomean(e) * 100;
  s.worst_pct = worst * 100;
  return s;
}

std::string summary_line(const std::string& what, const Summary& s) {
  if (s.n == 0) return what + ": no cell measured";
  return fmt::format("{}: {} cells, geomean |error| {:.1f} %, worst {:.1f} % ({}{})", what, s.n, s.geomean_pct,
                     s.worst_pct, s.worst_cell,
                     std::isnan(s.worst_spread_pct) ? ""
                                                    : fmt::format("; NCCL's own spans there {:.0f} % apart",
                                                                  s.worst_spread_pct));
}

Table cell_table(const std::vector<Cell>& cells, bool measured) {
  std::vector<std::string> head = {"op", "ranks", "size", "size_bytes", "algo", "proto", "channels", "role",
                                   "predicted_us", "gpu_us", "host_us"};
  if (measured) head.insert(head.end(), {"measured_us", "error_pct", "spread_pct", "measured_gpu_us", "gpu_error_pct"});
  head.push_back("flags");
  Table t(head);
  for (const auto& c : cells) {
    std::vector<std::string> row = {c.op, std::to_string(c.ranks), format_size_compact(c.bytes), std::to_string(c.bytes),
                                    c.p.algo.empty() ? "-" : c.p.algo, c.p.proto.empty() ? "-" : c.p.proto,
                                    c.p.channels ? std::to_string(c.p.channels) : "-", c.p.role,
                                    fixed(c.p.time_ns / 1e3, 2), fixed(c.p.gpu_ns / 1e3, 2), fixed(c.p.host_ns / 1e3, 2)};
    if (measured) {
      const bool m = !std::isnan(c.measured_ns);
      row.push_back(m ? fixed(c.measured_ns / 1e3, 2) : "-");
      row.push_back(m ? fixed((c.p.time_ns - c.measured_ns) / c.measured_ns * 100, 1) : "-");
      row.push_back(std::isnan(c.spread) ? "-" : fixed(c.spread * 100, 1));
      const bool g = !std::isnan(c.measured_gpu_ns);
      row.push_back(g ? fixed(c.measured_gpu_ns / 1e3, 2) : "-");
      row.push_back(g ? fixed((c.p.gpu_ns - c.measured_gpu_ns) / c.measured_gpu_ns * 100, 1) : "-");
    }
    std::string flags;
    if (c.p.role == "predicted" && c.p.basis.find(c.op + " timed") == std::string::npos)
      flags += "op-not-calibrated ";  // priced from a class mate or NCCL's defaults: a warning
    if (c.p.defaults) flags += "nccl-defaults ";
    if (c.p.extrapolated) flags += "extrapolated ";
    row.push_back(flags.empty() ? "-" : flags.substr(0, flags.size() - 1));
    t.add_row(row);
  }
  return t;
}

std::string headline(const Summary& big, const Summary& small, bool measured) {
  if (!measured) return "Predicted only: run with --measure (or --measured FILE) to see how far off the model is.";
  // A band with no predicted cell measured is left out, not printed as "nan %".
  std::vector<std::string> parts;
  if (big.n) parts.push_back(fmt::format("{:.1f} % (geomean, worst {:.1f} %) at 64 KiB - 1 GiB", big.geomean_pct, big.worst_pct));
  if (small.n) parts.push_back(fmt::format("{:.1f} % (geomean, worst {:.1f} %) at 1 B - 32 KiB", small.geomean_pct, small.worst_pct));
  if (parts.empty()) return "No predicted cell was measured: every measured cell is one the calibration timed (see the table).";
  const std::string worst = !small.n || (big.n && big.worst_pct >= small.worst_pct) ? big.worst_cell : small.worst_cell;
  return fmt::format("Off by {} on the cells the calibration did not time; the worst: {}.", join(parts, " and "), worst);
}

std::string page(const std::string& head, const std::vector<std::string>& lines, const std::vector<Cell>& cells,
                 const Table& t, bool measured) {
  using charts::Format;
  std::string body = "<h1>p2pscope predict: NCCL's collectives</h1>\n<p><b>" + charts::xml_escape(head) + "</b></p>\n<ul>";
  for (const auto& l : lines) body += "<li>" + charts::xml_escape(l) + "</li>";
  body += "</ul>\n<div class=\"charts\">";
  std::map<std::pair<std::string, int>, std::vector<const Cell*>> by;
  for (const auto& c : cells) by[{c.op, c.ranks}].push_back(&c);
  for (const auto& [k, v] : by) {
    const std::string title = fmt::format("{} on {} GPUs", k.first, k.second);
    charts::LineChart ch{title + ": time per size", {"size S (nccl-tests' count)", true, Format::size_bytes},
                         {"time", true, Format::duration_ns}, {}, 520, 320, true};
    charts::Series pred{"predicted (" + v.front()->p.role + ")", charts::palette(2), {}, {}, true, false, true};
    charts::Series meas{"measured (NCCL)", charts::palette(0), {}, {}, false, true, false};
    charts::Series err{"error", charts::palette(3), {}, {}, true, true, false};
    for (const Cell* c : v) {
      pred.x.push_back(static_cast<double>(c->bytes));
      pred.y.push_back(c->p.time_ns);
      meas.x.push_back(static_cast<double>(c->bytes));
      meas.y.push_back(c->measured_ns);
      err.x.push_back(static_cast<double>(c->bytes));
      // Percent, as the table's error_pct: the chart's percent axis prints the value as it is.
      err.y.push_back((c->p.time_ns - c->measured_ns) / c->measured_ns * 100);
    }
    ch.series.push_back(pred);
    if (measured) ch.series.push_back(meas);
    body += charts::render_line_chart(ch);
    if (!measured) continue;
    charts::LineChart ec{title + ": (predicted - measured) / measured", {"size S", true, Format::size_bytes},
                         {"error", false, Format::percent}, {err}, 520, 320, false};
    body += charts::render_line_chart(ec);
  }
  body += "</div>\n" + charts::html::table(t.headers(), t.rows());
  return charts::html::page("p2pscope predict (NCCL model)", body);
}

}  // namespace

// The host's launch cost moves between processes (4 x H100: 24 to 50 us per 4-GPU
// iteration in processes minutes apart, while the GPU's own time stayed 10.7-13 us), so
// a cost the calibration saw minutes earlier mispredicts a run's small sizes by tens of
// percent. The measured run holds its own figure: its calibration ops (the ops the
// calibration timed at that rank count) at 1 B - 4 KiB, where the host dominates. Their
// host share, cbrt(span^3 - gpu^3) with the GPU time from the calibration (which does not
// move), over what the calibration's fit says (the lower quartile of those ratios),
// scales the fit at that rank count. The
// predicted ops never enter it. Returns one line per rank count re-anchored.
std::vector<std::string> anchor_host(simulate::NcclModel& model, const Measured& measured) {
  std::map<int, std::vector<double>> ratios;
  for (const auto& [key, value] : measured) {
    const auto& [op, n, S] = key;
    if (S > 4096 || !model.calibration().find(op, n)) continue;
    const auto p = model.predict(op, n, S);
    const double host = std::cbrt(std::max(0.0, std::pow(value.ns, 3) - std::pow(p.gpu_ns, 3)));
    if (p.host_ns > 0 && host > 0) ratios[n].push_back(host / p.host_ns);
  }
  std::vector<std::string> lines;
  for (auto& [n, v] : ratios) {
    if (v.size() < 3) continue;
    std::sort(v.begin(), v.end());
    const double k = v[v.size() / 4];  // the quiet host: interference only adds (the lower quartile)
    bool fitted = false;
    const double before = model.host_ns(n, n, &fitted);
    if (!fitted) continue;
    model.scale_host(n, k);
    lines.push_back(fmt::format("host launch cost at {} ranks taken from the measured run's own calibration ops at 1 B - "
                                "4 KiB ({} cells): x {:.2f} the calibration's ({:.1f} -> {:.1f} us for {} calls); the "
                                "host's launch rate moves between processes, the GPU's time does not (--host-anchor off "
                                "keeps the calibration's)",
                                n, v.size(), k, before / 1e3, model.host_ns(n, n) / 1e3, n));
  }
  return lines;
}

// --hold-out: the ops other than allreduce and sendrecv timed at those rank counts leave
// the calibration (so they are predicted); says which.
std::vector<std::string> hold_out(simulate::NcclCalibration& cal, const std::vector<int>& rank_counts) {
  std::vector<std::string> held;
  for (int n : rank_counts)
    std::erase_if(cal.curves, [&](const simulate::NcclCurve& c) {
      const bool out = c.ranks == n && c.op != "allreduce" && c.op != "sendrecv";
      if (out) held.push_back(fmt::format("{} at {} ranks", c.op, n));
      return out;
    });
  if (!rank_counts.empty() && held.empty())
    throw UsageError("--hold-out: the calibration timed no op but allreduce and sendrecv at those rank counts, so "
                     "nothing is held out (a campaign without --nccl-calibration full)");
  return held;
}

// The campaign's GPU model (metadata.json), to refuse another machine's runs; "" unknown.
std::string campaign_gpu_of(const std::string& dir) {
  try {
    const auto meta = nlohmann::json::parse(simulate::read_text_file(dir + "/metadata.json"));
    for (const auto& d : meta.value("devices", nlohmann::json::array()))
      if (d.is_object() && d.contains("name") && d["name"].is_string()) return d["name"].get<std::string>();
  } catch (const std::exception&) {  // no metadata: nothing to compare
  }
  return "";
}

// Every (op, ranks, S) asked for, priced, with its measurement where there is one.
std::vector<Cell> price_cells(const simulate::NcclModel& model, const std::vector<std::string>& ops,
                              const std::vector<int>& ranks, const std::vector<std::uint64_t>& sizes,
                              const Measured& measured, bool from_files) {
  std::vector<Cell> cells;
  for (const std::string& op : ops)
    for (int n : ranks)
      for (std::uint64_t S : sizes) {
        Cell c{op, n, S, model.predict(op, n, S), NAN, ""};
        if (const auto it = measured.find({op, n, S}); it != measured.end())
          c.measured_ns = it->second.ns, c.measured_from = it->second.from, c.spread = it->second.spread,
          c.measured_gpu_ns = it->second.gpu_ns;
        cells.push_back(c);
      }
  std::size_t matched = 0;
  for (const auto& c : cells) matched += !std::isnan(c.measured_ns);
  if (from_files && matched == 0)
    throw UsageError("--measured: none of the files' (op, rank count, size) matches a predicted cell; check --ops, "
                     "--ranks and --sizes against the files (nccl-tests -g N gives N ranks)");
  return cells;
}

// The error table's summaries: predicted and calibration cells, above and below 64 KiB,
// and the predicted ones again over the cells whose measurement repeated.
struct Summaries {
  Summary big, small, fit_big, fit_small, big_steady, small_steady, gpu_big, gpu_small;
  explicit Summaries(const std::vector<Cell>& cells)
      : big(summarize(cells, "predicted", 64 * 1024, ~0ull)),
        small(summarize(cells, "predicted", 1, 32 * 1024)),
        fit_big(summarize(cells, "calibration", 64 * 1024, ~0ull)),
        fit_small(summarize(cells, "calibration", 1, 32 * 1024)),
        big_steady(summarize(cells, "predicted", 64 * 1024, ~0ull, true)),
        small_steady(summarize(cells, "predicted", 1, 32 * 1024, true)),
        gpu_big(summarize(cells, "predicted", 64 * 1024, ~0ull, false, Compared::gpu)),
        gpu_small(summarize(cells, "predicted", 1, 32 * 1024, false, Compared::gpu)) {}

  void add_lines(std::vector<std::string>& lines) const {
    lines.push_back(summary_line("predicted cells, 64 KiB - 1 GiB", big));
    lines.push_back(summary_line("predicted cells, 1 B - 32 KiB", small));
    lines.push_back(summary_line("calibration cells (the fit itself), 64 KiB - 1 GiB", fit_big));
    lines.push_back(summary_line("calibration cells (the fit itself), 1 B - 32 KiB", fit_small));
    // The GPU's own time, where the measurement kept it: at host-bound sizes nccl-tests'
    // span is the host's launch rate, which moves between processes by tens of percent
    // (bench/host_rate.sh); the GPU's time does not, and it is what a simulator models.
    if (gpu_big.n || gpu_small.n) {
      lines.push_back(summary_line("predicted cells, the GPU's time per iteration (p50), 64 KiB - 1 GiB", gpu_big));
      lines.push_back(summary_line("predicted cells, the GPU's time per iteration (p50), 1 B - 32 KiB", gpu_small));
    }
    if (big_steady.n < big.n || small_steady.n < small.n) {
      lines.push_back(summary_line("predicted cells whose measurement repeated within 10 %, 64 KiB - 1 GiB", big_steady));
      lines.push_back(summary_line("predicted cells whose measurement repeated within 10 %, 1 B - 32 KiB", small_steady));
    }
  }

  nlohmann::json to_json() const {
    const auto sj = [](const Summary& s) {
      return nlohmann::json{{"cells", s.n}, {"geomean_abs_error_pct", s.n ? nlohmann::json(s.geomean_pct) : nullptr},
                            {"worst_abs_error_pct", s.n ? nlohmann::json(s.worst_pct) : nullptr}, {"worst", s.worst_cell},
                            {"worst_measured_spread_pct",
                             std::isnan(s.worst_spread_pct) ? nlohmann::json() : nlohmann::json(s.worst_spread_pct)}};
    };
    return {{"predicted_64K_1G", sj(big)},         {"predicted_1_32K", sj(small)},
            {"calibration_64K_1G", sj(fit_big)},   {"calibration_1_32K", sj(fit_small)},
            {"predicted_64K_1G_steady", sj(big_steady)}, {"predicted_1_32K_steady", sj(small_steady)},
            {"predicted_gpu_64K_1G", sj(gpu_big)},   {"predicted_gpu_1_32K", sj(gpu_small)}};
  }
};

nlohmann::json rows_json(const std::vector<Cell>& cells) {
  const auto maybe = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : cells)
    rows.push_back({{"op", c.op}, {"ranks", c.ranks}, {"size_bytes", c.bytes}, {"algo", c.p.algo}, {"proto", c.p.proto},
                    {"channels", c.p.channels}, {"role", c.p.role}, {"basis", c.p.basis},
                    {"predicted_us", c.p.time_ns / 1e3}, {"gpu_us", c.p.gpu_ns / 1e3}, {"host_us", c.p.host_ns / 1e3},
                    {"measured_us", maybe(c.measured_ns / 1e3)},
                    {"error_pct", maybe((c.p.time_ns - c.measured_ns) / c.measured_ns * 100)},
                    {"measured_spread_pct", maybe(c.spread * 100)},
                    {"measured_gpu_us", maybe(c.measured_gpu_ns / 1e3)},
                    {"gpu_error_pct", maybe((c.p.gpu_ns - c.measured_gpu_ns) / c.measured_gpu_ns * 100)},
                    {"nccl_defaults", c.p.defaults}, {"extrapolated", c.p.extrapolated}});
  return rows;
}

void run_predict_nccl(const NcclPredictArgs& a, Context& ctx) {
  const auto ops = parse_ops(a.ops);
  const auto ranks = parse_ranks(a.ranks, a.devices.size());
  simulate::NcclCalibration read = simulate::read_nccl_calibration(a.dir);
  const std::vector<std::string> held = hold_out(read, a.hold_out);
  simulate::NcclModel model(std::move(read));
  const auto& cal = model.calibration();
  for (const auto& n : cal.notes) std::fprintf(stderr, "note: %s\n", n.c_str());

  Measured measured;
  const std::string campaign_gpu = campaign_gpu_of(a.dir);
  for (const auto& f : a.measured) read_measured(f, measured, campaign_gpu);
  if (a.measure) {
    bring_up_ranks(ctx, one_process_only("predict --measure"));
    measure_here(a, ops, ranks, measured);
  }
  const bool have_measured = !measured.empty();
  const std::vector<std::string> anchored = a.host_anchor ? anchor_host(model, measured) : std::vector<std::string>{};
  // Sizes and rank counts of --measured that predict was not asked for are still priced.
  const std::vector<Cell> cells = price_cells(model, ops, ranks, a.sizes, measured, !a.measured.empty());
  const Summaries sum(cells);
  std::string head = headline(sum.big, sum.small, have_measured);
  if (sum.gpu_big.n && sum.gpu_small.n)
    head += fmt::format(" The GPU's own time per iteration: {:.1f} % and {:.1f} % (geomean).", sum.gpu_big.geomean_pct,
                        sum.gpu_small.geomean_pct);
  std::vector<std::string> lines = {
      fmt::format("model: NCCL's calls priced from the calibration in {} (NCCL {}); docs/predict.md", cal.dir,
                  cal.nccl_version.empty() ? "version not logged" : cal.nccl_version)};
  for (const auto& l : model.calibrated_by()) lines.push_back("calibrated by: " + l);
  for (const auto& l : model.defaults_used()) lines.push_back("NCCL default: " + l);
  for (const auto& l : anchored) lines.push_back(l);
  if (!held.empty()) lines.push_back("held out of the calibration, so predicted (--hold-out): " + join(held, ", "));
  if (have_measured) sum.add_lines(lines);
  const Table t = cell_table(cells, have_measured);
  std::string text;
  if (a.format == "json") {
    nlohmann::json j = run_metadata(ctx.argv);
    j["kind"] = "p2pscope_predict_nccl";
    j["campaign"] = a.dir;
    j["headline"] = head;
    j["nccl_version"] = cal.nccl_version;
    j["calibrated_by"] = model.calibrated_by();
    j["nccl_defaults"] = model.defaults_used();
    j["host_anchor"] = anchored;
    j["held_out"] = held;
    j["summary"] = sum.to_json();
    j["rows"] = rows_json(cells);
    text = j.dump(1) + "\n";
  } else if (a.format == "csv") {
    text = t.to_csv();
  } else {
    text = "# p2pscope predict (NCCL model): " + head + "\n";
    for (const auto& l : lines) text += "# " + l + "\n";
    text += t.to_text();
  }
  if (a.out.empty() || a.out == "-") {
    std::cout << text;
    std::cout.flush();
  } else {
    write_file_atomic(a.out, text, a.force ? Replace::allow : Replace::refuse);
    std::cerr << "wrote " << a.out << "\n";
  }
  if (!a.html.empty()) {
    write_file_atomic(a.html, page(head, lines, cells, t, have_measured), a.force ? Replace::allow : Replace::refuse);
    std::cerr << "wrote " << a.html << "\n";
  }
  std::cerr << head << "\n";
}

}  // namespace p2pscope::app
