// `p2pscope run [--out DIR]`: the main job (the README's `make run`). Topology, a short
// profiling campaign, the bench matrix, the NCCL all-reduce reference, the TCP loopback
// benchmark, then analyze, each as a child p2pscope process: one step failing or
// hanging (killed at --step-timeout) loses nothing the others measured, and each
// step's own output and log stay in DIR for anyone to rerun by hand.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/phase_trace.hpp"
#include "p2pscope/backend_table.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/signals.hpp"
#include "p2pscope/units.hpp"
#include "profile/setup.hpp"
#include "headline.hpp"
#include "run_steps.hpp"

namespace p2pscope::app {
namespace {
namespace fs = std::filesystem;

struct RunOptions {
  std::string out = "p2pscope-out";
  std::string sizes;    // campaign sizes; default depends on GPU or host
  int reps = 3;
  std::string backend;  // campaign backend; default ce with 2+ GPUs, staged with one, else host
  std::vector<std::string> skip;
  double step_timeout_s = 600;
};

const std::vector<std::string> kStepNames{"topo",          "topo-text",      "profile",      "bench-gpu",
                                          "bench-latency", "nccl-allreduce", "tcp-loopback", "analyze",
                                          "export",        "predict"};

// A previous run's campaign is kept (renamed), never overwritten.
void set_aside(const fs::path& dir) {
  if (!fs::exists(dir)) return;
  const fs::path old = dir.string() + ".prev-" + compact_timestamp(realtime_ns());
  std::error_code ec;
  fs::rename(dir, old, ec);
  if (ec) throw Error("cannot set the previous campaign " + dir.string() + " aside: " + ec.message());
  std::cerr << "run: kept the previous campaign as " << old.string() << "\n";
}

std::vector<Step> plan_steps(const RunOptions& o, const gpu::RuntimeInfo& rt, const fs::path& out) {
  const bool gpus = rt.cuda_built && rt.device_count >= 1;
  const bool pairs = rt.cuda_built && rt.device_count >= 2;
  // One GPU has no GPU pair, but the staged backend pairs it with host memory (PCIe).
  const std::string gpu_backend = bench::default_backend({rt.cuda_built, rt.nccl_built, rt.device_count, false}).name;
  const std::string backend = !o.backend.empty() ? o.backend : gpu_backend;
  // The first backend decides; an unknown name is the profile step's to refuse (the
  // other steps still run), planned here as a GPU backend.
  const auto named = bench::find_backend(backend.substr(0, backend.find(',')));
  const bench::BackendCaps can = named ? named->info->can : bench::BackendCaps{};
  const bool gpu_campaign = can.gpu_memory;
  const std::string sizes = !o.sizes.empty() ? o.sizes : "1:" + std::string(named ? named->info->bandwidth_size : "1G");
  const std::string campaign = (out / "campaign").string();
  const std::string why_host = gpus ? "" : "host backend: " + rt.why_no_gpu;
  const std::string why_staged = gpus && !pairs ? "one GPU: GPU <-> host memory through the staged backend" : "";
  const std::string bench_note = why_host.empty() ? why_staged : why_host;
  // A ping-pong where the default backend has one (a GPU pair, or host memory); else
  // (one GPU, staged) the host-observed blocking copy.
  const std::string& latency_backend = gpu_backend;
  const std::string latency_pattern = bench::capabilities_of(gpu_backend).latency ? "latency" : "blocking";
  std::vector<Step> s;
  s.push_back({"topo", {"topo", "--format", "json", "--force", "--out", (out / "topology.json").string()}, "", ""});
  s.push_back({"topo-text", {"topo"}, "topology.txt", ""});
  // Drift windows of 0.5 s at the start and the end: the rate comes from readings a whole
  // campaign apart, and with jittered pokes the 4-GPU bound was +-690-695 ns with windows
  // of 2 s and of 1 s (4 x H200).
  s.push_back({"profile",
               {"profile", "--out", campaign, "--backend", backend, "--sizes", sizes, "--reps", std::to_string(o.reps),
                "--warmup", "2", "--drift", gpu_campaign ? "0.5s" : "0", "--thermal-warmup", "off", "--monitor"},
               "profile.txt", backend == gpu_backend ? bench_note : ""});
  s.push_back({"bench-gpu",
               {"bench", "gpu", "--backend", gpu_backend, "--pattern", "uni", "--sizes",
                std::string(bench::resolve_backend(gpu_backend).info->bandwidth_size), "--format", "json"},
               "bench-gpu.json", bench_note});
  s.push_back({"bench-latency",
               {"bench", "gpu", "--backend", latency_backend, "--pattern", latency_pattern, "--sizes", "8", "--format",
                "json"},
               "bench-latency.json", bench_note});
  if (rt.nccl_built && gpus)
    s.push_back({"nccl-allreduce", {"bench", "nccl", "--op", "allreduce", "--sizes", "1M,64M,1G", "--format", "json"},
                 "nccl-allreduce.json", ""});
  else
    s.push_back({"nccl-allreduce", {}, "", "", rt.nccl_built ? "no GPU" : "NCCL not built in"});
  s.push_back({"tcp-loopback",
               {"bench", "tcp", "--loopback", "--channels", "2", "--size", "64M", "--iters", "10", "--format", "json"},
               "tcp-loopback.json", ""});
  s.push_back({"analyze", {"analyze", campaign}, "analyze.txt", "", "", {"profile"}});
  // The simulator loop: the campaign's links as an ASTRA-sim network, and collectives
  // predicted from them; checked against NCCL where GPU pairs and NCCL are here.
  s.push_back({"export", {"export", campaign, "--to", "astra-sim", "--out", (out / "network.yml").string(), "--system",
                          (out / "system.json").string(), "--force"},
               "export.txt", "", "", {"profile"}});
  std::vector<std::string> predict = {"predict", campaign, "--ops", "allreduce,allgather", "--sizes", "1M,64M,1G",
                                      "--format", "json", "--html", (out / "predict.html").string(), "--force"};
  // Measured collectives compare with links measured GPU to GPU, not through host memory.
  if (pairs && rt.nccl_built && can.gpu_links) predict.push_back("--measure");
  // Priced (and measured) at all the GPUs only: the calibration times every op at 2
  // ranks, so 2-rank cells would check its fit, not a prediction, for 1.3 s of NCCL
  // set-up and timing.
  if (rt.device_count > 2) predict.insert(predict.end(), {"--ranks", std::to_string(rt.device_count)});
  s.push_back({"predict", predict, "predict.json", "", "", {"profile"}});
  return s;
}

// Files a run writes besides the steps' own outputs and logs, with what each holds.
const std::vector<std::pair<std::string, std::string>> kRunFiles = {
    {"campaign/report.html", "the campaign report: curves, matrices, findings, link models"},
    {"predict.html", "collectives predicted from the link models (and measured with --measure)"},
    {"network.yml", "ASTRA-sim network input from the link models"},
    {"topology.json", "topology (JSON)"},
    {"campaign/summary.csv", "per-config statistics"},
    {"campaign/links.json", "link models"},
    {"campaign/findings.json", "every finding"},
    {"campaign/trace.json", "Chrome trace of the campaign (chrome://tracing, Perfetto)"},
    {"campaign/execution_log.csv", "every measured op"},
    {"campaign/monitor.csv", "CPU, IRQ, NIC and GPU samples during the campaign"},
    {"headline.json", "the figures of the Results box above, unrounded"},
    {"run.json", "every step: command, status, time, exit code"}};

// The files of steps that did not run this time (skipped, or not reached before an
// interrupt): a copy an earlier run left in --out is not this run's result, so neither
// the headline nor the index's file list shows it as one.
std::set<std::string> files_not_of_this_run(const std::vector<Step>& steps, const std::vector<StepResult>& results) {
  const std::map<std::string, std::string> also = {
      {"topo", "topology.json"}, {"export", "network.yml"}, {"predict", "predict.html"}};
  std::set<std::string> files;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i < results.size() && results[i].status != "skipped") continue;
    files.insert(steps[i].name + ".json");
    if (!steps[i].stdout_name.empty()) files.insert(steps[i].stdout_name);
    if (const auto a = also.find(steps[i].name); a != also.end()) files.insert(a->second);
  }
  return files;
}

