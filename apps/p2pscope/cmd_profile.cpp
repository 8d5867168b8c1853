// `p2pscope profile`: the profiling campaign for simulator validation.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "bench/driven_backend.hpp"
#include "bench/sweep.hpp"
#include "bench_common.hpp"
#include "commands.hpp"
#include "monitor_options.hpp"
#include "profile_pattern.hpp"
#include "progress.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/phase_trace.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/monitor.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/signals.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "profile/batching.hpp"
#include "profile/processes.hpp"
#include "simulate/nccl_calibration.hpp"
#include "profile/setup.hpp"

namespace p2pscope::app {
namespace {

struct ProfileOptions {
  std::string gpus, pairs, sizes, backend, out, resume;
  std::string out_root = "p2pscope-out";
  std::uint64_t seed = 42;
  int warmup = 5, reps = 10;
  std::string temp_interval = "1s", drift = "30s";
  std::string thermal_warmup = "50C:60s";
  std::string rewarm_below = "off";
  int rewarm_every = 20;
  std::string timing = "batch", min_sample_time = "200us";
  int processes = 0;          // 0: profile::default_processes(reps), or the resumed campaign's
  std::string process_share;  // "I/K": this is child I of a --processes K campaign
  MonitorCliOptions monitor;
  PatternOptions pattern;  // --pattern: contention instead of the isolated campaign
  std::string nccl_calibration = "auto";  // auto | full | quick | off (simulate/nccl_calibration.hpp)
};

// --monitor: the campaign directory is named inside run_campaign, so without --out the
// monitor starts in <out-root>/monitor-<time>/ and its CSV moves into the campaign
// directory afterwards. A resumed campaign keeps each session's monitor in its own
// <dir>/monitor-<time>/. Returns the result with the CSV's final path.
std::string monitor_dir_for(const ProfileOptions& o) {
  const std::string sub = "monitor-" + compact_timestamp(realtime_ns());
  if (!o.resume.empty()) return (std::filesystem::path(o.resume) / sub).string();
  if (!o.out.empty()) return o.out;
  return (std::filesystem::path(o.out_root) / sub).string();
}

monitor::SessionResult finish_monitor(monitor::MonitorSession& mon, const ProfileOptions& o, const std::string& campaign_dir) {
  namespace fs = std::filesystem;
  monitor::SessionResult r = mon.stop();
  if (!r.ok) return r;
  fs::path dir = fs::path(r.csv_path).parent_path();
  if (o.out.empty() && o.resume.empty() && !campaign_dir.empty()) {  // staged: move into the campaign
    std::error_code ec;
    const fs::path to = fs::path(campaign_dir) / "monitor.csv";
    fs::rename(r.csv_path, to, ec);
    if (!ec) {
      fs::remove(dir, ec);  // only if empty
      dir = campaign_dir;
      r.csv_path = to.string();
      r.json["csv"] = r.csv_path;
    } else {
      r.json["notes"].push_back("monitor.csv left in " + dir.string() + ": " + ec.message());
    }
  }
  // Temporary file and rename: a link planted in the campaign folder is replaced, not
  // written through. A summary that cannot be written costs nothing measured (monitor.csv
  // holds the samples), as when this was an unchecked ofstream.
  try {
    write_file_atomic(dir / "monitor_summary.json", out::dump_json(r.json, 2) + "\n", Replace::allow);
  } catch (const Error&) {
  }
  return r;
}

void print_result(const profile::Result& r) {
  std::printf("campaign: %s\n", r.out_dir.c_str());
  std::printf("ops logged: %zu of %zu (%zu this session)%s\n", r.ops_logged, r.ops_planned, r.ops_this_session,
              r.resumed ? ", resumed" : "");
  std::printf("measurement phase: %.2f s (warmup pass %.2f s + repetitions %.2f s)\n", r.warmup_s + r.measure_s,
              r.warmup_s, r.measure_s);
  if (!r.sizes.empty()) {
    std::printf("\n%-8s %10s %12s %14s %9s %6s %s\n", "backend", "size", "median", "bandwidth", "worst CV", "pairs", "timed on");
    for (const auto& s : r.sizes)
      std::printf("%-8s %10s %12s %14s %8.2f%% %6zu %s\n", s.backend.c_str(), format_size(s.size_bytes).c_str(),
                  format_duration_ns(s.median_ns).c_str(), format_rate(s.bytes_per_s).c_str(), 100 * s.worst_cv,
                  s.pairs, s.device_timed ? "device" : "host");
  }
  if (!r.temperatures.empty()) {
    std::printf("\nGPU temperatures during the campaign:\n");
    for (const auto& t : r.temperatures) {
      if (t.samples == 0) {
        std::printf("  GPU %d: no samples (NVML did not report this device)\n", t.device);
        continue;
      }
      std::printf("  GPU %d: %.1f C +- %.1f (range %.0f-%.0f C), power %.1f W +- %.1f, SM clock %.0f MHz (range %.0f-%.0f), %zu samples\n",
                  t.device, t.temperature_c.mean, t.temperature_c.stddev, t.temperature_c.min, t.temperature_c.max,
                  t.power_w.mean, t.power_w.stddev, t.sm_clock_mhz.mean, t.sm_clock_mhz.min, t.sm_clock_mhz.max, t.samples);
    }
  } else if (!r.temperatures_note.empty()) {
    std::printf("\n%s\n", r.temperatures_note.c_str());
  }
  if (!r.lock_clocks_hint.empty())
    std::printf("\np2pscope does not change GPU clocks. To lock them for steadier numbers, you could run:\n  %s\n",
                r.lock_clocks_hint.c_str());
  if (r.alignment.is_object() && !r.alignment.empty()) {
    const auto& a = r.alignment;
    if (a.value("ops_checked", 0) > 0)
      std::printf("\nclock alignment: GPU times within +-%.0f ns of host time; causality checked on %d ops: %d violation(s)%s\n",
                  a.value("offset_uncertainty_ns_max", 0.0), a.value("ops_checked", 0), a.value("causality_violations", 0),
                  a.value("causality_violations", 0) > 0 ? fmt::format(", worst {:.0f} ns", a.value("worst_violation_ns", 0.0)).c_str() : "");
  }
  for (const auto& w : r.warnings) std::printf("warning: %s\n", w.c_str());
}

// The options whose defaults live in profile::Params: set there only when given.
struct ProfileFlags {
  CLI::Option* gpus;
  CLI::Option* sizes;
  CLI::Option* backend;
  CLI::Option* seed;
  CLI::Option* warmup;
  CLI::Option* reps;
  CLI::Option* min_sample_time;
};

ProfileFlags add_profile_options(CLI::App& cmd, ProfileOptions& o) {
  ProfileFlags f{};
  f.gpus = cmd.add_option("--gpus", o.gpus, "Devices to pair, e.g. 0-3 or 0,2 (default: all)");
  cmd.add_option("--pairs", o.pairs, "Only these directed pairs SRC:DST,... instead of every pair of --gpus; "
                                     "0:0 = one GPU's device-local copy (ce, sm)");
  f.sizes = cmd.add_option("--sizes", o.sizes, "Message sizes, e.g. 1:1G (default, 31 powers of two) or 4K,1M");
  f.backend = cmd.add_option("--backend", o.backend, "Backend(s), comma-separated: ce, sm, nccl, staged, host (default ce with 2+ GPUs, staged with one, else host)");
  f.seed = cmd.add_option("--seed", o.seed, "Seed of the shuffled order (default 42)");
  f.warmup = cmd.add_option("--warmup", o.warmup, "Warmup ops per config, not logged (default 5)");
  f.reps = cmd.add_option("--reps", o.reps, "Measured repetitions over all configs (default 10)");
  cmd.add_option("--out", o.out, "Campaign directory (default p2pscope-out/profile-<gpu>-<driver>-<cuda>-<time>)");
  cmd.add_option("--out-root", o.out_root, "Parent of the default campaign directory")->capture_default_str();
  cmd.add_option("--resume", o.resume, "Continue the interrupted campaign in DIR (same plan; no op repeated)");
  cmd.add_option("--temp-interval", o.temp_interval, "NVML sampling period, 0 = off")->capture_default_str();
  cmd.add_option("--drift", o.drift, "Clock-drift window at start and end, 0 = quick offsets only")->capture_default_str();
  cmd.add_option("--thermal-warmup", o.thermal_warmup, "Heat GPUs to TEMP or for TIME first: 50C:60s, or off")->capture_default_str();
  cmd.add_option("--rewarm-below", o.rewarm_below, "Re-warm a GPU that cooled below this, e.g. 45C (default off)");
  cmd.add_option("--rewarm-every", o.rewarm_every, "Check for re-warming every N measured ops")->capture_default_str();
  cmd.add_option("--timing", o.timing,
                 "batch: a record times transfers back to back, enough to span --min-sample-time (small sizes "
                 "are otherwise timer noise); single: one blocking transfer per record (seed 004's method)")
      ->capture_default_str();
  f.min_sample_time = cmd.add_option("--min-sample-time", o.min_sample_time, "batch timing: the least time one record spans (default 200us; e.g. 50us, 1ms)")
      ->capture_default_str();
  cmd.add_option("--nccl-calibration", o.nccl_calibration,
                 "After the campaign, the short NCCL runs predict's model is calibrated on (kept in DIR/nccl-calibration): "
                 "auto (where NCCL and 2 GPUs are: every op on 2 GPUs, allreduce and sendrecv on all), full (every op on 3 "
                 "GPUs too, for predict --hold-out 2), quick (allreduce and sendrecv only), off")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "full", "quick", "off"}));
  cmd.add_option("--processes", o.processes,
                 "Split the repetitions over K processes run one after the other (each its own context, buffers, "
                 "batch sizes, thread placement): analyze widens each median's interval by the spread of the K "
                 "process medians, which one process cannot see (default 1; 3 measured enough for back-to-back "
                 "campaigns to agree; at most --reps; a resumed campaign keeps its own)");
  cmd.add_option("--process-share", o.process_share, "internal: this process measures share I/K of the repetitions")
      ->group("");
  o.monitor.add(cmd, false);
  add_pattern_options(cmd, o.pattern);
  return f;
}

