// `p2pscope bench tcp`: the multi-channel, multi-NIC TCP engine, as server, client,
// or both in this process over 127.0.0.1 (--loopback).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "commands.hpp"
#include "monitor_options.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/tcp.hpp"
#include "p2pscope/units.hpp"
#include "tcp_options.hpp"

namespace p2pscope::app {
namespace {

struct BenchTcpOptions {
  TcpCliOptions engine;
  bool server = false, loopback = false;
  std::vector<std::string> bind{"0.0.0.0"}, client;
  int port = 18515;
  int sessions = 0;  // 0: until killed
  double accept_timeout_s = 0;
  std::string format = "text";
  MonitorCliOptions monitor;
};

// With --monitor, `mon` is the stopped monitor of the run: its summary goes into the
// JSON ("monitor"), its verdicts under the text (stderr for json, to keep stdout JSON).
void print(const tcp::Results& r, const std::string& format, const Context& ctx,
           const monitor::SessionResult* mon = nullptr) {
  if (format == "json") {
    nlohmann::json j = tcp::to_json(r);
    j["run_metadata"] = run_metadata(ctx.argv);
    if (mon) j["monitor"] = mon->json;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << tcp::format_text(r);
  }
  std::cout.flush();
  if (mon) print_monitor_lines(*mon, format == "json" ? stderr : stdout);
}

// The monitor around one run (nullptr without --monitor); also writes summary.json
// beside monitor.csv, so a server's many sessions keep theirs too.
std::unique_ptr<monitor::MonitorSession> start_monitor(const BenchTcpOptions& o, double interval_s) {
  if (!o.monitor.enabled) return nullptr;
  return std::make_unique<monitor::MonitorSession>(o.monitor.dir_or_default("bench-tcp"), interval_s);
}

monitor::SessionResult stop_monitor(monitor::MonitorSession& mon, const Context& ctx) {
  monitor::SessionResult r = mon.stop();
  if (!r.ok) return r;
  nlohmann::json doc = {{"metadata", run_metadata(ctx.argv)}, {"monitor", r.json}};
  std::ofstream f(std::filesystem::path(r.csv_path).parent_path() / "summary.json");
  f << doc.dump(2) << "\n";
  if (!f) r.json["notes"].push_back("summary.json beside monitor.csv could not be written");
  return r;
}

// Serves until killed (iperf3's habit), or --sessions N. Ctrl-C / SIGTERM between
// sessions ends it cleanly (monitor lines printed, exit 128 + signal); one during a
// session lets that session finish first. A failed session does not end a server of
// many; an --accept-timeout with no client ends it (an error if none was served).
void serve(const BenchTcpOptions& o, const tcp::LocalOptions& local, double monitor_interval_s, Context& ctx) {
  if (o.sessions < 0) throw UsageError("--sessions must be 0 (serve until killed) or a count of sessions");
  tcp::ServerOptions so;
  so.bind_addrs = o.bind;
  so.port = static_cast<std::uint16_t>(o.port);
  so.local = local;
  so.accept_timeout_s = o.accept_timeout_s;
  tcp::Server server(so);
  if (o.sessions == 0)
    std::fprintf(stderr, "p2pscope bench tcp: listening on port %u until stopped (Ctrl-C; --sessions N stops after N)\n",
                 server.port());
  else
    std::fprintf(stderr, "p2pscope bench tcp: listening on port %u for %d session%s\n", server.port(), o.sessions,
                 o.sessions == 1 ? "" : "s");
  const profile::InterruptFlag interrupt("p2pscope bench tcp");
  std::jthread watch([&](std::stop_token st) {  // accept() waits in poll: stop() wakes it
    while (!st.stop_requested() && !interrupt.flag()->load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (interrupt.flag()->load()) server.stop();
  });
  const auto mon = start_monitor(o, monitor_interval_s);
  int served = 0;
  for (int n = 0; o.sessions == 0 || n < o.sessions; ++n) {
    try {
      const tcp::Results r = server.serve_one();
      ++served;
      if (mon && o.sessions == 1) {
        const monitor::SessionResult m = stop_monitor(*mon, ctx);
        print(r, o.format, ctx, &m);
      } else {
        print(r, o.format, ctx);
      }
    } catch (const tcp::NoClient& e) {
      if (interrupt.flag()->load()) break;
      if (served == 0) throw;
      std::fprintf(stderr, "p2pscope bench tcp: %s; served %d session%s\n", e.what(), served, served == 1 ? "" : "s");
      break;
    } catch (const Error& e) {
      if (interrupt.flag()->load()) break;
      if (o.sessions == 1) throw;
      // A server of many clients (a sweep) survives one failed session.
      std::fprintf(stderr, "p2pscope: session failed: %s\n", e.what());
      ctx.exit_code = 1;
    }
  }
  if (mon && !(o.sessions == 1 && served == 1)) print_monitor_lines(stop_monitor(*mon, ctx), stderr);  // all sessions
  if (interrupt.signal_number() != 0) {
    std::fprintf(stderr, "p2pscope bench tcp: stopped by signal %d after %d session%s\n", interrupt.signal_number(),
                 served, served == 1 ? "" : "s");
    ctx.exit_code = 128 + interrupt.signal_number();
  }
}

void run(const BenchTcpOptions& o, Context& ctx) {
  const int roles = (o.server ? 1 : 0) + (o.client.empty() ? 0 : 1) + (o.loopback ? 1 : 0);
  if (roles != 1) throw UsageError("bench tcp: give exactly one of --server, --client HOST[,HOST...] or --loopback");
  if (o.port < 0 || o.port > 65535) throw UsageError("--port must be in 0-65535");
  if (o.format != "text" && o.format != "json") throw UsageError("--format must be text or json");
  const tcp::LocalOptions local = o.engine.local();
  const double monitor_interval_s = o.monitor.enabled ? o.monitor.interval_s() : 0;  // bad value: exit 2 now
  if (o.server) return serve(o, local, monitor_interval_s, ctx);
  const tcp::Params p = o.engine.params();
  const auto mon = start_monitor(o, monitor_interval_s);
  const tcp::Results r = run_as_client_or_loopback(o.client, o.port, local, p);  // --loopback: no --client (one role)
  if (!mon) return print(r, o.format, ctx);
  const monitor::SessionResult m = stop_monitor(*mon, ctx);
  print(r, o.format, ctx, &m);
}

}  // namespace

void add_bench_tcp_command(CLI::App& bench, Context& ctx) {
  auto o = std::make_shared<BenchTcpOptions>();
  auto* c = bench.add_subcommand("tcp", "TCP transfer engine: channels over NICs, windows, pinned TX/RX workers");
  c->add_flag("--server", o->server, "serve clients (each proposes its parameters) until killed, or --sessions N");
  c->add_option("--bind", o->bind, "server: local addresses to listen on (one per NIC)")->delimiter(',')->capture_default_str();
  c->add_option("--client", o->client, "client: server addresses; channel c goes to HOST[c % n]")->delimiter(',');
  c->add_flag("--loopback", o->loopback, "server and client in this process over 127.0.0.1");
  c->add_option("--port", o->port, "TCP port (server: 0 = any free one)")->capture_default_str();
  c->add_option("--sessions", o->sessions, "server: sessions to serve, then exit (0 = until killed)")->capture_default_str();
  c->add_option("--accept-timeout", o->accept_timeout_s, "server: seconds to wait for a client (0 = forever)");
  c->add_option("--format", o->format, "text or json")->capture_default_str();
  o->engine.add_engine_options(*c);
  o->monitor.add(*c, true);
  c->footer(
      "Examples:\n"
      "  p2pscope bench tcp --server --bind 10.0.1.1,10.0.2.1        # until killed; --sessions 1 for one client\n"
      "  p2pscope bench tcp --client 10.0.1.1,10.0.2.1 --nics eth1,eth2 --channels 8 --window 16 --chunk 512K\n"
      "  p2pscope bench tcp --loopback --mode bidir --channels 2 --verify\n"
      "  p2pscope bench tcp --loopback --monitor --monitor-dir out/  (monitor.csv, summary.json, verdicts)\n"
      "Bindings default to $NCCL_GPUDIRECTTCPX_TX_BINDINGS / _RX_BINDINGS when set.");
  c->callback([o, &ctx] { run(*o, ctx); });
}

}  // namespace p2pscope::app
