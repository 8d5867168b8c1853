// p2pscope monitor [--interval 1s] [--out DIR] [--duration 30s | -- COMMAND ...]
// The run-time sampler on its own, around any command (nccl-tests, a training job):
// a held child (p2pscope/child_process.hpp), SIGINT/SIGTERM sent with kill() forwarded to the child, the command's
// exit status returned (127 when it cannot be found, 128+N when killed by signal N).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "monitor/collect.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/child_process.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/monitor.hpp"
#include "p2pscope/signals.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::app {
namespace {
// "CPU-bound on CPUs 0-1" is said of the machine's CPUs. Around a command, it is the
// command's only when its own work explains most of that load: its sampled threads on
// those CPUs, or, for a command that starts others (mpirun, a shell script), the CPU
// time of it and its children (`tree_cpu_s`, from wait4). Otherwise the verdict names
// the CPUs as busy with other processes (before, `monitor -- sleep 2` on a busy box
// said "CPU-bound").
std::vector<std::string> command_verdicts(const monitor::Summary& s, double tree_cpu_s) {
  std::vector<std::string> out = monitor::verdict_lines(s);
  const monitor::BusyCpus busy = monitor::classify_busy_cpus(s);
  if (busy.bound.empty() || !(s.duration_s > 0)) return out;
  double load_s = 0, own_s = 0;
  for (const auto& c : s.cpus)
    if (std::find(busy.bound.begin(), busy.bound.end(), c.cpu) != busy.bound.end()) load_s += c.busy_pct / 100 * s.duration_s;
  for (const auto& t : s.threads) {
    if (t.name == monitor::kMonitorThread) continue;
    for (int c : busy.bound)
      if (const auto it = t.cpu_s_by_cpu.find(c); it != t.cpu_s_by_cpu.end()) own_s += it->second;
  }
  if (load_s > 0 && std::max(own_s, tree_cpu_s) >= 0.5 * load_s) return out;
  for (auto& line : out)
    if (line.rfind("CPU-bound", 0) == 0)
      line = fmt::format("CPU{} {} busy, but not with the command's work (it and its children used {:.0f}% of a CPU, "
                         "{:.0f}% of that load): other processes were running there",
                         busy.bound.size() > 1 ? "s" : "", format_cpulist(busy.bound), 100 * tree_cpu_s / s.duration_s,
                         load_s > 0 ? 100 * std::max(own_s, tree_cpu_s) / load_s : 0.0);
  return out;
}

std::string live_line(const monitor::Interval& iv, double elapsed_s) {
  std::string s = fmt::format("{:6.0f}s", elapsed_s);
  std::vector<monitor::CpuShare> cpus = iv.cpus;
  double busy = 0, soft = 0;
  for (const auto& c : cpus) busy += c.busy_pct, soft += c.softirq_pct;
  if (!cpus.empty()) {
    const double n = static_cast<double>(cpus.size());
    s += fmt::format("  cpu {:.0f}% (softirq {:.0f}%) top", busy / n, soft / n);
    std::partial_sort(cpus.begin(), cpus.begin() + std::min<std::size_t>(3, cpus.size()), cpus.end(),
                      [](const auto& a, const auto& b) { return a.busy_pct > b.busy_pct; });
    for (std::size_t i = 0; i < cpus.size() && i < 3; ++i) s += fmt::format(" {}:{:.0f}%", cpus[i].cpu, cpus[i].busy_pct);
  }
  for (const auto& n : iv.nics) {
    auto get = [&](const char* k) { return n.per_s.count(k) ? n.per_s.at(k) : 0.0; };
    const double rx = get("rx_bytes"), tx = get("tx_bytes");
    const double drops = get("rx_dropped") + get("tx_dropped");
    if (rx + tx < 1000 && drops == 0) continue;  // idle NICs stay out of the compact line
    s += fmt::format("  {} rx {} tx {}", n.name, format_rate(rx), format_rate(tx));
    if (drops > 0) s += fmt::format(" drop {}/s", monitor::format_count(drops));
  }
  for (const auto& g : iv.gpus)
    s += fmt::format("  gpu{} {}C {:.0f}W {}MHz{}", g.index, g.temperature_c, g.power_w, g.sm_clock_mhz,
                     (g.throttle_reasons & 0xEC) ? " throttled" : "");
  return s;
}

struct MonitorArgs {
  std::string interval = "1s", out, duration, root = "/", nics;
  std::vector<std::string> command;
};

// --interval and --duration checked; the duration in seconds (0 around a command).
double checked_duration_s(const MonitorArgs& a) {
  const bool have_cmd = !a.command.empty();
  if (have_cmd == !a.duration.empty())
    throw UsageError("give either --duration (e.g. --duration 30s) or a command after '--' (e.g. -- sleep 5)");
  const double duration_s = have_cmd ? 0 : parse_duration_s(a.duration);
  if (!have_cmd && !(duration_s > 0 && duration_s <= 366 * 86400.0))
    throw UsageError("--duration must be positive and at most a year (e.g. 30s, 2h)");
  return duration_s;
}

// The sampler's options: the CSV in `out`, --nics, and a live line per interval on stderr.
monitor::Options sampler_options(const MonitorArgs& a, const std::string& out, double interval_s, bool tty) {
  monitor::Options opts;
  opts.interval_s = interval_s;
  opts.out_csv = (std::filesystem::path(out) / "monitor.csv").string();
  if (!a.nics.empty()) opts.nics = split_list(a.nics, "--nics");
  const std::int64_t t0 = monotonic_ns();
  opts.on_interval = [tty, t0](const monitor::Interval& iv) {
    const std::string line = live_line(iv, static_cast<double>(monotonic_ns() - t0) / 1e9);
    if (tty) std::fprintf(stderr, "\r\033[K%s", line.c_str());
    else std::fprintf(stderr, "%s\n", line.c_str());
  };
  return opts;
}

// Starts the sampler; when that fails, the held child (if any) exits without running the
// command and the signal handlers are put back before the error goes on.
void start_sampler(std::optional<monitor::Sampler>& slot, const MonitorArgs& a, const monitor::Options& opts,
                   std::optional<ChildProcess>& held, SignalForwarder& signals) {
  try {
    slot.emplace(FsRoot(a.root), opts);
    slot->start();
  } catch (...) {
    signals.restore();
    held.reset();  // never released: it exits without running the command
    throw;
  }
}

struct CommandEnd {
  int exit_code = 0;
  monitor::Summary summary;
  double tree_cpu_s = 0;  // the command's and its waited-for children's CPU time
};

// Releases the held command and waits for it; nullopt (and ctx.exit_code 126/127) when it
// could not start.
std::optional<CommandEnd> run_command(ChildProcess& held, monitor::Sampler& sampler, SignalForwarder& signals,
                                      const MonitorArgs& a, Context& ctx) {
  if (const int err = held.release(); err != 0) {
    signals.restore();
    sampler.stop();
    std::fprintf(stderr, "p2pscope monitor: cannot run '%s': %s\n", a.command[0].c_str(), errno_text(err).c_str());
    ctx.exit_code = err == ENOENT ? 127 : 126;
    return std::nullopt;
  }
  signals.forward_to(held.pid());
  // A signal that came between fork and the line above was not forwarded: do it now.
  if (signals.signal_number() != 0) held.signal(signals.signal_number());
  // Exited but not reaped: the sampler's last reading still finds its threads.
  CommandEnd end;
  ChildWait how;
  how.before_reap = [&] { end.summary = sampler.stop(); };
  const ChildResult done = held.wait(how);
  signals.forward_to(0);
  end.tree_cpu_s = done.cpu_s;
  end.exit_code = done.exit_code;
  return end;
}

// --duration: sleeps until it is over or a signal comes (exit code 128+N then, else 0).
int wait_for_duration(double duration_s, const SignalForwarder& signals) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(duration_s);
  while (signals.signal_number() == 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return signals.signal_number() != 0 ? 128 + signals.signal_number() : 0;
}

// summary.json, then the verdicts and the one-line account on stdout.
void report_monitor(const MonitorArgs& a, const CommandEnd& end, const std::string& out, const std::string& csv,
                    Context& ctx) {
  namespace fs = std::filesystem;
  const monitor::Summary& summary = end.summary;
  const auto doc = out::measured_json(run_metadata(ctx.argv), {{"command", a.command},
                                                                {"exit_code", end.exit_code},
                                                                {"monitor", monitor::summary_to_json(summary)}});
  const std::string json_path = (fs::path(out) / "summary.json").string();
  std::ofstream f(json_path);
  f << out::dump_json(doc, 2) << "\n";
  if (!f) throw Error("cannot write " + json_path);

  for (const auto& v : !a.command.empty() ? command_verdicts(summary, end.tree_cpu_s) : monitor::verdict_lines(summary))
    std::printf("verdict: %s\n", v.c_str());
  for (const auto& n : summary.notes) std::printf("note: %s\n", n.c_str());
  std::printf("monitor: %d samples over %.1f s, %.0f us CPU per sample; wrote %s and %s\n", summary.samples,
              summary.duration_s, summary.monitor_cpu_ns_per_sample / 1e3, csv.c_str(), json_path.c_str());
}

void run_monitor(const MonitorArgs& a, Context& ctx) {
  const double interval_s = monitor::parse_monitor_interval(a.interval, "--interval");
  const bool have_cmd = !a.command.empty();
  const double duration_s = checked_duration_s(a);

  const std::string out = a.out.empty() ? "p2pscope-out/monitor-" + compact_timestamp(realtime_ns()) : a.out;
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw Error("cannot create --out " + out + ": " + ec.message());
  const bool tty = isatty(STDERR_FILENO) != 0;
  monitor::Options opts = sampler_options(a, out, interval_s, tty);

  // Handlers first: the child shows in /proc as soon as it is forked, and a SIGTERM sent
  // then (before they were installed) killed p2pscope instead of being forwarded; one
  // that comes while the child is held is forwarded once it is released (below).
  SignalForwarder signals;
  // Around a command, the threads sampled are the command's: it is held (forked, not yet
  // exec'd) until the sampler points at its pid, not at this process's waiting thread.
  std::optional<ChildProcess> held;
  if (have_cmd) {
    ChildSpec spec;
    spec.argv = a.command;
    spec.hold = true;
    held.emplace(spec);
    opts.pid = held->pid();
  }
  std::optional<monitor::Sampler> sampler;
  start_sampler(sampler, a, opts, held, signals);
  CommandEnd end;
  if (have_cmd) {
    std::optional<CommandEnd> ran = run_command(*held, *sampler, signals, a, ctx);
    if (!ran) return;
    end = std::move(*ran);
  } else {
    end.exit_code = wait_for_duration(duration_s, signals);
  }
  signals.restore();
  if (!have_cmd) end.summary = sampler->stop();
  if (tty) std::fprintf(stderr, "\n");
  report_monitor(a, end, out, opts.out_csv, ctx);
  ctx.exit_code = end.exit_code;
}
}  // namespace

void add_monitor_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<MonitorArgs>();
  auto* sub = app.add_subcommand(
      "monitor", "Sample CPUs, IRQs, NICs, threads and GPUs around a command or for a duration (monitor.csv, summary.json)");
  sub->add_option("--interval", args->interval, "Sampling interval (1s, 500ms)")->capture_default_str();
  sub->add_option("--out", args->out, "Output directory (default p2pscope-out/monitor-<time>/)");
  sub->add_option("--duration", args->duration, "Sample for this long (30s, 2m) when no command is given");
  sub->add_option("--root", args->root, "Read /proc and /sys from this captured tree instead of /");
  sub->add_option("--nics", args->nics, "Only these NICs, comma-separated (default all)");
  sub->add_option("command", args->command, "The command to run under the monitor, after '--'");
  sub->callback([args, &ctx] { run_monitor(*args, ctx); });
}

}  // namespace p2pscope::app
