// `p2pscope survey`: one process per host under mpirun, srun or torchrun; the links of
// every host measured in rounds of disjoint pairs, and which link, NIC or host is slow
// (src/survey/, docs/survey.md). This file binds the options (survey/request.hpp checks
// them), brings the ranks up and prints what rank 0 gets.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "commands.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "survey/files.hpp"
#include "survey/report.hpp"
#include "survey/request.hpp"
#include "survey/survey.hpp"
#include "survey/time_model.hpp"

namespace p2pscope::app {
// Named, not anonymous: the unity build puts this file in one batch with the other
// commands, whose anonymous run() would collide.
namespace survey_cmd {

void add_options(CLI::App& c, survey::Request& o) {
  c.add_option("--pairs", o.pairs, "all (every pair: the circle method, N-1 rounds of N/2 pairs), ring, random:K")
      ->capture_default_str();
  c.add_option("--nics", o.nics, "the NICs to survey, one per rail, the same names on every host (default: every IPv4 "
                                 "NIC but loopback and the one the rendezvous goes over)");
  c.add_option("--per", o.per,
               "host (one process per host) or gpu (one per GPU, as torchrun and srun --ntasks-per-node=G start them: "
               "the ranks of a host make that host, rail r runs from its r-th rank, the local ceiling and device pairs "
               "from its first)")
      ->capture_default_str();
  c.add_option("--hosts", o.hosts, "the host names the ranks must run on, each once (a check of the launcher's list)");
  c.add_option("--rails", o.rails,
               "which NIC meets which on the peer: 0:0,1:1 (the default, NIC i with NIC i), 0:1,1:0 (across rails), or "
               "names of --nics (eth1:eth2); LOW:HIGH is the NIC of the pair's lower-ranked host, then the higher's");
  c.add_option("--gpu-backend", o.gpu_backend,
               "inside each host, every directed device pair: auto (ce with 2+ GPUs, host memory between NUMA nodes "
               "without a GPU, nothing with one GPU), a bench gpu backend (ce, ce-pull, sm, host), or none")
      ->capture_default_str();
  c.add_option("--gpu-size", o.gpu_size, "bytes per copy of a device pair (host backend: at most 64M)")->capture_default_str();
  c.add_option("--expect", o.expect,
               "what the links should carry, e.g. bw=23MB/s,lat=50us,local=1GB/s (each part optional; bw per direction "
               "of a link): a whole class below it is a finding, which comparing peers cannot see");
  c.add_option("--transport", o.transport,
               "tcp (bench tcp's engine over sockets), net (bench net's: an NCCL net plugin, each rail over the "
               "plugin device that is its NIC) or nccl (NCCL's own send/recv, a child process per link side, the "
               "rail's NIC as NCCL_SOCKET_IFNAME; needs a GPU on every host)")
      ->capture_default_str();
  c.add_option("--plugin", o.plugin, "--transport net: the plugin, a path, a file or NAME (libnccl-net-NAME.so); "
                                     "default $NCCL_NET_PLUGIN, else libnccl-net.so, as NCCL resolves it");
  c.add_option("--size", o.size, "bytes per timed round of each link's bandwidth session")->capture_default_str();
  c.add_option("--sizes", o.sizes,
               "a campaign across hosts: each link ping-pongs each message size (1K,64K,1M or 1K:1M, every power of "
               "two), and DIR/links.json holds each link's alpha-beta model for `p2pscope export DIR --to astra-sim`");
  c.add_option("--chunk", o.chunk, "chunk size")->capture_default_str();
  c.add_option("--channels", o.channels, "channels (TCP connections) per link")->capture_default_str();
  c.add_option("--window", o.window, "chunks in flight per channel")->capture_default_str();
  // 9: the fewest rounds whose median's 95 % interval leaves out the lowest and the
  // highest round, so that one stalled round neither moves a link's figure nor widens it
  // to the floor (16 namespace hosts on the 16-core machine: 3 of 20 healthy surveys had
  // a link flagged twice at 5 rounds, from rounds that swung by a quarter).
  c.add_option("--iters", o.iters, "timed rounds per link (each link's interval comes from them)")->capture_default_str();
  c.add_option("--warmup", o.warmup, "untimed rounds before them")->capture_default_str();
  c.add_option("--pings", o.pings, "latency: ping-pongs per link")->capture_default_str();
  c.add_option("--ping-size", o.ping_size, "latency: message size")->capture_default_str();
  c.add_option("--timeout", o.timeout_s, "a session's step longer than this fails it (s)")->capture_default_str();
  c.add_option("--round-timeout", o.round_timeout_s, "a rank silent this long in a step is dropped (s)")
      ->capture_default_str();
  c.add_option("--max-time", o.max_time_s, "bound on the whole survey (s; 0: none); --resume goes on")
      ->capture_default_str();
  c.add_option("--threshold", o.threshold_pct, "bandwidth: a flag needs at least this % below its class")
      ->capture_default_str();
  c.add_option("--latency-threshold", o.latency_threshold_pct, "latency: a flag needs a p50 this % above its class")
      ->capture_default_str();
  c.add_option("--seed", o.seed, "random:K's seed")->capture_default_str();
  c.add_flag("--no-latency", o.no_latency, "bandwidth only");
  c.add_flag("--no-local", o.no_local, "skip each host's local ceiling (bench tcp over loopback)");
  c.add_flag("--no-recheck", o.no_recheck, "no second pass of suspects against good partners");
  c.add_option("--format", o.format, "what rank 0 prints: text, json or csv")->capture_default_str();
  c.add_option("--out", o.out, "DIR for survey.json, survey.csv, survey.html and rounds.jsonl (default "
                               "p2pscope-out/survey-<time>)");
  c.add_option("--resume", o.resume, "DIR of an earlier survey of these hosts: its measured tasks are kept, the rest run");
  c.add_option("--plan", o.plan, "N[,N...]: no launch; the schedule and the predicted time, output size and rank 0's "
                                 "memory for N hosts");
  c.add_option("--from", o.from, "--plan: price the steps with this survey's measured sessions (DIR or survey.json)");
}

std::vector<survey::Record> resumed_records(const std::string& dir) {
  survey::ResumeRecords r = survey::read_resume(dir);
  if (r.bad_lines > 0)
    std::fprintf(stderr, "p2pscope survey: --resume: %d of %d lines of %s do not parse; their tasks run again\n",
                 r.bad_lines, r.lines, r.path.c_str());
  return std::move(r.records);
}

void print_plan(const survey::Request& c) {
  const survey::PairsSpec pairs = survey::parse_pairs(c.pairs);
  const survey::StepCosts costs = survey::plan_costs(c);
  std::printf("survey plan, --pairs %s, %d rail%s; step costs %s%s\n", c.pairs.c_str(), costs.rails,
              costs.rails == 1 ? "" : "s", costs.source.c_str(),
              costs.shared_kernel ? " (hosts on one kernel: local and latency sessions one at a time)" : "");
  const auto hours = [](double s) { return s < 3600 ? fmt::format("{:.0f} s", s) : fmt::format("{:.1f} h", s / 3600); };
  std::printf("%8s %8s %10s %10s %12s %16s %12s %14s\n", "hosts", "rounds", "pairs", "sessions", "time",
              "separate hosts", "records", "rank-0 memory");
  for (const std::string& item : split_list(c.plan, "--plan")) {
    const survey::Plan p = survey::plan_row(costs, item, pairs);
    std::printf("%8d %8d %10d %10d %12s %16s %12s %14s\n", p.hosts, p.rounds, p.pairs, p.sessions,
                hours(p.seconds).c_str(), hours(p.seconds_separate).c_str(),
                format_size(static_cast<std::uint64_t>(p.record_bytes)).c_str(),
                format_size(static_cast<std::uint64_t>(p.rank0_memory_bytes)).c_str());
  }
}

// --sizes: where the links' models went (export reads them), or why there are none.
void say_links(const std::filesystem::path& dir, const survey::LinksWritten& w) {
  if (w.links == 0) {
    std::fprintf(stderr, "p2pscope survey: --sizes: no link has two sizes measured (see the failed sessions above): no "
                 "links.json written; run again with --resume DIR to measure the rest\n");
    return;
  }
  std::fprintf(stderr, "p2pscope survey: wrote %s/links.json (%zu links' models): p2pscope export %s --to astra-sim\n",
               dir.c_str(), w.links, dir.c_str());
  if (!w.grid_backend.empty())
    std::fprintf(stderr, "p2pscope survey: two dimensions, the device pairs inside the hosts and the rail across them: "
                 "p2pscope export %s --to astra-sim --backend '%s'\n", dir.c_str(), w.grid_backend.c_str());
}

void run(const survey::Request& c, Context& ctx) {
  if (!c.plan.empty()) {
    print_plan(c);
    return;
  }
  if (!c.from.empty()) throw UsageError("--from goes with --plan N (the time model), not with a survey run");
  // A survey rank's sender and receiver threads share such a core: the figure would be the
  // core's, not the NIC's (unless the hosts are namespaces pinned on purpose).
  const Launched up = bring_up_ranks(ctx, {},
                                     "a link's sender and receiver threads then share that core, and a figure can be "
                                     "the core's rather than the link's (namespace hosts pinned on purpose excepted)");
  survey::Options o = survey::options_of(c, up.launch.rendezvous_host);
  const bool reporter = up.reporter();
  std::string out = c.out.empty() ? (c.resume.empty() ? "p2pscope-out/survey-" + compact_timestamp(realtime_ns()) : c.resume) : c.out;
  std::ofstream log;
  if (reporter) {
    if (!c.resume.empty()) o.resumed = resumed_records(c.resume);
    std::filesystem::create_directories(out);
    log.open(std::filesystem::path(out) / "rounds.jsonl", std::ios::app);
    if (!log) throw UsageError("survey: cannot write " + out + "/rounds.jsonl");
    o.progress = [](const std::string& l) { std::fprintf(stderr, "p2pscope survey: %s\n", l.c_str()); };
    o.record = [&log](const nlohmann::json& j) { log << out::dump_json(j) << "\n" << std::flush; };
  }
  std::unique_ptr<Bootstrap> single;
  Bootstrap* boot = up.boot.get();
  if (!boot) {
    single = make_single_bootstrap();
    boot = single.get();
  }
  const survey::Result r = survey::run(*boot, o);
  if (!reporter) return;
  nlohmann::json body = survey::to_json(r);
  body["launch"] = launch_json(up.launch, up.rank_cpus);
  const auto doc = out::measured_json(run_metadata(ctx.argv), body);
  const std::string json_text = out::dump_json(doc, 2) + "\n";
  const std::filesystem::path dir(out);
  const survey::LinksWritten links = survey::write_survey_files(dir, r, json_text, !o.sizes.empty());
  if (!o.sizes.empty()) say_links(dir, links);
  if (c.format == "json") std::fputs(json_text.c_str(), stdout);
  else if (c.format == "csv") std::fputs(survey::to_csv(r).c_str(), stdout);
  else std::fputs(survey::to_text(r).c_str(), stdout);
  std::fprintf(stderr, "p2pscope survey: wrote %s/survey.{json,csv,html} and rounds.jsonl\n", out.c_str());
  if (!r.verdict.findings.empty()) ctx.exit_code = 3;  // found something: scripts can tell
}

}  // namespace survey_cmd

void add_survey_command(CLI::App& app, Context& ctx) {
  using namespace survey_cmd;
  auto opts = std::make_shared<survey::Request>();
  auto* c = app.add_subcommand("survey", "A fleet's links: every host's NICs against every other's in rounds of "
                                         "disjoint pairs (one process per host under mpirun/srun/torchrun), and which "
                                         "link, NIC or host is slow, each figure with its interval");
  add_options(*c, *opts);
  c->callback([opts, &ctx] { run(*opts, ctx); });
}

}  // namespace p2pscope::app
