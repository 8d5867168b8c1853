// `p2pscope predict DIR`: collective times from the campaign's link models (ring or
// tree schedules, the slowest link of each step), and with --measure the same ops and
// sizes run through `bench nccl`'s machinery, predicted against measured per size.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "bench/nccl_collective.hpp"
#include "bench/nccl_sweep.hpp"
#include "astra_options.hpp"
#include "bench_common.hpp"
#include "commands.hpp"
#include "p2pscope/backend_table.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/simulate.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/units.hpp"
#include "predict_nccl.hpp"
#include "predict_output.hpp"
#include "simulate/nccl_model.hpp"

namespace p2pscope::app {
namespace {

struct PredictOptions {
  std::string dir, ops, algo = "auto", sizes = "1K:1G", ranks;
  std::vector<std::string> measured;
  std::string host_anchor;  // "" = on, the default
  std::vector<int> hold_out;
  std::string backend, format = "text", out, dtype = "float", html, astra_backend = "unaware";
  std::int64_t endpoint_delay_ns = 1;
  bool astra_backend_given = false, endpoint_delay_given = false;  // refused where they do not apply
  bool measure = false, force = false;
  int warmup = 5, iters = 20;
};

// Why --measure cannot run here, or "" when it can.
std::string why_no_measure(const std::vector<int>& devices, const std::string& backend) {
  if (!bench::capabilities_of(backend).gpu_links)
    return fmt::format("the campaign's links are backend {} (host memory at one end), not GPU to GPU, so there is no "
                       "NCCL run to compare with; nothing was measured", backend);
  if (!bench::nccl_collectives_built())
    return "this p2pscope was built without NCCL (no CUDA/NCCL found at build time), so nothing was measured";
  const auto rt = gpu::runtime_info();
  if (rt.device_count < 1) return "no GPU here (" + rt.why_no_gpu + "), so nothing was measured";
  for (int d : devices)
    if (d >= rt.device_count)
      return fmt::format("the campaign's device {} is not a GPU here ({} visible), so nothing was measured", d,
                         rt.device_count);
  return "";
}

// One op's curve: sizes, predicted and (NaN where not run) measured times.
struct Curve {
  std::vector<double> bytes, predicted_ns, measured_ns;
};

// The page's first line: the first op's largest size as predicted (and measured), then
// how far off the model is where NCCL ran, or why it did not run.
std::string predict_headline(const std::vector<std::pair<std::string, Curve>>& curves, bool measured,
                             const std::string& why_not) {
  if (curves.empty() || curves.front().second.bytes.empty()) return "Nothing was predicted.";
  const auto& [op, c] = curves.front();
  const std::size_t big = static_cast<std::size_t>(std::max_element(c.bytes.begin(), c.bytes.end()) - c.bytes.begin());
  std::string h = fmt::format("{} at {}: predicted {}", op, format_size(static_cast<std::uint64_t>(c.bytes[big])),
                              format_duration_ns(c.predicted_ns[big]));
  if (measured && std::isfinite(c.measured_ns[big]))
    h += fmt::format(", measured {} ({:+.1f} %)", format_duration_ns(c.measured_ns[big]),
                     (c.predicted_ns[big] - c.measured_ns[big]) / c.measured_ns[big] * 100);
  std::vector<double> err;
  for (const auto& [name, k] : curves)
    for (std::size_t i = 0; i < k.bytes.size(); ++i)
      if (std::isfinite(k.measured_ns[i]))
        err.push_back(std::fabs((k.predicted_ns[i] - k.measured_ns[i]) / k.measured_ns[i] * 100));
  if (err.empty())
    return h + ". Predicted only: " + (why_not.empty() ? "run with --measure to compare with NCCL" : why_not) + ".";
  std::sort(err.begin(), err.end());
  return h + fmt::format(". Against NCCL over {} measured cell(s): |error| {:.1f}-{:.1f} % (median {:.1f} %).",
                         err.size(), err.front(), err.back(), err[err.size() / 2]);
}

// The page people look at: its headline, then per op (measured ops first) predicted and
// measured time against size (log-log) with the error per size where measured, the
// table, and last the assumptions (a list that opened the page and hid the answer).
std::string predict_page(const std::string& what, const std::vector<std::string>& assumptions,
                         std::vector<std::pair<std::string, Curve>> curves, const Table& t, bool measured,
                         const std::string& why_not) {
  using charts::Format;
  std::stable_partition(curves.begin(), curves.end(), [](const auto& oc) {
    return std::any_of(oc.second.measured_ns.begin(), oc.second.measured_ns.end(),
                       [](double v) { return std::isfinite(v); });
  });
  std::string body = "<h1>p2pscope predict</h1>\n<div class=\"headline\" id=\"headline\"><p><b>" +
                     charts::xml_escape(predict_headline(curves, measured, why_not)) + "</b></p></div>\n";
  body += "<div class=\"charts\">";
  for (const auto& [op, c] : curves) {
    charts::LineChart ch{op + ": time per size", {"size S (nccl-tests' count)", true, Format::size_bytes},
                         {"time", true, Format::duration_ns}, {}, 520, 320, true};
    ch.series.push_back({"predicted (link models)", charts::palette(2), c.bytes, c.predicted_ns, true, false, true});
    if (measured) ch.series.push_back({"measured (NCCL)", charts::palette(0), c.bytes, c.measured_ns, false, true, false});
    body += charts::render_line_chart(ch);
    if (!measured) continue;
    charts::LineChart err{op + ": (predicted - measured) / measured", {"size S", true, Format::size_bytes},
                          {"error", false, Format::percent}, {}, 520, 320, false};
    std::vector<double> e;
    // Percent, as the table's error_pct (the percent axis prints values as they are).
    for (std::size_t i = 0; i < c.bytes.size(); ++i)
      e.push_back((c.predicted_ns[i] - c.measured_ns[i]) / c.measured_ns[i] * 100);
    err.series.push_back({"error", charts::palette(3), c.bytes, e, true, true, false});
    body += charts::render_line_chart(err);
  }
  body += "</div>\n" + charts::html::table(t.headers(), t.rows());
  body += "<h2>How it was predicted</h2>\n<p>" + charts::xml_escape(what) + "</p>\n<ul>";
  for (const auto& a : assumptions) body += "<li>" + charts::xml_escape(a) + "</li>";
  body += "</ul>\n";
  return charts::html::page("p2pscope predict", body);
}

// The table and curves of a run, filled op by op.
struct PredictTable {
  out::ResultTable t;
  std::vector<std::pair<std::string, Curve>> curves;
  std::vector<std::string> unmeasured;
  std::size_t extrapolated = 0;
};

// --measure: the op over the campaign's GPUs at every size, through bench nccl's sweep.
std::vector<bench::NcclSweepRow> measure_op(const PredictOptions& o, const simulate::Predictor& pr,
                                            simulate::Collective op, const std::vector<std::uint64_t>& sizes) {
  bench::NcclSweepSpec spec;
  spec.collective.op = bench::parse_nccl_op(simulate::to_string(op));
  spec.collective.type = bench::parse_nccl_type(o.dtype);
  spec.collective.gpus = pr.devices();
  spec.collective.warmup = o.warmup;
  spec.collective.iters = o.iters;
  spec.sizes = sizes;
  auto r = bench::run_nccl_sweep(spec);
  if (!r.stopped.empty()) throw Error("predict --measure: " + simulate::to_string(op) + ": " + r.stopped);
  return std::move(r.rows);
}

// One op: predicted at each size (at the size NCCL ran, when measured: it rounds S to
// whole elements per rank) and, where it ran, measured with the error.
void add_op(const PredictOptions& o, const simulate::Predictor& pr, simulate::Collective op, simulate::Algorithm algo,
            const std::vector<std::uint64_t>& sizes, bool measuring, PredictTable& pt) {
  const auto measured = measuring ? measure_op(o, pr, op, sizes) : std::vector<bench::NcclSweepRow>{};
  Curve& curve = pt.curves.emplace_back(simulate::to_string(op), Curve{}).second;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const bench::NcclSweepRow* m = i < measured.size() ? &measured[i] : nullptr;
    const std::uint64_t at = m ? m->bytes : sizes[i];
    const auto r = pr.predict(op, algo, at);
    curve.bytes.push_back(static_cast<double>(at));
    curve.predicted_ns.push_back(r.time_ns);
    curve.measured_ns.push_back(m ? m->span_ns : NAN);
    std::vector<out::Cell> row = {simulate::to_string(op), simulate::to_string(algo), at, at, r.steps, r.time_ns,
                                  r.algbw_bytes_per_s, r.busbw_bytes_per_s, r.bottleneck,
                                  r.extrapolated ? "yes" : "no"};
    pt.extrapolated += r.extrapolated;
    if (m) {
      const double t = m->span_ns;  // nccl-tests' time
      row.insert(row.end(), {t, (r.time_ns - t) / t, m->first_bad < 0 ? "ok" : fmt::format("BAD rank {}", m->bad_rank)});
    } else if (measuring) {
      row.insert(row.end(), {"", "", "not measured"});
    }
    pt.t.add_row(std::move(row));
  }
}

// The columns: times in ns shown in us, rates in bytes/s shown in GB/s (1e9 B/s), the
// error a fraction shown in %.
out::ResultTable predict_table(bool measuring) {
  using out::Hint, out::Unit;
  std::vector<out::Column> cols = {{"op"},
                                   {"algo"},
                                   {"size", Hint::size},
                                   {"size_bytes", Hint::bytes},
                                   {"steps", Hint::count},
                                   {"predicted_us", Hint::duration, Unit::us, 3},
                                   {"algbw_GBps", Hint::byte_rate, Unit::GBps, 3},
                                   {"busbw_GBps", Hint::byte_rate, Unit::GBps, 3},
                                   {"bottleneck"},
                                   {"extrapolated"}};
  if (measuring)
    cols.insert(cols.end(),
                {{"measured_us", Hint::duration, Unit::us, 3}, {"error_pct", Hint::ratio, Unit::percent, 2}, {"check"}});
  return out::ResultTable(std::move(cols));
}

// What a ring or tree run holds besides its rows, for the JSON document and the text.
struct RunFacts {
  std::string what, no_measure;
  std::vector<std::string> assumptions;
  simulate::Algorithm algo;
  bool measuring;
};

nlohmann::ordered_json predict_json(const PredictOptions& o, const simulate::Predictor& pr, const RunFacts& f,
                                    const PredictTable& pt, const Context& ctx) {
  nlohmann::ordered_json j = predict_json_head(ctx);
  j["kind"] = "p2pscope_predict";
  j["campaign"] = o.dir;
  j["backend"] = pr.backend();
  j["devices"] = pr.devices();
  j["time_source"] = pr.time_source();
  j["algorithm"] = simulate::to_string(f.algo);
  j["astra_backend"] = o.astra_backend;  // whose schedule --algo ring follows
  j["endpoint_delay_ns"] = o.endpoint_delay_ns;
  j["description"] = f.what;
  j["assumptions"] = f.assumptions;
  j["notes"] = pr.notes();
  j["measure"] = {{"asked", o.measure}, {"ran", f.measuring}, {"why_not", f.no_measure}, {"dtype", o.dtype},
                  {"unmeasured", pt.unmeasured}};
  // The rows as text shows them (figures parsed back to numbers), as predict always wrote them.
  j["rows"] = nlohmann::ordered_json::parse(out::dump_json(pt.t.rendered().to_json()));
  return j;
}

// The run for every printer: the description, assumptions and table for people, the
// table for csv, the JSON document, and the page of charts.
out::Report predict_report(const PredictOptions& o, const simulate::Predictor& pr, const RunFacts& f,
                           const PredictTable& pt, const Context& ctx) {
  out::Report rep;
  std::string head = "# p2pscope predict: " + f.what + "\n";
  for (const auto& a : f.assumptions) head += "# assumes: " + a + "\n";
  rep.text.emplace_back(std::move(head));
  rep.tables.push_back(pt.t);
  rep.text.emplace_back(pt.t);
  rep.json = [&o, &pr, &f, &pt, &ctx] { return out::JsonDoc(predict_json(o, pr, f, pt, ctx)); };
  rep.html = [&f, &pt] {
    return predict_page(f.what, f.assumptions, pt.curves, pt.t.rendered(), f.measuring, f.no_measure);
  };
  return rep;
}

std::vector<std::uint64_t> checked_sizes(const PredictOptions& o) {
  const auto sizes = parse_size_list(o.sizes);
  if (sizes.empty()) throw UsageError("--sizes gave no sizes");
  for (const auto n : sizes)
    if (n == 0) throw UsageError("--sizes: a size of 0 bytes moves nothing and has no time to predict; give 1 or more");
  return sizes;
}

// The campaign's GPUs, in order: its links' devices where analyze ran, else 0..n-1 of
// metadata.json's GPU count (the NCCL model needs no links).
std::vector<int> campaign_gpus(const std::string& dir, const std::string& backend) {
  try {
    return simulate::Predictor(dir, backend).devices();
  } catch (const UsageError&) {
  }
  std::vector<int> d;
  const auto cal = simulate::read_nccl_calibration(dir);
  int most = 0;
  for (const auto& c : cal.curves) most = std::max(most, c.ranks);
  for (int i = 0; i < most; ++i) d.push_back(i);
  if (d.empty()) throw UsageError(dir + ": neither links.json (run `p2pscope analyze DIR`) nor an NCCL calibration");
  return d;
}

void run_predict(const PredictOptions& o, Context& ctx) {
  const out::Output output = predict_output(o.format);  // before any work
  const auto sizes = checked_sizes(o);
  std::string algo_name = o.algo;
  if (algo_name == "auto") {  // NCCL's model where the campaign holds its calibration; the textbook ring otherwise
    algo_name = simulate::read_nccl_calibration(o.dir).present ? "nccl" : "ring";
    if (algo_name == "ring")
      std::fprintf(stderr, "note: %s has no NCCL calibration (profile makes one since --nccl-calibration): the textbook "
                           "ring schedule of the link models; --algo nccl prices NCCL's collectives with its defaults\n",
                   o.dir.c_str());
  }
  // ASTRA-sim's options shape the link models' schedules; a flag that would change
  // nothing is refused rather than ignored (issue 31 item 7).
  if (o.astra_backend_given && algo_name != "ring")
    throw UsageError("--astra-backend applies to --algo ring (whose ring ASTRA-sim's backend runs); --algo " +
                     algo_name + " does not use it: drop it");
  if (o.endpoint_delay_given && algo_name == "nccl")
    throw UsageError("--endpoint-delay applies to --algo ring and tree (ASTRA-sim's per-step charge); the NCCL model "
                     "prices steps from its calibration: drop it");
  if (algo_name == "nccl") {
    NcclPredictArgs a;
    a.dir = o.dir;
    a.ops = o.ops;
    a.ranks = o.ranks;
    a.out = o.out;
    a.html = o.html;
    a.dtype = o.dtype;
    a.sizes = sizes;
    a.devices = campaign_gpus(o.dir, o.backend);
    a.measured = o.measured;
    a.measure = o.measure;
    a.host_anchor = o.host_anchor != "off";
    a.hold_out = o.hold_out;
    a.force = o.force;
    a.warmup = o.warmup;
    a.iters = o.iters;
    run_predict_nccl(a, output, ctx);
    return;
  }
  if (!o.measured.empty()) throw UsageError("--measured compares with NCCL's model: use it with --algo nccl");
  if (!o.ranks.empty()) throw UsageError("--ranks belongs to --algo nccl; ring and tree run over the campaign's devices");
  if (!o.host_anchor.empty()) throw UsageError("--host-anchor belongs to --algo nccl (its host launch cost)");
  if (!o.hold_out.empty()) throw UsageError("--hold-out belongs to --algo nccl (its calibration)");
  const auto ops = simulate::parse_collective_list(o.ops.empty() ? "allreduce,allgather,reducescatter,alltoall,broadcast" : o.ops);
  const auto algo = simulate::parse_algorithm(algo_name);
  const simulate::Predictor pr(o.dir, o.backend, simulate::parse_astra_backend(o.astra_backend), o.endpoint_delay_ns);
  for (const auto& n : pr.notes()) std::fprintf(stderr, "note: %s\n", n.c_str());

  std::string no_measure;
  if (o.measure) bring_up_ranks(ctx, one_process_only("predict --measure"));  // it drives the campaign's GPUs itself
  // Where it could not run even if asked (host links, no NCCL) the page says why, rather
  // than "run with --measure"; the GPU check is left to --measure, as it starts CUDA.
  const bool cannot = !bench::capabilities_of(pr.backend()).gpu_links || !bench::nccl_collectives_built();
  if (o.measure || cannot) no_measure = why_no_measure(pr.devices(), pr.backend());
  const bool measuring = o.measure && no_measure.empty();
  PredictTable pt{predict_table(measuring), {}, {}, 0};
  for (const auto op : ops) add_op(o, pr, op, algo, sizes, measuring, pt);

  std::string devs;
  for (int d : pr.devices()) devs += (devs.empty() ? "" : ",") + std::to_string(d);
  const RunFacts facts{fmt::format("collectives predicted from {}/links.json: backend {}, {} ranks (devices {}), {} "
                                   "timing, {} algorithm; GB/s = 1e9 B/s; error_pct = (predicted - measured) / measured",
                                   o.dir, pr.backend(), pr.devices().size(), devs, pr.time_source(),
                                   simulate::to_string(algo)),
                       no_measure, pr.assumptions(algo), algo, measuring};
  write_predict(predict_report(o, pr, facts, pt, ctx), output, {o.out, o.html, o.force});
  for (const auto& u : pt.unmeasured) std::fprintf(stderr, "note: not measured: %s\n", u.c_str());
  if (pt.extrapolated)
    std::fprintf(stderr,
                 "note: %zu of %zu rows are extrapolated (column extrapolated = yes): a link's model was used beyond the "
                 "sizes the campaign measured; profile up to the sizes you predict to measure them instead\n",
                 pt.extrapolated, pt.t.rows().size());
  if (o.measure && !measuring) {
    // Asked for and not made: say so, and in the exit status, after the predictions.
    std::fprintf(stderr, "predict --measure: %s; the table holds predictions only\n", no_measure.c_str());
    ctx.exit_code = 1;
  }
}

}  // namespace