profile::Params params_from_options(const ProfileOptions& o, const ProfileFlags& f, const Context& ctx) {
  profile::Params p;
  p.argv = ctx.argv;
  if (f.gpus->count()) p.devices = parse_cpulist(o.gpus);
  if (!o.pairs.empty()) p.pairs = bench::parse_pairs(o.pairs);
  if (f.sizes->count()) p.sizes = parse_size_list(o.sizes);
  if (f.backend->count()) p.backends = split_list(o.backend, "--backend");
  if (f.seed->count()) p.seed = o.seed;
  if (f.warmup->count()) p.warmup = o.warmup;
  if (f.reps->count()) p.reps = o.reps;
  p.out_dir = o.out;
  p.out_root = o.out_root;
  p.resume_dir = o.resume;
  if (!o.resume.empty() && !o.out.empty()) throw UsageError("--resume continues in its own directory; drop --out");
  p.temp_interval_s = parse_duration_s(o.temp_interval);
  p.drift_s = parse_duration_s(o.drift);
  if (o.thermal_warmup != "off" && o.thermal_warmup != "0") p.thermal_warmup = profile::parse_thermal_target(o.thermal_warmup);
  if (o.rewarm_below != "off") p.rewarm_below_c = profile::parse_celsius(o.rewarm_below);
  if (o.rewarm_every < 1) throw UsageError("--rewarm-every must be 1 or more");
  p.rewarm_every = o.rewarm_every;
  p.timing = profile::parse_timing(o.timing);
  p.min_sample_ns = profile::parse_min_sample_time(o.min_sample_time);
  if (f.min_sample_time->count() && p.timing == profile::Timing::single)
    throw UsageError("--min-sample-time applies to --timing batch (a record spans it); --timing single times one "
                     "transfer per record: drop one of them");
  if (o.processes < 0) throw UsageError("--processes must be 1 or more");
  if (!o.process_share.empty() &&  // a child of --processes K
      std::sscanf(o.process_share.c_str(), "%d/%d", &p.share.index, &p.share.count) != 2)
    throw UsageError("--process-share '" + o.process_share + "': expected I/K");
  return p;
}

