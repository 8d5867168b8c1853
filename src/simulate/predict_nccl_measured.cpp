// predict --algo nccl's measurements (simulate/predict_nccl_parts.hpp): bench nccl JSON or
// nccl-tests' output read back (--measured), or NCCL run here (--measure).
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "bench/nccl_collective.hpp"
#include "bench/nccl_sweep.hpp"
#include "p2pscope/collective.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/tune.hpp"
#include "simulate/link_set.hpp"
#include "simulate/predict_nccl_parts.hpp"

namespace p2pscope::simulate::nccl_predict {
namespace {

double spread_of(const std::vector<double>& spans) {
  if (spans.size() < 2) return NAN;
  const auto [lo, hi] = std::minmax_element(spans.begin(), spans.end());
  return *lo > 0 ? *hi / *lo - 1 : NAN;
}

// "line 3, column 7" of a byte offset, in our words rather than the JSON library's.
std::string where_in_text(const std::string& text, std::size_t byte) {
  byte = std::min(byte, text.size());
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i + 1 < byte; ++i) (text[i] == '\n') ? (++line, col = 1) : ++col;
  return fmt::format("line {}, column {}", line, col);
}

// bench nccl's JSON: one op, or several under "ops". Every field read is checked first:
// a wrong type is named by file, row and field, never in the JSON library's words
// ("type_error.302"), and a negative size is refused, not read as 1.68e+07 TiB.
void read_bench_json(const std::string& file, const std::string& text, Measured& m) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("--measured {}: starts like JSON but does not parse at {}: a cut file?", file,
                                 where_in_text(text, e.byte)));
  }
  const auto number = [&](const nlohmann::json& o, const char* key, const std::string& where) {
    if (!o.contains(key) || !o[key].is_number())
      throw UsageError(fmt::format("--measured {}: {}: \"{}\" is missing or not a number", file, where, key));
    return o[key].get<double>();
  };
  const auto add = [&](const nlohmann::json& one) {
    if (!one.is_object() || !one.contains("op") || !one.contains("ranks") || !one.contains("rows"))
      throw UsageError(fmt::format("--measured {}: not bench nccl's JSON (no op, ranks or rows)", file));
    if (!one["op"].is_string() || !one["ranks"].is_number_integer() || one["ranks"].get<long long>() < 1 ||
        !one["rows"].is_array())
      throw UsageError(
          fmt::format("--measured {}: \"op\" must be a name, \"ranks\" a count of 1 or more and "
                      "\"rows\" a list",
                      file));
    const std::string op = one["op"].get<std::string>();
    const int n = static_cast<int>(std::min<long long>(one["ranks"].get<long long>(), 1 << 20));
    std::size_t k = 0;
    for (const auto& r : one["rows"]) {
      const std::string where = fmt::format("{} row {}", op, ++k);
      if (!r.is_object()) throw UsageError(fmt::format("--measured {}: {} is not an object", file, where));
      if (!r.contains("size_bytes") || !r["size_bytes"].is_number_integer() || r["size_bytes"].get<long long>() < 0)
        throw UsageError(
            fmt::format("--measured {}: {}: \"size_bytes\" is missing or not a size in bytes (a whole "
                        "number >= 0)",
                        file, where));
      const double t = r.contains("time_us") ? number(r, "time_us", where) * 1e3
                       : r.contains("time_ns") && r["time_ns"].is_object()
                           ? number(r["time_ns"], "median", where + " time_ns")  // before nccl-tests' timing
                           : number(r, "time_us", where);
      if (!(t > 0)) throw UsageError(fmt::format("--measured {}: {}: the time is not positive", file, where));
      std::vector<double> spans;
      if (r.contains("spans_us") && r["spans_us"].is_array())
        for (const auto& x : r["spans_us"])
          if (x.is_number()) spans.push_back(x.get<double>());
      double gpu = NAN;
      if (r.contains("per_iteration_ns") && r["per_iteration_ns"].is_object() &&
          r["per_iteration_ns"].contains("median") && r["per_iteration_ns"]["median"].is_number() &&
          r["per_iteration_ns"]["median"].get<double>() > 0)
        gpu = r["per_iteration_ns"]["median"].get<double>();
      m[{op, n, r["size_bytes"].get<std::uint64_t>()}] = {t, file, spread_of(spans), gpu};
    }
  };
  if (j.is_object() && j.contains("ops") && j["ops"].is_array())
    for (const auto& one : j["ops"]) add(one);
  else
    add(j);
}

