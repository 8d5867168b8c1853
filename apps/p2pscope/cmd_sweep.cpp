// `p2pscope sweep tcp` / `sweep net` (over an NCCL net plugin, the data path of bench
// net): the engine over a grid of channels x chunk x window
// (x sockets per channel), each point repeated; writes sweep.csv, heatmap.svg and
// best.json (the best configuration with its figures and the command that runs it).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <tuple>

#include <fmt/format.h>

#include "bench_common.hpp"
#include "commands.hpp"
#include "monitor_options.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tcp.hpp"
#include "p2pscope/units.hpp"
#include "tcp_options.hpp"
#include "transport/tcp/datapath.hpp"

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
};

std::vector<std::uint32_t> int_list(const std::string& text, const char* what) {
  std::vector<std::uint32_t> out;
  for (std::uint64_t v : parse_size_list(text)) {
    if (v == 0 || v > 4096) throw UsageError(std::string(what) + ": " + std::to_string(v) + " is out of range 1-4096");
    out.push_back(static_cast<std::uint32_t>(v));
  }
  return out;
}

// Receivers' figures: what arrived, per second (both directions summed for bidir).
double delivered(const tcp::Results& r) { return r.client.rx_bytes_per_s + r.server.rx_bytes_per_s; }

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
std::string best_command(const SweepTcpOptions& o, const tcp::Params& base, std::uint32_t channels, std::uint64_t chunk,
                         std::uint32_t window, std::uint32_t sockets) {
  const TcpCliOptions& e = o.engine;
  std::string c = o.net ? "p2pscope bench net" + (o.plugin.empty() ? "" : " --plugin " + shell_quote(o.plugin))
                        : "p2pscope bench tcp";
  c += fmt::format(" --mode {} --mem {} --channels {} --sockets-per-channel {} --window {} --chunk {} --size {}", e.mode,
                   e.mem, channels, sockets, window, format_size_compact(chunk), format_size_compact(base.size_bytes));
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
  if (e.sockbuf != "0") c += " --sockbuf " + shell_quote(e.sockbuf);
  if (e.verify) c += " --verify";
  if (e.reverse) c += " --reverse";
  if (e.no_nodelay) c += " --no-nodelay";
  return c;
}

using Point = std::tuple<std::uint32_t, std::uint64_t, std::uint32_t, std::uint32_t>;  // ch, chunk, win, sock

// One row per point measured: its median and CV over the repetitions.
Table points_table(const std::map<Point, std::vector<double>>& samples) {
  Table t({"channels", "chunk", "window", "sockets", "median_GB/s", "cv"});
  for (const auto& [key, v] : samples) {
    const Stats s = compute_stats(v);
    t.add_row({std::to_string(std::get<0>(key)), format_size_compact(std::get<1>(key)), std::to_string(std::get<2>(key)),
               std::to_string(std::get<3>(key)), fixed(s.median / 1e9, 3), fixed(s.cv, 3)});
  }
  return t;
}

// The point with the highest median, and that median.
std::pair<Point, double> best_point(const std::map<Point, std::vector<double>>& samples) {
  Point best{};
  double best_v = -1;
  for (const auto& [key, v] : samples)
    if (const double m = compute_stats(v).median; m > best_v) best_v = m, best = key;
  return {best, best_v};
}