// Under mpirun/srun/torchrun: one process per GPU. Rank 0 runs the campaign and writes
// everything; the other ranks serve its collective calls (driven_backend.hpp) and
// return false once it ends. One process: nothing to do, true.
bool join_ranks(profile::Params& p, ProfileOptions& o, Context& ctx, std::shared_ptr<Bootstrap>& boot_out) {
  if (detect_launch().multi_process()) {  // each rank is already a process
    if (o.processes > 1) throw UsageError("--processes: under a launcher each rank is already a process; drop --processes");
    o.processes = 1;
  }
  const Launched launched = bring_up_ranks(ctx, [&p](const LaunchInfo& l) {
    if (!p.backends) p.backends = std::vector<std::string>{bench::default_backend(bench::this_machine(true)).name};
    if (std::any_of(p.backends->begin(), p.backends->end(),
                    [](const std::string& b) { return !bench::resolve_backend(b).info->can.ranks; }))
      throw UsageError(fmt::format("this is rank {} of {} processes ({}): a campaign of one process per GPU runs "
                                   "--backend nccl only; the other backends drive every GPU from one process: run "
                                   "them without the launcher", l.rank, l.size, l.launcher));
  });
  if (!launched.boot) return true;
  const std::shared_ptr<Bootstrap> boot = launched.boot;
  boot_out = boot;
  bench::BackendOptions bo;
  bo.bootstrap = boot;
  bo.rank_device = launched.launch.local_rank;
  if (launched.launch.rank != 0) {
    ignore_interrupt();  // rank 0 decides when to stop (it saves, then tells us)
    auto b = bench::make_backend(p.backends->front(), bo);
    bench::serve_backend(*b, *boot);
    return false;
  }
  p.own_pids = launched.own_pids_here();
  p.make_backend = [bo, boot](const std::string& name) {
    return bench::make_driven_backend(bench::make_backend(name, bo), boot);
  };
  return true;
}