// nccl-tests' runs, read by the one table reader (tune::PerfTableParser, or its -J JSON):
// each run counts its own "#  Rank" lines, so a file of two 4-rank runs is two 4-rank
// runs, not one of 8. A row whose data check failed (#wrong) is no figure, a table of CPU
// time (-C 1) none at all; a cut table gives its complete rows, and is said to be cut.
void add_nccl_tests_runs(const std::string& file, const std::vector<tune::PerfRun>& runs, Measured& m,
                         const std::string& campaign_gpu, std::vector<std::string>& notes) {
  if (runs.empty() || runs.front().rows.empty())
    throw UsageError(fmt::format("--measured {}: no nccl-tests table and not bench nccl JSON; give nccl-tests' output "
                                 "(e.g. all_reduce_perf -b 8 -e 1G -f 2 -g 4 > FILE), its -J JSON, or bench nccl "
                                 "--format json",
                                 file));
  int k = 0;
  for (const auto& run : runs) {
    const std::string which = runs.size() > 1 ? fmt::format(" (run {} of {})", ++k, runs.size()) : "";
    if (run.nranks < 1)
      throw UsageError(fmt::format("--measured {}{}: its '#  Rank' lines are missing, so the rank count is unknown; "
                                   "keep nccl-tests' whole output",
                                   file, which));
    // The campaign names a GPU "GPU 0 (NVIDIA H100 80GB HBM3)", nccl-tests "NVIDIA H100 80GB HBM3".
    if (!run.gpu.empty() && !campaign_gpu.empty() && campaign_gpu.find(run.gpu) == std::string::npos)
      throw UsageError(fmt::format("--measured {}{}: nccl-tests ran on {}, the campaign on {}: compare runs of the "
                                   "same machine",
                                   file, which, run.gpu, campaign_gpu));
    if (run.cpu_time)
      throw UsageError(fmt::format("--measured {}{}: its time columns are the host's CPU time (nccl-tests -C 1), not "
                                   "the operation's: rerun without -C 1",
                                   file, which));
    // nccl-tests' names (all_reduce_perf prints "all_reduce") are the collective table's too.
    const auto op = find_collective(run.op);
    if (!op) throw UsageError(fmt::format("--measured {}{}: nccl-tests op '{}' is not one predict models", file, which, run.op));
    if (!run.complete)
      notes.push_back(fmt::format("--measured {}{}: the {} table was cut after {} B (no closing lines): its {} "
                                  "complete rows are used",
                                  file, which, run.op, run.rows.back().size_bytes, run.rows.size()));
    std::size_t wrong = 0;
    for (const auto& r : run.rows) {
      if (r.wrong()) {
        ++wrong;
        continue;
      }
      if (r.oop_time_us <= 0)
        throw UsageError(fmt::format("--measured {}{}: the out-of-place time of {} is missing (in-place only?)", file,
                                     which, r.size_bytes));
      m[{to_string(*op), run.nranks, r.size_bytes}] = {r.oop_time_us * 1e3, file, NAN};
    }
    if (wrong > 0)
      notes.push_back(fmt::format("--measured {}{}: {} row{} of {} with #wrong > 0 not used (NCCL's results were "
                                  "wrong there: no figure)",
                                  file, which, wrong, wrong == 1 ? "" : "s", run.op));
  }
}

void read_nccl_tests(const std::string& file, const std::string& text, Measured& m, const std::string& campaign_gpu,
                     std::vector<std::string>& notes) {
  tune::PerfTableParser parser(file);
  for (const std::string_view line : split_lines(text)) parser.line(line);
  std::vector<tune::PerfRun> runs;
  for (auto& r : parser.finish())
    if (r.tool == "nccl-tests") runs.push_back(std::move(r));
  add_nccl_tests_runs(file, runs, m, campaign_gpu, notes);
}

}  // namespace

