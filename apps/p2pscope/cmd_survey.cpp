// `p2pscope survey`: one process per host under mpirun, srun or torchrun; the links of
// every host measured in rounds of disjoint pairs, and which link, NIC or host is slow
// (src/survey/, docs/survey.md). This file parses options and writes what rank 0 gets.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "commands.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/json_words.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "survey/campaign.hpp"
#include "survey/report.hpp"
#include "survey/survey.hpp"
#include "survey/time_model.hpp"

namespace p2pscope::app {
// Named, not anonymous: the unity build puts this file in one batch with the other
// commands, whose anonymous run() and write_file() would collide.
namespace survey_cmd {

struct SurveyCli {
  std::string pairs = "all", nics, hosts, transport = "tcp", plugin, expect, rails;
  std::string size = "64M", chunk = "1M", ping_size = "8";
  std::uint32_t channels = 1, window = 4, iters = 9, warmup = 1, pings = 200;
  std::uint64_t seed = 1;
  double timeout_s = 10, round_timeout_s = 60, max_time_s = 0;
  double threshold_pct = 5, latency_threshold_pct = 50;
  bool no_latency = false, no_local = false, no_recheck = false;
  std::string format = "text", out, resume;
  std::string plan, from;  // --plan N,N...: the time model, no launch
  std::string gpu_backend = "auto", gpu_size = "256M";
  std::string sizes;  // --sizes: the survey as a campaign across hosts
};

void add_options(CLI::App& c, SurveyCli& o) {
  c.add_option("--pairs", o.pairs, "all (every pair: the circle method, N-1 rounds of N/2 pairs), ring, random:K")
      ->capture_default_str();
  c.add_option("--nics", o.nics, "the NICs to survey, one per rail, the same names on every host (default: every IPv4 "
                                 "NIC but loopback and the one the rendezvous goes over)");
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
               "tcp (bench tcp's engine over sockets) or net (bench net's: an NCCL net plugin, each rail over the "
               "plugin device that is its NIC)")
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

double parse_pct(double v, const char* flag) {
  if (!(v > 0 && v < 100)) throw UsageError(fmt::format("{} {}: expected a percentage between 0 and 100", flag, v));
  return v;
}

survey::Options to_options(const SurveyCli& c, const LaunchInfo& launch) {
  if (c.transport != "tcp" && c.transport != "net")
    throw UsageError("--transport " + c.transport + ": expected tcp (sockets) or net (an NCCL net plugin); NCCL "
                     "send/recv between hosts is bench nccl's, not the survey's yet");
  if (!c.plugin.empty() && c.transport != "net")
    throw UsageError("--plugin goes with --transport net (the survey's links over an NCCL net plugin)");
  if (c.format != "text" && c.format != "json" && c.format != "csv")
    throw UsageError("--format " + c.format + ": expected text, json or csv");
  survey::Options o;
  o.pairs = survey::parse_pairs(c.pairs);
  o.seed = c.seed;
  o.transport = c.transport;
  o.plugin = c.plugin;
  if (!c.nics.empty()) o.nics = split_list(c.nics, "--nics");
  if (!c.rails.empty()) o.rails = survey::parse_rails(c.rails, o.nics);
  if (!c.hosts.empty()) o.expect_hosts = split_list(c.hosts, "--hosts");
  if (!c.expect.empty()) o.expect = survey::parse_expect(c.expect);
  o.gpu_backend = c.gpu_backend;
  std::vector<std::string> names = bench::backend_names();
  std::erase(names, "nccl");  // one process per GPU: not a host's own device pairs
  if (c.gpu_backend != "auto" && c.gpu_backend != "none" &&
      std::find(names.begin(), names.end(), c.gpu_backend) == names.end())
    throw UsageError(fmt::format("--gpu-backend {}: expected auto, none or one of bench gpu's one-process backends "
                                 "({})", c.gpu_backend, fmt::join(names, ", ")));
  o.gpu_size = parse_size(c.gpu_size);
  if (o.gpu_size == 0) throw UsageError("--gpu-size must be at least 1 byte");
  o.gpu_iters = static_cast<int>(c.iters);
  if (!c.sizes.empty()) {
    o.sizes = parse_size_list(c.sizes);
    if (o.sizes.empty() || o.sizes.front() == 0) throw UsageError("--sizes " + c.sizes + ": expected sizes of 1 byte or more");
    if (o.sizes.size() < 2)
      throw UsageError("--sizes " + c.sizes + ": give two sizes or more (e.g. 1K:1M): a link's model needs two points");
    if (o.sizes.size() > 40)
      throw UsageError(fmt::format("--sizes {}: {} sizes; at most 40 (each link ping-pongs every one)", c.sizes,
                                   o.sizes.size()));
    if (o.sizes.back() > (1ull << 30))
      throw UsageError("--sizes " + c.sizes + ": at most 1G per message");
  }
  o.bw.mode = tcp::Mode::bidir;
  o.bw.size_bytes = parse_size(c.size);
  o.bw.chunk_bytes = std::min<std::uint64_t>(parse_size(c.chunk), o.bw.size_bytes);
  o.bw.channels = c.channels;
  o.bw.window = c.window;
  o.bw.iters = c.iters;
  o.bw.warmup = c.warmup;
  o.bw.timeout_s = c.timeout_s;
  if (c.iters < 3) throw UsageError("--iters must be at least 3: each link's interval comes from its rounds");
  o.lat = o.bw;
  o.lat.mode = tcp::Mode::latency;
  o.lat.size_bytes = o.lat.chunk_bytes = parse_size(c.ping_size);
  o.lat.iters = c.pings;
  o.lat.warmup = 0;
  tcp::validate(o.bw);
  tcp::validate(o.lat);
  o.latency = !c.no_latency;
  o.local = !c.no_local;
  o.recheck = !c.no_recheck;
  if (!(c.round_timeout_s > 0)) throw UsageError("--round-timeout must be a positive number of seconds");
  if (!(c.max_time_s >= 0)) throw UsageError("--max-time must be 0 (no bound) or a number of seconds");
  o.round_timeout_s = c.round_timeout_s;
  o.max_time_s = c.max_time_s;
  o.outliers.threshold_pct = parse_pct(c.threshold_pct, "--threshold");
  o.outliers.latency_threshold_pct = c.latency_threshold_pct > 0 ? c.latency_threshold_pct
                                                                  : throw UsageError("--latency-threshold must be positive");
  o.rendezvous_host = launch.rendezvous_host;
  return o;
}

std::vector<survey::Record> read_resume(const std::string& dir) {
  const std::filesystem::path p = std::filesystem::path(dir) / "rounds.jsonl";
  std::ifstream f(p);
  if (!f) throw UsageError(fmt::format("--resume {}: no rounds.jsonl there (the --out DIR of an earlier survey)", dir));
  std::vector<survey::Record> out;
  std::string line;
  int n = 0, bad = 0;
  while (std::getline(f, line)) {
    ++n;
    if (trim(line).empty()) continue;
    try {
      out.push_back(survey::record_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception&) {
      ++bad;  // a line cut by a crash: that task runs again
    }
  }
  if (bad > 0)
    std::fprintf(stderr, "p2pscope survey: --resume: %d of %d lines of %s do not parse; their tasks run again\n", bad, n,
                 p.c_str());
  return out;
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
  if (!f) throw Error("survey: could not write " + p.string());
}

// A survey.json back into the figures the time model needs.
survey::Result read_survey(const std::string& path_text) {
  std::filesystem::path p(path_text);
  if (std::filesystem::is_directory(p)) p /= "survey.json";
  std::ifstream f(p);
  if (!f) throw UsageError("--from " + path_text + ": no survey.json there (a survey's --out DIR or its survey.json)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception&) {
    throw UsageError("--from " + p.string() + ": not JSON (a survey's survey.json)");
  }
  if (!j.is_object() || j.value("kind", "") != "p2pscope_survey")
    throw UsageError("--from " + p.string() + ": not a survey's JSON (its kind is not p2pscope_survey)");
  survey::Result r;
  try {
    for (const auto& h : j.at("hosts")) r.hosts.push_back(survey::host_from_json(h));
    for (const auto& rec : j.at("records")) r.records.push_back(survey::record_from_json(rec));
    r.names.rails = j.at("rails").get<std::vector<std::string>>();
    r.wall_s = j.at("wall_s").get<double>();
    r.shared_kernel = j.at("shared_kernel").get<bool>();
    r.shared_cpus = j.value("shared_cpus", r.shared_kernel);
    r.transport = j.value("transport", std::string("tcp"));
  } catch (const std::exception& e) {
    throw UsageError("--from " + p.string() + ": a survey JSON this version cannot read (" +
                     json_error_words(e.what()) + ")");
  }
  return r;
}

void print_plan(const SurveyCli& c) {
  const survey::PairsSpec pairs = survey::parse_pairs(c.pairs);
  const int rails = c.nics.empty() ? 2 : static_cast<int>(split_list(c.nics, "--nics").size());
  survey::StepCosts costs = c.from.empty() ? survey::default_costs(rails) : survey::costs_from(read_survey(c.from));
  if (c.no_latency) costs.latency = false;
  std::printf("survey plan, --pairs %s, %d rail%s; step costs %s%s\n", c.pairs.c_str(), costs.rails,
              costs.rails == 1 ? "" : "s", costs.source.c_str(),
              costs.shared_kernel ? " (hosts on one kernel: local and latency sessions one at a time)" : "");
  const auto hours = [](double s) { return s < 3600 ? fmt::format("{:.0f} s", s) : fmt::format("{:.1f} h", s / 3600); };
  std::printf("%8s %8s %10s %10s %12s %16s %12s %14s\n", "hosts", "rounds", "pairs", "sessions", "time",
              "separate hosts", "records", "rank-0 memory");
  for (const std::string& item : split_list(c.plan, "--plan")) {
    long long n = 0;
    try {
      n = parse_int(item, "--plan");
    } catch (const Error&) {
      n = 0;
    }
    if (n < 2 || n > 100000) throw UsageError("--plan " + item + ": expected a host count from 2 to 100000");
    const survey::Plan p = survey::plan(costs, static_cast<int>(n), pairs);
    std::printf("%8d %8d %10d %10d %12s %16s %12s %14s\n", p.hosts, p.rounds, p.pairs, p.sessions,
                hours(p.seconds).c_str(), hours(p.seconds_separate).c_str(),
                format_size(static_cast<std::uint64_t>(p.record_bytes)).c_str(),
                format_size(static_cast<std::uint64_t>(p.rank0_memory_bytes)).c_str());
  }
}

// --sizes: the links' models where export reads them (analyze's links.json).
void write_links(const std::filesystem::path& dir, const survey::Result& r) {
  const auto links = survey::link_models(r);
  if (links.empty()) {
    std::fprintf(stderr, "p2pscope survey: --sizes: no link has two sizes measured (see the failed sessions above): no "
                 "links.json written; run again with --resume DIR to measure the rest\n");
    return;
  }
  write_file(dir / "links.json", out::dump_json(survey::links_json(r, links), 1) + "\n");
  std::fprintf(stderr, "p2pscope survey: wrote %s/links.json (%zu links' models): p2pscope export %s --to astra-sim\n",
               dir.c_str(), links.size(), dir.c_str());
}

void run(const SurveyCli& c, Context& ctx) {
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
  survey::Options o = to_options(c, up.launch);
  const bool reporter = up.reporter();
  std::string out = c.out.empty() ? (c.resume.empty() ? "p2pscope-out/survey-" + compact_timestamp(realtime_ns()) : c.resume) : c.out;
  std::ofstream log;
  if (reporter) {
    if (!c.resume.empty()) o.resumed = read_resume(c.resume);
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
  write_file(dir / "survey.json", json_text);
  write_file(dir / "survey.csv", survey::to_csv(r));
  write_file(dir / "survey.html", survey::to_html(r));
  if (!o.sizes.empty()) write_links(dir, r);
  if (c.format == "json") std::fputs(json_text.c_str(), stdout);
  else if (c.format == "csv") std::fputs(survey::to_csv(r).c_str(), stdout);
  else std::fputs(survey::to_text(r).c_str(), stdout);
  std::fprintf(stderr, "p2pscope survey: wrote %s/survey.{json,csv,html} and rounds.jsonl\n", out.c_str());
  if (!r.verdict.findings.empty()) ctx.exit_code = 3;  // found something: scripts can tell
}

}  // namespace survey_cmd

void add_survey_command(CLI::App& app, Context& ctx) {
  using namespace survey_cmd;
  auto opts = std::make_shared<SurveyCli>();
  auto* c = app.add_subcommand("survey", "A fleet's links: every host's NICs against every other's in rounds of "
                                         "disjoint pairs (one process per host under mpirun/srun/torchrun), and which "
                                         "link, NIC or host is slow, each figure with its interval");
  add_options(*c, *opts);
  c->callback([opts, &ctx] { run(*opts, ctx); });
}

}  // namespace p2pscope::app
