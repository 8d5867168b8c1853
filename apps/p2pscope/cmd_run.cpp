// `p2pscope run [--out DIR]`: the main job (the README's `make run`). Topology, a short
// profiling campaign, the bench matrix, the NCCL all-reduce reference, the TCP loopback
// benchmark, then analyze, each as a child p2pscope process: one step failing or
// hanging (killed at --step-timeout) loses nothing the others measured, and each
// step's own output and log stay in DIR for anyone to rerun by hand. The steps are
// planned, run and summed up in src/run/; this file takes the options and prints.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/phase_trace.hpp"
#include "p2pscope/signals.hpp"
#include "run/headline.hpp"
#include "run/index.hpp"
#include "run/plan.hpp"
#include "run/steps.hpp"

namespace p2pscope::app {
namespace {
namespace fs = std::filesystem;
using run::Headline, run::RunOptions, run::Step, run::StepResult;

void add_run_options(CLI::App* cmd, RunOptions& o) {
  cmd->add_option("--out", o.out, "Output directory (a previous campaign in it is kept, renamed)")
      ->capture_default_str();
  cmd->add_option("--sizes", o.sizes,
                  "Campaign sizes (default 1:1G, powers of two, with GPUs; 1:64M on the host)");
  cmd->add_option("--reps", o.reps, "Campaign repetitions")->capture_default_str();
  cmd->add_option("--backend", o.backend,
                  "Campaign backend (default ce with 2+ GPUs, staged with one GPU, else host)");
  cmd->add_option("--skip", o.skip, "Steps to skip, comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember(run::kStepNames));
  cmd->add_option("--step-timeout", o.step_timeout_s, "Seconds a step may run before it is stopped")
      ->capture_default_str();
}

// The steps this run makes, with --skip applied; the previous campaign set aside first.
std::vector<Step> prepare(const RunOptions& o, const fs::path& out, gpu::RuntimeInfo& rt) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw UsageError("cannot create --out " + out.string() + ": " + ec.message());
  // Only a profile step writes a new campaign: with it skipped, the later steps read the
  // one that is there (run --skip profile re-analyzes it), so it stays in place.
  if (std::find(o.skip.begin(), o.skip.end(), "profile") == o.skip.end())
    if (const auto old = run::set_aside(out / "campaign"))
      std::cerr << "run: kept the previous campaign as " << old->string() << "\n";
  rt = gpu::runtime_info();
  trace_phase("run: CUDA runtime read, steps planned");
  std::cerr << "run: " << (rt.device_count > 0 ? fmt::format("{} GPU(s)", rt.device_count)
                                               : "no GPU (" + rt.why_no_gpu + "): host backend")
            << ", output in " << out.string() << "\n";
  auto steps = run::plan_steps(o, rt, out);
  run::skip_steps(steps, o.skip, fs::exists(out / "campaign" / "metadata.json"));
  return steps;
}

// The end of a finished run: the counts, the index, the report, the headline last.
void print_summary(const fs::path& out, const std::vector<StepResult>& results, const fs::path& index,
                   const Headline& headline, Context& ctx) {
  int failed = 0, ok = 0, skipped = 0;
  for (const auto& r : results) {
    if (r.status == "failed" || r.status == "timed out") ++failed;
    ok += r.status == "ok";
    skipped += r.status == "skipped";
  }
  const fs::path report = out / "campaign" / "report.html";
  std::cout << fmt::format("\n{} step(s) ok, {} failed, {} skipped; details in {}\n", ok, failed, skipped,
                           (out / "run.json").string());
  std::cout << "index: " << index.string() << "   (every result of this run)\n";
  const StepResult& analyze =
      *std::find_if(results.begin(), results.end(), [](const StepResult& r) { return r.name == "analyze"; });
  if (fs::exists(report)) {
    std::cout << "report: " << fs::absolute(report).lexically_normal().string() << "\n";
  } else if (analyze.status == "skipped") {
    // Asked for (--skip) or implied by it: no failure, and no analyze.log to point at.
    std::cout << "no report.html: analyze was skipped (" << analyze.note << ")\n";
  } else {
    std::cout << "no report.html was written: see " << analyze.log_path << "\n";
    ctx.exit_code = 1;
  }
  if (failed > 0) ctx.exit_code = 1;
  std::cout << "\n" << headline_text(headline);  // the answer last, where the eye lands
}

void run_main_job(const RunOptions& o, Context& ctx) {
  run::check_options(o);  // every option checked before the first step runs (exit 2, nothing measured yet)
  const fs::path out = o.out;
  gpu::RuntimeInfo rt;
  const auto steps = prepare(o, out, rt);
  const InterruptFlag interrupt("p2pscope run");
  const run::StepRunner runner(out, o.step_timeout_s, interrupt.flag(), interrupt.pass_on(), std::cerr);
  nlohmann::json record = run_metadata(ctx.argv);
  record["versions"] = gpu::to_json(rt);
  record["steps"] = nlohmann::json::array();
  std::vector<StepResult> results;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto r = runner.run(steps[i], i + 1, steps.size());
    record["steps"].push_back(to_json(r));
    results.push_back(r);
    // After every step: a kill loses nothing already done.
    write_file_atomic(out / "run.json", out::dump_json(record, 2) + "\n", Replace::allow);
    if (r.status == "interrupted") {
      const auto stale = run::files_not_of_this_run(steps, results);
      const Headline h = run::write_headline(out, stale);
      const fs::path index = run::write_index(out, results, steps.size(), h, stale);
      std::cout << "\n" << headline_text(h);
      ctx.exit_code = 128 + (interrupt.signal_number() ? interrupt.signal_number() : SIGINT);
      std::cerr << "run: interrupted; what was measured is in " << out.string() << " (index: " << index.string() << ")\n";
      return;
    }
  }
  trace_phase("run: steps done");
  const auto stale = run::files_not_of_this_run(steps, results);
  const Headline headline = run::write_headline(out, stale);
  const fs::path index = run::write_index(out, results, steps.size(), headline, stale);
  trace_phase("run: headline and index written");
  print_summary(out, results, index, headline, ctx);
}

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run",
      "The main job: topology, a short profiling campaign, bench matrix, NCCL all-reduce, TCP loopback, "
      "then analyze, export (ASTRA-sim network.yml) and predict (predict.html); prints where report.html is");
  add_run_options(cmd, *o);
  cmd->callback([o, &ctx] { run_main_job(*o, ctx); });
}

}  // namespace p2pscope::app
