// `p2pscope predict DIR`: collective times from the campaign's link models (ring or
// tree schedules, the slowest link of each step), and with --measure the same ops and
// sizes run through `bench nccl`'s machinery, predicted against measured per size; or
// NCCL's collectives by its calibrated model (--algo nccl). Both paths are the library's
// (src/simulate/predict_run.hpp); this file reads the options, writes and prints.
#include <cstdio>
#include <iostream>

#include "astra_options.hpp"
#include "bench_common.hpp"
#include "commands.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/simulate.hpp"
#include "simulate/nccl_model.hpp"
#include "simulate/predict_run.hpp"

namespace p2pscope::app {
namespace {

struct PredictOptions {
  std::string dir, ops, algo = "auto", sizes = "1K:1G", ranks;
  std::vector<std::string> measured, calibration;
  std::string host_anchor;  // "" = on, the default
  std::vector<int> hold_out;
  std::string backend, format = "text", out, dtype = "float", html, astra_backend = "unaware";
  std::int64_t endpoint_delay_ns = 1;
  bool astra_backend_given = false, endpoint_delay_given = false;  // refused where they do not apply
  bool measure = false, force = false;
  int warmup = 5, iters = 20;
};

// --format: text, json or csv; UsageError (exit 2) naming the flag otherwise.
out::Output predict_output(const std::string& format) {
  const std::initializer_list<out::Format> offered{out::Format::text, out::Format::json, out::Format::csv};
  const auto f = out::find_format(format, offered);
  if (!f) throw UsageError("--format '" + format + "': use " + out::format_choices(offered));
  return out::Output(*f);
}

// The report to --out (stdout for "" or "-") and, with --html, the page.
void write_predict(const out::Report& rep, const out::Output& output, const PredictOptions& o) {
  const Replace replace = o.force ? Replace::allow : Replace::refuse;
  const std::string text = output.print(rep);
  if (o.out.empty() || o.out == "-") {
    std::cout << text;
    std::cout.flush();
  } else {
    write_file_atomic(o.out, text, replace);
    std::cerr << "wrote " << o.out << "\n";
  }
  if (!o.html.empty()) {
    write_file_atomic(o.html, out::Output(out::Format::html).print(rep), replace);
    std::cerr << "wrote " << o.html << "\n";
  }
}

simulate::PredictHooks hooks(Context& ctx) {
  simulate::PredictHooks h;
  h.say = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  // --measure drives the campaign's GPUs from this process.
  h.before_measure = [&ctx] { bring_up_ranks(ctx, one_process_only("predict --measure")); };
  return h;
}

// "auto": NCCL's model where the campaign holds its calibration; the textbook ring otherwise.
// ASTRA-sim's options shape the link models' schedules; a flag that would change nothing
// is refused rather than ignored (issue 31 item 7).
std::string checked_algo(const PredictOptions& o) {
  std::string algo_name = o.algo;
  if (algo_name == "auto") {
    algo_name = !o.calibration.empty() || simulate::read_nccl_calibration(o.dir).present ? "nccl" : "ring";
    if (algo_name == "ring")
      std::fprintf(stderr, "note: %s has no NCCL calibration (profile makes one since --nccl-calibration): the textbook "
                           "ring schedule of the link models; --algo nccl prices NCCL's collectives with its defaults\n",
                   o.dir.c_str());
  }
  if (o.astra_backend_given && algo_name != "ring")
    throw UsageError("--astra-backend applies to --algo ring (whose ring ASTRA-sim's backend runs); --algo " +
                     algo_name + " does not use it: drop it");
  if (o.endpoint_delay_given && algo_name == "nccl")
    throw UsageError("--endpoint-delay applies to --algo ring and tree (ASTRA-sim's per-step charge); the NCCL model "
                     "prices steps from its calibration: drop it");
  if (algo_name == "nccl") return algo_name;
  if (!o.measured.empty()) throw UsageError("--measured compares with NCCL's model: use it with --algo nccl");
  if (!o.ranks.empty()) throw UsageError("--ranks belongs to --algo nccl; ring and tree run over the campaign's devices");
  if (!o.host_anchor.empty()) throw UsageError("--host-anchor belongs to --algo nccl (its host launch cost)");
  if (!o.hold_out.empty()) throw UsageError("--hold-out belongs to --algo nccl (its calibration)");
  if (!o.calibration.empty()) throw UsageError("--calibration calibrates NCCL's model: use it with --algo nccl");
  return algo_name;
}

void run_predict_nccl(const PredictOptions& o, const std::vector<std::uint64_t>& sizes, const out::Output& output,
                      Context& ctx) {
  simulate::NcclPredictArgs a;
  a.dir = o.dir;
  a.ops = o.ops;
  a.ranks = o.ranks;
  a.dtype = o.dtype;
  a.sizes = sizes;
  try {
    a.devices = simulate::campaign_gpus(o.dir, o.backend);
  } catch (const UsageError&) {
    // --calibration brings the model's figures: the campaign need not hold links or a
    // calibration of its own (its GPU is still checked against the files').
    if (o.calibration.empty()) throw;
  }
  a.measured = o.measured;
  a.calibration = o.calibration;
  a.measure = o.measure;
  a.host_anchor = o.host_anchor != "off";
  a.hold_out = o.hold_out;
  a.warmup = o.warmup;
  a.iters = o.iters;
  const simulate::NcclPredictRun r = simulate::predict_nccl(a, ctx.argv, hooks(ctx));
  write_predict(r.report, output, o);
  std::cerr << r.headline << "\n";
}

void run_predict(const PredictOptions& o, Context& ctx) {
  const out::Output output = predict_output(o.format);  // before any work
  const auto sizes = simulate::checked_predict_sizes(o.sizes);
  const std::string algo_name = checked_algo(o);
  if (algo_name == "nccl") return run_predict_nccl(o, sizes, output, ctx);
  const simulate::LinkPredictArgs a{o.dir, o.ops, algo_name, o.backend, o.dtype, o.astra_backend, sizes,
                                    o.endpoint_delay_ns, o.measure, o.warmup, o.iters};
  const simulate::LinkPrediction p = simulate::predict_links(a, ctx.argv, hooks(ctx));
  write_predict(p.report, output, o);
  for (const auto& u : p.unmeasured) std::fprintf(stderr, "note: not measured: %s\n", u.c_str());
  if (p.extrapolated)
    std::fprintf(stderr,
                 "note: %zu of %zu rows are extrapolated (column extrapolated = yes): a link's model was used beyond the "
                 "sizes the campaign measured; profile up to the sizes you predict to measure them instead\n",
                 p.extrapolated, p.rows);
  if (o.measure && !p.measuring) {
    // Asked for and not made: say so, and in the exit status, after the predictions.
    std::fprintf(stderr, "predict --measure: %s; the table holds predictions only\n", p.no_measure.c_str());
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
                                             "--format json files, nccl-tests' text output or its -J JSON");
  cmd->add_option("--calibration", o->calibration,
                  "--algo nccl: calibrate NCCL's model from these files instead of the campaign's nccl-calibration/ "
                  "(nccl-tests output or -J JSON, bench nccl JSON): give allreduce and sendrecv at 2 and N ranks, and "
                  "the other ops are predicted; each cell says whether it was fitted or predicted");
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