void read_measured(const std::string& file, Measured& m, const std::string& campaign_gpu,
                   std::vector<std::string>* notes) {
  std::vector<std::string> said;
  const std::string text = read_text_file(file);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    // nccl-tests' own -J JSON, or bench nccl's.
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_discarded() && tune::is_nccl_tests_json(j))
      add_nccl_tests_runs(file, {tune::perf_from_nccl_tests_json(j, file)}, m, campaign_gpu, said);
    else
      read_bench_json(file, text, m);
  } else {
    read_nccl_tests(file, text, m, campaign_gpu, said);
  }
  if (notes) notes->insert(notes->end(), said.begin(), said.end());
}

NcclCalibration calibration_from_files(const std::vector<std::string>& files, const std::string& campaign_gpu) {
  NcclCalibration cal;
  cal.present = true;
  cal.dir = "--calibration " + join(files, ", ");
  std::map<std::pair<std::string, int>, NcclCurve> by;
  for (const std::string& f : files) {
    Measured m;
    read_measured(f, m, campaign_gpu, &cal.notes);
    std::size_t kept = 0;
    for (const auto& [key, cell] : m) {  // the map's order: op, ranks, then size ascending
      const auto& [op, ranks, S] = key;
      NcclCurve& c = by[{op, ranks}];
      c.op = op, c.ranks = ranks;
      if (!c.bytes.empty() && static_cast<double>(S) <= c.bytes.back()) continue;  // another file's same size: the first
      c.bytes.push_back(static_cast<double>(S));
      c.span_ns.push_back(cell.ns);
      c.gpu_ns.push_back(std::isnan(cell.gpu_ns) ? cell.ns : cell.gpu_ns);
      ++kept;
    }
    if (kept == 0) throw UsageError(fmt::format("--calibration {}: no size of any op was read from it", f));
  }
  for (auto& [key, c] : by) {
    // Sizes below what the op can split among the ranks all run as one: nccl-tests times
    // them alike, so only sizes from 1 B up count, and a curve needs two of them.
    if (c.bytes.size() < 2) {
      cal.notes.push_back(fmt::format("--calibration: {} at {} ranks has one size only: not a curve, left out", c.op,
                                      c.ranks));
      continue;
    }
    cal.curves.push_back(std::move(c));
  }
  if (cal.curves.empty())
    throw UsageError("--calibration: no op at any rank count has two sizes or more: give whole nccl-tests sweeps "
                     "(e.g. all_reduce_perf -b 8 -e 1G -f 2) of allreduce and sendrecv at 2 and N ranks");
  return cal;
}

void measure_here(const NcclPredictArgs& a, const std::vector<std::string>& ops, const std::vector<int>& ranks,
                  Measured& m, const std::function<void(const std::string&)>& say) {
  const auto tell = [&say](const std::string& line) {
    if (say) say(line);
  };
  for (int n : ranks) {
    if (static_cast<std::size_t>(n) > a.devices.size()) {
      tell(fmt::format("predict --measure: {} ranks need {} of the campaign's GPUs, it has {}: not measured", n, n,
                       a.devices.size()));
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
      spec.span_target_ns = bench::kCalibrationSpanTargetNs;  // as the calibration it is compared with
      spec.sizes = a.sizes;
      tell(fmt::format("predict --measure: {} on {} GPUs", op, n));
      const auto r = bench::run_nccl_sweep(spec, local.get());
      for (std::size_t i = 0; i < r.rows.size(); ++i)
        m[{op, n, a.sizes[i]}] = {r.rows[i].span_ns, "measured here", spread_of(r.rows[i].spans_ns),
                                  r.rows[i].time_ns.median > 0 ? r.rows[i].time_ns.median : NAN};
      if (!r.stopped.empty()) throw Error("predict --measure: " + op + ": " + r.stopped);
    }
  }
}

}  // namespace p2pscope::simulate::nccl_predict