// index.html: one page linking every result of the run (relative links, so the folder
// can be moved or copied whole). Returns its absolute path.
fs::path write_index(const fs::path& out, const std::vector<StepResult>& results, std::size_t planned,
                     const Headline& headline, const std::set<std::string>& stale) {
  const auto rel = [&](const std::string& p) { return p.empty() ? std::string() : fs::relative(p, out).string(); };
  const auto link = [](const std::string& href, const std::string& text) {
    return "<a href=\"" + charts::xml_escape(href) + "\">" + charts::xml_escape(text) + "</a>";
  };
  std::string rows;
  for (const auto& r : results) {
    std::string out_cell = "-", log_cell = "-";
    if (!r.stdout_path.empty() && fs::exists(r.stdout_path)) out_cell = link(rel(r.stdout_path), rel(r.stdout_path));
    if (!r.log_path.empty() && fs::exists(r.log_path)) log_cell = link(rel(r.log_path), rel(r.log_path));
    rows += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{:.1f} s</td><td>{}</td><td>{}</td><td><code>{}</code>{}</td></tr>\n",
                        r.status == "ok" ? "ok" : "warning", charts::xml_escape(r.name), charts::xml_escape(r.status),
                        r.seconds, out_cell, log_cell, charts::xml_escape(r.command),
                        r.note.empty() ? "" : "<br>" + charts::xml_escape(r.note));
  }
  std::string files;
  // A skipped step ran nothing: "10 of 10 steps run" with four skipped was not true.
  const auto ran =
      std::count_if(results.begin(), results.end(), [](const StepResult& r) { return r.status != "skipped"; });
  for (const auto& [name, what] : kRunFiles)
    if (fs::exists(out / name) && !stale.count(name))
      files += "<li>" + link(name, name) + ": " + charts::xml_escape(what) + "</li>\n";
  std::string body =
      "<h1>p2pscope run</h1>\n" + headline_html(headline) + "<p>" +
      charts::xml_escape(fs::absolute(out).lexically_normal().string()) +
      fmt::format(": {} of {} steps run.</p>\n", ran, planned) + "<h2>Files</h2>\n<ul>\n" +
      (files.empty() ? "<li>none written</li>\n" : files) + "</ul>\n<h2>Steps</h2>\n" +
      "<table><tr><th>step</th><th>status</th><th>time</th><th>output</th><th>log</th><th>command</th></tr>\n" + rows +
      "</table>\n";
  const fs::path index = fs::absolute(out / "index.html").lexically_normal();
  write_file_atomic(index, charts::html::page("p2pscope run", body), Replace::allow);
  return index;
}