// --monitor beside the campaign. A campaign on GPUs waits in cudaStreamSynchronize: tell
// the monitor, so a spinning waiter is not called CPU-bound. A host-memcpy campaign
// really is CPU work.
std::unique_ptr<monitor::MonitorSession> start_monitor(const ProfileOptions& o, const std::vector<std::string>& backends) {
  if (!o.monitor.enabled) return nullptr;
  monitor::Options mo;
  mo.host_waits_on_gpu = std::all_of(backends.begin(), backends.end(),
                                     [](const std::string& b) { return bench::capabilities_of(b).gpu_memory; });
  return std::make_unique<monitor::MonitorSession>(monitor_dir_for(o), o.monitor.interval_s(), mo);
}

// The campaign in this process, or split over --processes K children (src/profile/processes.cpp).
profile::Result run_campaign_or_processes(profile::Params& p, const ProfileOptions& o, int processes,
                                          const std::string& backend, bool backend_given, Context& ctx) {
  if (processes > 1 && o.process_share.empty()) {
    profile::ProcessCampaign pc{ctx.argv, o.out, o.out_root, o.resume, backend, backend_given, processes,
                       p.drift_s, p.stop, p.thermal_warmup};
    return profile::run_profile_processes(pc);
  }
  if (o.process_share.empty()) p.share.count = std::max(1, processes);
  return profile::run_campaign(p);
}

// --nccl-calibration: after the campaign, the runs `predict` calibrates its NCCL model
// on, kept in the campaign directory. auto = full where NCCL is built in and two GPUs
// are visible (one process only: under a launcher the ranks hold the GPUs).
void calibrate_nccl(const ProfileOptions& o, const std::string& dir, const std::atomic<bool>* stop) {
  if (o.nccl_calibration == "off") return;
  const auto rt = gpu::runtime_info();
  std::string why_not;
  if (!rt.nccl_built) why_not = "NCCL is not built in";
  else if (rt.device_count < 2) why_not = fmt::format("{} GPU visible, it needs two", rt.device_count);
  else if (detect_launch().multi_process()) why_not = "under a launcher the ranks hold the GPUs";
  if (!why_not.empty()) {
    if (o.nccl_calibration != "auto") throw Error("--nccl-calibration " + o.nccl_calibration + ": " + why_not);
    std::fprintf(stderr, "profile: no NCCL calibration (%s): predict will use NCCL's defaults and say so\n", why_not.c_str());
    return;
  }
  simulate::CalibrationOptions c;
  if (o.gpus.empty())
    for (int d = 0; d < rt.device_count; ++d) c.gpus.push_back(d);
  else
    c.gpus = parse_cpulist(o.gpus);
  c.quick = o.nccl_calibration == "quick";
  c.full = o.nccl_calibration == "full";
  c.stop = stop;
  c.say = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  std::fprintf(stderr, "profile: NCCL calibration for predict (--nccl-calibration off skips it)\n");
  simulate::run_nccl_calibration(dir, c);
}

// Under a launcher: what the campaign cost on the bootstrap (rank 0 relays every frame),
// the launcher path's overhead per op in figures.
void print_launcher_cost(const BootstrapCounters& a, const BootstrapCounters& b, int size, std::int64_t wall_ns) {
  const double calls = static_cast<double>(b.collectives - a.collectives);
  const double frames = static_cast<double>(b.frames_sent - a.frames_sent + b.frames_received - a.frames_received);
  const double in_s = static_cast<double>(b.collective_ns - a.collective_ns) / 1e9;
  std::fprintf(stderr,
               "launcher path (rank 0 of %d): %.0f bootstrap collectives, %.0f frames (%.1f per peer), %.0f KB; "
               "%.2f s of the %.2f s inside them (waits on the other ranks included)\n",
               size, calls, frames, frames / std::max(1, size - 1),
               static_cast<double>(b.bytes_sent - a.bytes_sent + b.bytes_received - a.bytes_received) / 1e3, in_s,
               static_cast<double>(wall_ns) / 1e9);
}