void add_predict_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<PredictOptions>();
  auto* cmd = app.add_subcommand("predict",
                                 "Predict collective times (ring or tree) from a campaign's link models (links.json); "
                                 "--measure runs the same ops and sizes with NCCL and reports the error per size");
  cmd->add_option("dir", o->dir, "campaign directory holding links.json (run `p2pscope analyze DIR` first)")->required();
  cmd->add_option("--ops", o->ops, "comma-separated: allreduce, allgather, reducescatter, alltoall, broadcast (and "
                                   "sendrecv with --algo nccl); default all of them");
  cmd->add_option("--algo", o->algo, "nccl (NCCL's collectives, the calibrated model), ring or tree (textbook schedules "
                                     "of the link models, as ASTRA-sim runs them); auto: nccl where the campaign holds "
                                     "an NCCL calibration")->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "--algo nccl: rank counts to price, e.g. 2,4 (default 2 and all the campaign's GPUs)");
  cmd->add_option("--measured", o->measured, "--algo nccl: compare with these runs instead of running NCCL: bench nccl "
                                             "--format json files or nccl-tests' text output");
  cmd->add_option("--hold-out", o->hold_out,
                  "--algo nccl, for validation: at these rank counts (e.g. 2) only allreduce and sendrecv stay in the "
                  "calibration; the other ops timed there are predicted from the other rank counts instead")
      ->delimiter(',')
      ->check(CLI::Range(2, 1024));
  cmd->add_option("--host-anchor", o->host_anchor,
                  "--algo nccl with measured runs: on (the default) takes the host's launch rate from the measured "
                  "run's own calibration ops (allreduce, sendrecv at 1 B - 4 KiB), since it moves between processes; "
                  "off keeps the calibration's. Neither wins: over four 4-GPU leases each was the closer at 1 B - "
                  "32 KiB twice (bench/results/predict.md); compare the GPU's own time there")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--sizes", o->sizes, "sizes S as nccl-tests counts them, e.g. 1K:1G")->capture_default_str();
  cmd->add_option("--backend", o->backend, "the links of this backend (default: the only one, else nccl, ce, sm, ...)");
  cmd->add_option("--format", o->format, "text, json (with schema_version and run metadata) or csv")
      ->capture_default_str();
  add_astra_options(cmd, o->astra_backend, o->endpoint_delay_ns,
                    "ring: the schedule ASTRA-sim's backend runs on `export --to astra-sim`'s file, unaware (a ring "
                    "per dimension) or aware (one flat ring)",
                    "ns charged once per step and once per phase, as ASTRA-sim charges its endpoint-delay (>= 1; "
                    "give export the same value)");
  cmd->add_option("--out", o->out, "output file (default stdout)");
  cmd->add_option("--html", o->html, "also write a page with a chart per op (predicted, and measured with --measure)");
  cmd->add_flag("--force", o->force, "Replace the --out and --html files if they exist");
  cmd->add_flag("--measure", o->measure, "also run the ops with NCCL on the campaign's GPUs (bench nccl) and compare");
  cmd->add_option("--dtype", o->dtype, "--measure: element type (as bench nccl)")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "--measure: warmup iterations per size")->capture_default_str();
  cmd->add_option("--iters", o->iters, "--measure: timed iterations per size")->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  p2pscope predict run/campaign --ops allreduce,allgather --sizes 1M:1G\n"
      "  p2pscope predict run/campaign --algo tree --format json --out predict.json\n"
      "  p2pscope predict run/campaign --ops allreduce --measure     # predicted vs NCCL, per size\n"
      "Assumptions (printed with every table): see docs/predict.md.");
  cmd->callback([o, cmd, &ctx] {
    o->astra_backend_given = cmd->count("--astra-backend") > 0;
    o->endpoint_delay_given = cmd->count("--endpoint-delay") > 0;
    run_predict(*o, ctx);
  });
}

}  // namespace p2pscope::app