// headline.json: the Results box's figures, for scripts and for the test that the page
// shows what the JSON says.
Headline write_headline(const fs::path& out, const std::set<std::string>& stale) {
  Headline h = read_headline(out, stale);
  nlohmann::json j = {{"schema_version", kSchemaVersion}, {"kind", "p2pscope_run_headline"}, {"numbers", h.numbers},
                      {"items", nlohmann::json::array()}};
  for (const auto& i : h.items)
    j["items"].push_back({{"label", i.label}, {"value", i.value}, {"detail", i.detail}, {"source", i.href}});
  write_file_atomic(out / "headline.json", out::dump_json(j, 2) + "\n", Replace::allow);
  return h;
}

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run",
      "The main job: topology, a short profiling campaign, bench matrix, NCCL all-reduce, TCP loopback, "
      "then analyze, export (ASTRA-sim network.yml) and predict (predict.html); prints where report.html is");
  cmd->add_option("--out", o->out, "Output directory (a previous campaign in it is kept, renamed)")
      ->capture_default_str();
  cmd->add_option("--sizes", o->sizes,
                  "Campaign sizes (default 1:1G, powers of two, with GPUs; 1:64M on the host)");
  cmd->add_option("--reps", o->reps, "Campaign repetitions")->capture_default_str();
  cmd->add_option("--backend", o->backend,
                  "Campaign backend (default ce with 2+ GPUs, staged with one GPU, else host)");
  cmd->add_option("--skip", o->skip, "Steps to skip, comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember(kStepNames));
  cmd->add_option("--step-timeout", o->step_timeout_s, "Seconds a step may run before it is stopped")
      ->capture_default_str();
  cmd->callback([o, &ctx] {
    // Every option checked before the first step runs (exit 2, nothing measured yet).
    if (o->reps < 1) throw UsageError("--reps must be 1 or more (repetitions of each campaign size)");
    if (!(o->step_timeout_s > 0)) throw UsageError("--step-timeout must be more than 0 seconds");
    if (!o->sizes.empty()) {
      try {
        parse_size_list(o->sizes);
      } catch (const UsageError& e) {
        throw UsageError(std::string("--sizes: ") + e.what());
      }
    }
    const fs::path out = o->out;
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw UsageError("cannot create --out " + out.string() + ": " + ec.message());
    // Only a profile step writes a new campaign: with it skipped, the later steps read the
    // one that is there (run --skip profile re-analyzes it), so it stays in place.
    if (std::find(o->skip.begin(), o->skip.end(), "profile") == o->skip.end()) set_aside(out / "campaign");
    const auto rt = gpu::runtime_info();
    trace_phase("run: CUDA runtime read, steps planned");
    std::cerr << "run: " << (rt.device_count > 0 ? fmt::format("{} GPU(s)", rt.device_count)
                                                 : "no GPU (" + rt.why_no_gpu + "): host backend")
              << ", output in " << out.string() << "\n";
    auto steps = plan_steps(*o, rt, out);
    for (auto& s : steps)
      for (const auto& k : o->skip)
        if (s.name == k) s.args.clear(), s.skipped_because = "--skip";
    // A step reading a skipped step's output is skipped with it, said as such (analyze,
    // export and predict read the campaign): failing them would say nothing new.
    // A campaign already in --out stands for a skipped profile (run --skip profile).
    const bool campaign_there = fs::exists(out / "campaign" / "metadata.json");
    for (auto& s : steps)
      for (const auto& need : s.needs)
        for (const auto& other : steps)
          if (other.name == need && other.args.empty() && !s.args.empty() && !(need == "profile" && campaign_there))
            s.args.clear(), s.skipped_because = "needs " + need + ", which is skipped";

    const InterruptFlag interrupt("p2pscope run");
    const StepRunner runner(out, o->step_timeout_s, interrupt.flag(), interrupt.pass_on());
    nlohmann::json record = run_metadata(ctx.argv);
    record["versions"] = gpu::to_json(rt);
    record["steps"] = nlohmann::json::array();
    const auto write_record = [&] {
      write_file_atomic(out / "run.json", out::dump_json(record, 2) + "\n", Replace::allow);
    };
    int failed = 0, ok = 0, skipped = 0;
    std::vector<StepResult> results;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const auto r = runner.run(steps[i], i + 1, steps.size());
      if (r.status == "failed" || r.status == "timed out") ++failed;
      ok += r.status == "ok";
      skipped += r.status == "skipped";
      record["steps"].push_back(to_json(r));
      results.push_back(r);
      write_record();  // after every step: a kill loses nothing already done
      if (r.status == "interrupted") {
        const auto stale = files_not_of_this_run(steps, results);
        const Headline h = write_headline(out, stale);
        const fs::path index = write_index(out, results, steps.size(), h, stale);
        std::cout << "\n" << headline_text(h);
        ctx.exit_code = 128 + (interrupt.signal_number() ? interrupt.signal_number() : SIGINT);
        std::cerr << "run: interrupted; what was measured is in " << out.string() << " (index: " << index.string() << ")\n";
        return;
      }
    }
    trace_phase("run: steps done");
    const fs::path report = out / "campaign" / "report.html";
    const auto stale = files_not_of_this_run(steps, results);
    const Headline headline = write_headline(out, stale);
    const fs::path index = write_index(out, results, steps.size(), headline, stale);
    trace_phase("run: headline and index written");
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
  });
}

}  // namespace p2pscope::app