// heatmap.svg: channels x chunk at the best point's window and sockets. The title sets
// the picture's width (render_heatmap), so it is never clipped.
void write_heatmap(const SweepTcpOptions& o, const std::vector<std::uint32_t>& channels,
                   const std::vector<std::uint64_t>& chunks,
                   const std::function<double(std::uint32_t, std::uint64_t)>& median_at, std::uint32_t window,
                   std::uint32_t sockets) {
  std::vector<std::string> rows, cols;
  for (auto c : channels) rows.push_back(std::to_string(c));
  for (auto ch : chunks) cols.push_back(format_size_compact(ch));
  std::vector<std::vector<double>> grid(channels.size(), std::vector<double>(chunks.size(), NAN));
  for (std::size_t i = 0; i < channels.size(); ++i)
    for (std::size_t j = 0; j < chunks.size(); ++j) grid[i][j] = median_at(channels[i], chunks[j]);
  charts::Heatmap heat{fmt::format("p2pscope sweep tcp: median of {} reps at window {}, {} socket(s)/channel ({}, {} memory)",
                                   o.reps, window, sockets, o.engine.mode, o.engine.mem),
                       "channels", "chunk", rows, cols, grid, charts::Format::bytes_per_s, true, 72, {}, {}};
  write_file(std::filesystem::path(o.out) / "heatmap.svg", charts::xml_prolog() + charts::render_heatmap(heat));
}