void run_isolated_campaign(profile::Params p, const ProfileOptions& o, Context& ctx) {
  // The default backend (the one `run` picks): chosen here so it is said before the
  // campaign starts, and so a one-GPU host gets staged, not a refusal.
  const bool backend_given = p.backends.has_value();
  const bench::DefaultBackend def = bench::default_backend(bench::this_machine());
  if (!p.backends && p.resume_dir.empty()) {
    p.backends = std::vector<std::string>{def.name};
    std::fprintf(stderr, "profile: backend %s (no --backend given; --backend chooses)\n", def.reason.c_str());
  }
  const auto backends = p.backends.value_or(std::vector<std::string>{def.name});
  ProgressPrinter progress;
  p.on_progress = [&progress](const profile::Progress& pr) { progress(pr); };
  p.on_note = [&progress](const std::string& s) {
    progress.finish();
    std::fprintf(stderr, "%s\n", s.c_str());
  };
  p.setup_note_after_s = progress_after_s(1.0);
  InterruptFlag interrupt("p2pscope profile", o.process_share.empty());  // a child: the parent said it
  p.stop = interrupt.flag();
  std::unique_ptr<monitor::MonitorSession> mon = start_monitor(o, backends);
  int processes = o.processes;
  if (processes == 0 && o.process_share.empty())
    processes = o.resume.empty() ? profile::default_processes(o.reps) : profile::saved_processes(o.resume);
  profile::Result r;
  try {
    r = run_campaign_or_processes(p, o, processes, backends.front(), backend_given, ctx);
  } catch (...) {
    // Refused before measuring (bad --gpus...) or failed: no staged monitor left behind.
    if (mon && o.out.empty() && o.resume.empty()) {
      const std::string staged = mon->csv_path();
      mon->stop();
      std::error_code ec;
      if (!staged.empty()) std::filesystem::remove_all(std::filesystem::path(staged).parent_path(), ec);
    }
    throw;
  }
  progress.finish();
  print_result(r);
  trace_phase("profile: campaign returned");
  if (!r.interrupted && o.process_share.empty()) calibrate_nccl(o, r.out_dir, p.stop);
  trace_phase("profile: NCCL calibration done");
  if (processes > 1)
    std::printf("repetitions split over %d processes: analyze widens each median's interval by the spread of the "
                "process medians\n", processes);
  if (mon) {
    std::printf("\n");
    print_monitor_lines(finish_monitor(*mon, o, r.out_dir), stdout);
  }
  if (r.interrupted) {
    std::printf("\ninterrupted: %zu of %zu ops are in the log; continue with:\n  p2pscope profile --resume %s\n",
                r.ops_logged, r.ops_planned, r.out_dir.c_str());
    ctx.exit_code = 130;
  }
}

}  // namespace

void add_profile_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ProfileOptions>();
  auto* cmd = app.add_subcommand(
      "profile",
      "Profiling campaign for simulator validation: every directed device pair x sizes, shuffled order, "
      "warmup + repetitions, execution log, metadata, temperatures, clock drift, Chrome trace");
  const ProfileFlags flags = add_profile_options(*cmd, *o);
  cmd->callback([o, &ctx, flags] {
    if (!o->pattern.pattern.empty()) {  // profile_pattern.cpp
      if (!o->pairs.empty() || !o->resume.empty()) throw UsageError("--pattern takes --gpus, not --pairs or --resume");
      bring_up_ranks(ctx, one_process_only("profile --pattern"));  // k flows at once from one process
      run_profile_pattern(o->pattern, o->gpus, o->sizes, o->backend, o->warmup, o->reps, o->out, o->out_root, ctx);
      return;
    }
    profile::Params p = params_from_options(*o, flags, ctx);
    if (!o->process_share.empty()) profile::die_with_parent();  // a child of --processes K
    std::shared_ptr<Bootstrap> boot;
    if (!join_ranks(p, *o, ctx, boot)) return;  // a rank other than 0: it served rank 0's campaign
    const BootstrapCounters before = boot ? boot->counters() : BootstrapCounters{};
    const std::int64_t t0 = monotonic_ns();
    run_isolated_campaign(std::move(p), *o, ctx);
    if (boot) print_launcher_cost(before, boot->counters(), boot->size(), monotonic_ns() - t0);
  });
}

}  // namespace p2pscope::app
