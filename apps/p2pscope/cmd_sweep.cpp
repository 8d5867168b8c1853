// `p2pscope sweep tcp` / `sweep net` (over an NCCL net plugin, the data path of bench
// net): the engine over a grid of channels x chunk x window
// (x sockets per channel), each point repeated; writes sweep.csv, heatmap.svg and
// best.json (the best configuration with its figures and the command that runs it).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "bench_common.hpp"
#include "commands.hpp"
#include "monitor_options.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/auth.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/netplugin.hpp"
#include "transport/netpath/plugin_use.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/signals.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tcp.hpp"
#include "p2pscope/units.hpp"
#include "tcp_options.hpp"
#include "transport/session/datapath.hpp"
#include "transport/tcp/sweep.hpp"

namespace p2pscope::app {
namespace {

struct SweepTcpOptions {
  TcpCliOptions engine;
  std::string channels_list = "1,2,4,8", chunk_list = "256K,1M,4M", window_list = "1,4,16", sockets_list = "1";
  std::vector<std::string> client;
  int port = 18515;
  int reps = 3;
  std::string out;
  MonitorCliOptions monitor;  // monitor.csv in --out, summary in best.json
  bool net = false;     // sweep net: the data path is an NCCL net plugin
  std::string plugin;   // sweep net --plugin (NCCL_NET_PLUGIN rules, as bench net)
  std::string dmabuf = "auto";  // sweep net --dmabuf (as bench net)
};

std::vector<std::uint32_t> int_list(const std::string& text, const char* what) {
  std::vector<std::uint32_t> out;
  for (std::uint64_t v : parse_size_list(text)) {
    if (v == 0 || v > 4096) throw UsageError(std::string(what) + ": " + std::to_string(v) + " is out of range 1-4096");
    out.push_back(static_cast<std::uint32_t>(v));
  }
  return out;
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
  if (!f) throw Error("cannot write " + p.string());
}

std::string shell_quote(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t'\"$\\;&|<>*?()") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The `bench tcp` command that runs the best point as this sweep ran it: the same peer
// (--client and --port, or --loopback) and every engine option given, so it can be
// pasted as it is.
std::string best_command(const SweepTcpOptions& o, const tcp::Params& base, const tcp::SweepPoint& best) {
  const TcpCliOptions& e = o.engine;
  std::string c = o.net ? "p2pscope bench net" + (o.plugin.empty() ? "" : " --plugin " + shell_quote(o.plugin))
                        : "p2pscope bench tcp";
  if (o.net && o.dmabuf != "auto") c += " --dmabuf " + o.dmabuf;
  c += fmt::format(" --mode {} --mem {} --channels {} --sockets-per-channel {} --window {} --chunk {} --size {}", e.mode,
                   e.mem, best.channels, best.sockets_per_channel, best.window, format_size_compact(best.chunk_bytes),
                   format_size_compact(base.size_bytes));
  if (o.client.empty()) {
    c += " --loopback";
  } else {
    std::string hosts;
    for (const auto& h : o.client) hosts += (hosts.empty() ? "" : ",") + h;
    c += " --client " + shell_quote(hosts);
    if (o.port != 18515) c += fmt::format(" --port {}", o.port);
  }
  if (!e.nics.empty()) {
    std::string nics;
    for (const auto& n : e.nics) nics += (nics.empty() ? "" : ",") + n;
    c += " --nics " + shell_quote(nics);
  }
  if (!e.tx_bind.empty()) c += " --tx-bind " + shell_quote(e.tx_bind);
  if (!e.rx_bind.empty()) c += " --rx-bind " + shell_quote(e.rx_bind);
  if (e.gpus != "0") c += " --gpus " + shell_quote(e.gpus);
  if (e.iters != 5) c += fmt::format(" --iters {}", e.iters);
  if (e.warmup != 1) c += fmt::format(" --warmup {}", e.warmup);
  if (e.timeout_s != 10) c += fmt::format(" --timeout {}", e.timeout_s);
  if (e.slot_memory != "128K") c += " --slot-memory " + shell_quote(e.slot_memory);
  if (e.sockbuf != "0") c += " --sockbuf " + shell_quote(e.sockbuf);
  if (e.verify) c += " --verify";
  if (e.reverse) c += " --reverse";
  if (e.no_nodelay) c += " --no-nodelay";
  return c;
}

// One row per point measured: its median and CV over the repetitions.
Table points_table(const tcp::SweepResult& r) {
  Table t({"channels", "chunk", "window", "sockets", "median_GB/s", "cv"});
  for (const auto& [pt, v] : r.samples()) {
    const Stats s = compute_stats(v);
    t.add_row({std::to_string(pt.channels), format_size_compact(pt.chunk_bytes), std::to_string(pt.window),
               std::to_string(pt.sockets_per_channel), fixed(s.median / 1e9, 3), fixed(s.cv, 3)});
  }
  return t;
}

// heatmap.svg: channels x chunk at the best point's window and sockets. The title sets
// the picture's width (render_heatmap), so it is never clipped.
void write_heatmap(const SweepTcpOptions& o, const tcp::SweepSpec& spec, const tcp::SweepResult& r,
                   const tcp::SweepPoint& best) {
  std::vector<std::string> rows, cols;
  for (auto c : spec.channels) rows.push_back(std::to_string(c));
  for (auto ch : spec.chunks) cols.push_back(format_size_compact(ch));
  const auto samples = r.samples();
  std::vector<std::vector<double>> grid(spec.channels.size(), std::vector<double>(spec.chunks.size(), NAN));
  for (std::size_t i = 0; i < spec.channels.size(); ++i)
    for (std::size_t j = 0; j < spec.chunks.size(); ++j) {
      const auto it = samples.find({spec.channels[i], spec.chunks[j], best.window, best.sockets_per_channel});
      if (it != samples.end()) grid[i][j] = compute_stats(it->second).median;
    }
  charts::Heatmap heat{fmt::format("p2pscope sweep tcp: median of {} reps at window {}, {} socket(s)/channel ({}, {} memory)",
                                   o.reps, best.window, best.sockets_per_channel, o.engine.mode, o.engine.mem),
                       "channels", "chunk", rows, cols, grid, charts::Format::bytes_per_s, true, 72, {}, {}};
  write_file(std::filesystem::path(o.out) / "heatmap.svg", charts::xml_prolog() + charts::render_heatmap(heat));
}

// The library spec from the options: the grid, the engine's parameters, the data path
// (one plugin for every point and both sides of a loopback) and the peer.
tcp::SweepSpec make_spec(const SweepTcpOptions& o) {
  if (o.engine.mode == "latency") throw UsageError("sweep tcp sweeps bandwidth; use --mode bw, bidir or fullmesh");
  tcp::SweepSpec spec;
  spec.channels = int_list(o.channels_list, "--channels-list");
  spec.windows = int_list(o.window_list, "--window-list");
  spec.sockets_per_channel = int_list(o.sockets_list, "--sockets-list");
  spec.chunks = parse_size_list(o.chunk_list);
  spec.reps = o.reps;
  spec.local = o.engine.local();
  if (o.net) {
    const auto plugin = tcp::use_plugin_path(spec.local, o.plugin, o.dmabuf, "p2pscope sweep net");
    std::cerr << "p2pscope sweep net: loaded " << plugin->describe() << "\n";
  }
  spec.base = o.engine.params();
  if (spec.local.path) spec.base.transport = spec.local.path->name();  // best.json's params say which
  spec.servers = o.client;
  spec.port = static_cast<std::uint16_t>(o.port);
  if (!o.client.empty()) spec.token = auth::load_token();
  return spec;
}

// best.json: the best point with its figures, the command that runs it, how far it got.
nlohmann::ordered_json best_json(const SweepTcpOptions& o, const tcp::SweepSpec& spec, const tcp::SweepResult& r,
                         const tcp::SweepPoint& best, const Stats& st, Context& ctx) {
  nlohmann::json j;
  j["best"] = {{"channels", best.channels}, {"chunk_bytes", best.chunk_bytes}, {"window", best.window},
               {"sockets_per_channel", best.sockets_per_channel}, {"GBps_median", st.median / 1e9},
               {"GBps_min", st.min / 1e9}, {"GBps_max", st.max / 1e9}, {"cv", st.cv}, {"reps", st.n}};
  j["command"] = best_command(o, spec.base, best);
  // The best is a claim only where the noise cannot reorder it with the next point.
  if (const auto next = r.runner_up()) {
    const auto& [npt, nst] = *next;
    j["next"] = {{"channels", npt.channels}, {"chunk_bytes", npt.chunk_bytes}, {"window", npt.window},
                 {"sockets_per_channel", npt.sockets_per_channel}, {"GBps_median", nst.median / 1e9},
                 {"GBps_min", nst.min / 1e9}, {"GBps_max", nst.max / 1e9}, {"reps", nst.n}};
    j["separable_from_next"] = tcp::separable(st, nst);
  }
  j["params"] = tcp::to_json(spec.base);
  j["points"] = r.samples().size();
  j["points_planned"] = r.grid.size();
  if (!r.stopped.empty()) j["stopped"] = r.stopped;
  return out::measured_json(run_metadata(ctx.argv), j);
}

Table runs_csv_header() {
  return Table({"channels", "chunk_bytes", "window", "sockets_per_channel", "rep", "GBps", "client_tx_GBps",
                "server_rx_GBps", "client_rx_GBps", "server_tx_GBps"});
}

void add_csv_row(Table& csv, const tcp::SweepRun& r) {
  const auto& p = r.point;
  csv.add_row({std::to_string(p.channels), std::to_string(p.chunk_bytes), std::to_string(p.window),
               std::to_string(p.sockets_per_channel), std::to_string(r.rep), fixed(r.bytes_per_s / 1e9, 4),
               fixed(r.client_tx_bytes_per_s / 1e9, 4), fixed(r.server_rx_bytes_per_s / 1e9, 4),
               fixed(r.client_rx_bytes_per_s / 1e9, 4), fixed(r.server_tx_bytes_per_s / 1e9, 4)});
}

// heatmap.svg and best.json from the points measured, the table and the best as a
// command on stdout; then the exit status for a sweep that ended early.
void report(const SweepTcpOptions& o, const tcp::SweepSpec& spec, const tcp::SweepResult& r,
            std::unique_ptr<monitor::MonitorSession>& mon, int signal_number, Context& ctx) {
  monitor::SessionResult mon_result;
  if (mon) mon_result = mon->stop();  // the whole sweep; per point: monitor.csv's timeline
  const auto [best, st] = *r.best();
  write_heatmap(o, spec, r, best);
  nlohmann::ordered_json j = best_json(o, spec, r, best, st, ctx);
  if (mon) j["monitor"] = nlohmann::ordered_json(mon_result.json);
  write_file(std::filesystem::path(o.out) / "best.json", out::dump_json(j, 2) + "\n");
  std::cout << points_table(r).to_text() << "\nbest: " << j["command"].get<std::string>() << "  -> "
            << fixed(st.median / 1e9, 3) << " GB/s\nwrote " << o.out << "/{sweep.csv,heatmap.svg,best.json"
            << (mon ? ",monitor.csv" : "") << "}\n";
  if (j.contains("separable_from_next") && !j["separable_from_next"].get<bool>()) {
    const auto& n = j["next"];
    std::cout << fmt::format("note: the best is not ahead of the next point beyond the noise: channels {} chunk {} window {} "
                             "sockets {} reached {} GB/s (median; {}-{} over its reps, the best's {}-{}): their "
                             "repetitions overlap, so either is as good here; more --reps will order them\n",
                             n["channels"].get<int>(), format_size_compact(n["chunk_bytes"].get<std::uint64_t>()),
                             n["window"].get<int>(), n["sockets_per_channel"].get<int>(),
                             fixed(n["GBps_median"].get<double>(), 3), fixed(n["GBps_min"].get<double>(), 3),
                             fixed(n["GBps_max"].get<double>(), 3), fixed(st.min / 1e9, 3), fixed(st.max / 1e9, 3));
  }
  std::cout.flush();
  if (mon) print_monitor_lines(mon_result, stdout);
  if (r.stopped.empty()) return;
  const std::string partial = fmt::format("{} after {} of {} points; the best is among those measured", r.stopped,
                                          r.samples().size(), r.grid.size());
  if (signal_number == 0) throw Error(partial);
  std::cerr << "sweep tcp: " << partial << "\n";
  ctx.exit_code = 128 + signal_number;
}

void run(const SweepTcpOptions& given, Context& ctx) {
  SweepTcpOptions o = given;
  bring_up_ranks(ctx, one_process_only(o.net ? "sweep net" : "sweep tcp"));  // one sweep, not one per rank
  // Without --out, a folder of its own under p2pscope-out, as profile's campaigns.
  if (o.out.empty()) o.out = std::string("p2pscope-out/sweep-") + (o.net ? "net-" : "tcp-") + compact_timestamp(realtime_ns());
  if (o.reps < 1 || o.reps > 1000) throw UsageError("--reps must be in 1-1000");
  tcp::SweepSpec spec = make_spec(o);
  const double monitor_interval_s = o.monitor.enabled ? o.monitor.interval_s() : 0;
  std::filesystem::create_directories(o.out);
  std::unique_ptr<monitor::MonitorSession> mon;
  if (o.monitor.enabled) mon = std::make_unique<monitor::MonitorSession>(o.out, monitor_interval_s);

  // Ctrl-C or a failed point (a peer gone) ends the sweep there; sweep.csv, rewritten
  // after every run, and the files below keep every point measured before it.
  Table csv = runs_csv_header();
  const auto csv_path = std::filesystem::path(o.out) / "sweep.csv";
  const InterruptFlag interrupt("p2pscope sweep tcp");
  spec.stop = interrupt.flag();
  spec.on_run = [&](std::size_t, std::size_t, const tcp::SweepRun& r) {
    add_csv_row(csv, r);
    write_file(csv_path, csv.to_csv());
    const auto& p = r.point;
    std::cerr << fmt::format("sweep: channels {} chunk {} window {} sockets {} rep {}: {} GB/s\n", p.channels,
                             format_size_compact(p.chunk_bytes), p.window, p.sockets_per_channel, r.rep,
                             fixed(r.bytes_per_s / 1e9, 3));
  };
  const tcp::SweepResult r = tcp::run_sweep(spec);
  write_file(csv_path, csv.to_csv());
  if (r.runs.empty()) {  // interrupted before the first run ended
    std::cerr << "sweep tcp: " << r.stopped << "; nothing was measured\n";
    ctx.exit_code = 128 + interrupt.signal_number();
    return;
  }
  report(o, spec, r, mon, interrupt.signal_number(), ctx);
}

}  // namespace

void add_sweep_commands(CLI::App& app, Context& ctx) {
  auto* sweep = app.add_subcommand("sweep", "Parameter sweeps");
  sweep->require_subcommand(1);
  for (bool net : {false, true}) {
    auto o = std::make_shared<SweepTcpOptions>();
    o->net = net;
    auto* c = net ? sweep->add_subcommand("net", "bench net (an NCCL net plugin) over channels x chunk x window "
                                                 "(x comms per channel), repeated; output as sweep tcp")
                  : sweep->add_subcommand("tcp", "TCP engine over channels x chunk x window (x sockets), repeated");
    if (net) {
      c->add_option("--plugin", o->plugin, "plugin: a path, a file name or NAME (libnccl-net-NAME.so); default "
                                           "$NCCL_NET_PLUGIN, else libnccl-net.so, as NCCL resolves it");
      c->add_option("--dmabuf", o->dmabuf, "--mem gpu: auto, on or off (as bench net)")->capture_default_str();
    }
    c->add_option("--channels-list", o->channels_list, "channel counts, e.g. 1,2,4,8 or 1:16")->capture_default_str();
    c->add_option("--chunk-list", o->chunk_list, "chunk sizes, e.g. 256K,1M,4M or 64K:4M")->capture_default_str();
    c->add_option("--window-list", o->window_list, "windows, e.g. 1,4,16")->capture_default_str();
    c->add_option("--sockets-list", o->sockets_list, "sockets per channel, e.g. 1,2")->capture_default_str();
    c->add_option("--reps", o->reps, "runs per point")->capture_default_str();
    c->add_option("--out", o->out, std::string("directory for sweep.csv, heatmap.svg, best.json (default p2pscope-out/sweep-") +
                                        (net ? "net" : "tcp") + "-TIME)");
    c->add_option("--client", o->client, "servers to run against (default: loopback in this process)")->delimiter(',');
    c->add_option("--port", o->port, "server port with --client")->capture_default_str();
    o->engine.add_engine_options(*c, false);
    o->monitor.add(*c, false);
    c->callback([o, &ctx] { run(*o, ctx); });
  }
}

}  // namespace p2pscope::app