void run(const SweepTcpOptions& given, Context& ctx) {
  SweepTcpOptions o = given;
  bring_up_ranks(ctx, one_process_only(o.net ? "sweep net" : "sweep tcp"));  // one sweep, not one per rank
  // Without --out, a folder of its own under p2pscope-out, as profile's campaigns.
  if (o.out.empty()) o.out = std::string("p2pscope-out/sweep-") + (o.net ? "net-" : "tcp-") + compact_timestamp(realtime_ns());
  if (o.reps < 1 || o.reps > 1000) throw UsageError("--reps must be in 1-1000");
  if (o.engine.mode == "latency") throw UsageError("sweep tcp sweeps bandwidth; use --mode bw, bidir or fullmesh");
  const auto channels = int_list(o.channels_list, "--channels-list");
  const auto windows = int_list(o.window_list, "--window-list");
  const auto sockets = int_list(o.sockets_list, "--sockets-list");
  const auto chunks = parse_size_list(o.chunk_list);
  tcp::LocalOptions local = o.engine.local();
  if (o.net) {  // one plugin for every point (and both sides of the loopback)
    net::LoadOptions lo;
    lo.plugin = o.plugin;
    const auto plugin = net::Plugin::load(lo);
    local.path = tcp::make_plugin_path(plugin);
    std::cerr << "p2pscope sweep net: loaded " << plugin->describe() << "\n";
  }
  tcp::Params base = o.engine.params();
  if (local.path) base.transport = local.path->name();  // best.json's params say which
  const double monitor_interval_s = o.monitor.enabled ? o.monitor.interval_s() : 0;
  std::filesystem::create_directories(o.out);
  std::unique_ptr<monitor::MonitorSession> mon;
  if (o.monitor.enabled) mon = std::make_unique<monitor::MonitorSession>(o.out, monitor_interval_s);

  using Key = Point;
  std::vector<Key> grid_points;
  for (std::uint32_t c : channels)
    for (std::uint64_t chunk : chunks)
      for (std::uint32_t w : windows)
        for (std::uint32_t k : sockets) grid_points.emplace_back(c, chunk, w, k);
  std::map<Key, std::vector<double>> samples;
  Table csv({"channels", "chunk_bytes", "window", "sockets_per_channel", "rep", "GBps", "client_tx_GBps",
             "server_rx_GBps", "client_rx_GBps", "server_tx_GBps"});
  const auto csv_path = std::filesystem::path(o.out) / "sweep.csv";
  // Ctrl-C or a failed point (a peer gone) ends the sweep there; sweep.csv, rewritten
  // after every run, and the files below keep every point measured before it.
  const profile::InterruptFlag interrupt("p2pscope sweep tcp");
  std::string stopped;
  for (const auto& [c, chunk, w, k] : grid_points) {
    for (int rep = 0; rep < o.reps; ++rep) {
      const std::string point = fmt::format("channels {} chunk {} window {} sockets {} rep {}", c,
                                            format_size_compact(chunk), w, k, rep);
      if (interrupt.flag()->load()) {
        stopped = "interrupted before " + point;
        break;
      }
      tcp::Params p = base;
      p.channels = c;
      p.chunk_bytes = chunk;
      p.window = w;
      p.sockets_per_channel = k;
      tcp::validate(p);
      tcp::Results r;
      try {
        r = run_as_client_or_loopback(o.client, o.port, local, p);
        if (!r.failure.empty()) throw Error(r.failure);  // a failed point measured nothing whole
      } catch (const std::exception& e) {
        if (samples.empty()) throw;  // nothing measured yet: the plain error says it all
        stopped = "stopped at " + point + ": " + e.what();
        break;
      }
      const double v = delivered(r);
      samples[{c, chunk, w, k}].push_back(v);
      csv.add_row({std::to_string(c), std::to_string(chunk), std::to_string(w), std::to_string(k),
                   std::to_string(rep), fixed(v / 1e9, 4), fixed(r.client.tx_bytes_per_s / 1e9, 4),
                   fixed(r.server.rx_bytes_per_s / 1e9, 4), fixed(r.client.rx_bytes_per_s / 1e9, 4),
                   fixed(r.server.tx_bytes_per_s / 1e9, 4)});
      write_file(csv_path, csv.to_csv());
      std::cerr << "sweep: " << point << ": " << fixed(v / 1e9, 3) << " GB/s\n";
    }
    if (!stopped.empty()) break;
  }
  write_file(csv_path, csv.to_csv());
  if (samples.empty()) {  // interrupted before the first run ended
    std::cerr << "sweep tcp: " << stopped << "; nothing was measured\n";
    ctx.exit_code = 128 + interrupt.signal_number();
    return;
  }
  monitor::SessionResult mon_result;
  if (mon) mon_result = mon->stop();  // the whole sweep; per point: monitor.csv's timeline

  const auto [best, best_v] = best_point(samples);
  const auto [bc, bchunk, bw, bk] = best;
  write_heatmap(o, channels, chunks, [&](std::uint32_t c, std::uint64_t chunk) {
    const auto it = samples.find({c, chunk, bw, bk});
    return it == samples.end() ? NAN : compute_stats(it->second).median;
  }, bw, bk);

  const Stats st = compute_stats(samples[best]);
  nlohmann::json j;
  j["best"] = {{"channels", bc}, {"chunk_bytes", bchunk}, {"window", bw}, {"sockets_per_channel", bk},
               {"GBps_median", st.median / 1e9}, {"GBps_min", st.min / 1e9}, {"GBps_max", st.max / 1e9},
               {"cv", st.cv}, {"reps", st.n}};
  j["command"] = best_command(o, base, bc, bchunk, bw, bk);
  j["params"] = tcp::to_json(base);
  j["points"] = samples.size();
  j["points_planned"] = grid_points.size();
  if (!stopped.empty()) j["stopped"] = stopped;
  j["run_metadata"] = run_metadata(ctx.argv);
  if (mon) j["monitor"] = mon_result.json;
  write_file(std::filesystem::path(o.out) / "best.json", j.dump(2) + "\n");

  std::cout << points_table(samples).to_text() << "\nbest: " << j["command"].get<std::string>() << "  -> " << fixed(best_v / 1e9, 3)
            << " GB/s\nwrote " << o.out << "/{sweep.csv,heatmap.svg,best.json" << (mon ? ",monitor.csv" : "")
            << "}\n";
  std::cout.flush();
  if (mon) print_monitor_lines(mon_result, stdout);
  if (stopped.empty()) return;
  const std::string partial = fmt::format("{} after {} of {} points; the best is among those measured", stopped,
                                          samples.size(), grid_points.size());
  if (interrupt.signal_number() == 0) throw Error(partial);
  std::cerr << "sweep tcp: " << partial << "\n";
  ctx.exit_code = 128 + interrupt.signal_number();
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
    if (net)
      c->add_option("--plugin", o->plugin, "plugin: a path, a file name or NAME (libnccl-net-NAME.so); default "
                                           "$NCCL_NET_PLUGIN, else libnccl-net.so, as NCCL resolves it");
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
