// `p2pscope bench tcp`: the multi-channel, multi-NIC TCP engine, as server, client,
// or both in this process over 127.0.0.1 (--loopback). Text, CSV (channel, NIC and total
// rows) or JSON with run metadata, through the printers (p2pscope/output.hpp); --out FILE or DIR.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "against_nccl_cmd.hpp"
#include "bench_common.hpp"
#include "commands.hpp"
#include "monitor_options.hpp"
#include "p2pscope/auth.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/netplugin.hpp"
#include "transport/netpath/plugin_use.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tcp.hpp"
#include "p2pscope/units.hpp"
#include "tcp_options.hpp"
#include "transport/session/datapath.hpp"

namespace p2pscope::app {
namespace {

struct BenchTcpOptions {
  bool net = false;    // bench net: the data path is an NCCL net plugin
  std::string plugin;  // bench net --plugin: path, file or name (NCCL_NET_PLUGIN rules)
  std::string dmabuf = "auto";  // bench net --dmabuf: how CUDA buffers are registered
  TcpCliOptions engine;
  bool server = false, loopback = false;
  std::vector<std::string> bind{"0.0.0.0"}, client;
  int port = 18515;
  int sessions = 0;  // 0: until killed
  double accept_timeout_s = 0;
  BenchCommon out;  // --format, --out, --force: written as the other benches' results are
  std::string max_memory;  // server: host buffers one session may take (default a quarter of RAM)
  std::uint32_t max_conns = 1024;
  double max_timeout_s = 120;
  MonitorCliOptions monitor;
  // iperf3's words: -P N streams (as --channels N), -J (as --format json), -R (as
  // --reverse), -t SECONDS (no equivalent: refused with what to use).
  std::uint32_t parallel = 0;
  bool json = false, iperf_reverse = false;
  std::string iperf_time;
  bool against_nccl = false;  // also NCCL send/recv over the same path, compared (against_nccl_cmd.hpp)
  const CLI::App* cmd = nullptr;
};

bool given(const BenchTcpOptions& o, const char* flag) { return o.cmd && o.cmd->count(flag) > 0; }

// iperf3's flags turned into ours; hostnames in --client resolved to IPv4 here, so the
// engine keeps taking addresses.
void apply_iperf3_flags(BenchTcpOptions& o) {
  if (!o.iperf_time.empty())
    throw UsageError("-t/--time " + o.iperf_time + ": p2pscope times rounds of --size bytes, not seconds; "
                     "use --iters N (timed rounds, default 5) and --size S (default 64M) instead");
  if (o.parallel > 0) {
    if (given(o, "--channels")) throw UsageError("-P/--parallel and --channels both set the streams: use one");
    o.engine.channels = o.parallel;
  }
  if (o.json && given(o, "--format") && out::find_format(o.out.format, kBenchFormats) != out::Format::json)
    throw UsageError("-J/--json and --format " + o.out.format + " disagree");
  if (o.iperf_reverse) o.engine.reverse = true;
  for (auto& host : o.client) {
    in_addr a{};
    if (host.empty() || ::inet_pton(AF_INET, host.c_str(), &a) == 1) continue;
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || !res)
      throw UsageError("--client '" + host + "': not an IPv4 address and no IPv4 address for that name (" +
                       ::gai_strerror(rc) + ")");
    char buf[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
    ::freeaddrinfo(res);
    host = buf;
  }
}

// A session that failed after measuring: its rounds are printed, then why it ended.
void report_failure(const tcp::Results& r, Context& ctx) {
  std::fprintf(stderr, "p2pscope: session failed after %u timed round%s (%s): %s\n", r.rounds_completed,
               r.rounds_completed == 1 ? "" : "s", r.failure_cause.c_str(), r.failure.c_str());
  ctx.exit_code = 1;
}

// The totals again in iperf3's unit (1 GB/s = 8 Gbit/s), for those who compare with it.
std::string gbit_line(const tcp::Results& r) {
  if (r.params.mode == tcp::Mode::latency) return {};
  std::string line;
  for (const auto* s : {&r.client, &r.server}) {
    auto add = [&](const char* what, bool any, double bps) {
      if (!any || bps <= 0) return;
      line += (line.empty() ? "" : ", ") + s->side + " " + what + " " + fixed(bps / 1e9, 2) + " GB/s = " +
              fixed(bps * 8 / 1e9, 2) + " Gbit/s";
    };
    add("sent", !s->round_tx_bytes_per_s.empty(), s->tx_bytes_per_s);
    add("received", !s->round_rx_bytes_per_s.empty(), s->rx_bytes_per_s);
  }
  return line.empty() ? std::string() : "in iperf3's unit: " + line + "\n";
}

// Where a session's results go: the format chosen once, --out, what the JSON adds.
struct Printing {
  const out::Output& output;
  const BenchTcpOptions& o;
  const Context& ctx;
  const net::Plugin* plugin = nullptr;
};

// With --monitor, `mon` is the stopped monitor of the run: its summary goes into the
// JSON ("monitor"), its verdicts under the text (stderr for csv and json, keeping
// stdout a document).
void print(const tcp::Results& r, const Printing& p, const monitor::SessionResult* mon = nullptr) {
  out::Report rep = tcp::report(r);
  if (p.plugin)
    rep.text.insert(rep.text.begin(), "data path: " + p.plugin->describe() + ", " +
                                          std::to_string(p.plugin->devices().size()) + " device(s)\n");
  rep.text.emplace_back(gbit_line(r));
  rep.json = [&] {
    nlohmann::json body = tcp::to_json(r);
    if (p.plugin) body["plugin"] = net::properties_json(*p.plugin);
    if (mon) body["monitor"] = mon->json;
    return out::JsonDoc(out::measured_json(run_metadata(p.ctx.argv), body));
  };
  emit(p.output.print(rep), p.output, p.o.out, p.o.net ? "bench_net" : "bench_tcp");
  if (mon) print_monitor_lines(*mon, p.output.shows_text() ? stdout : stderr);
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
  const auto doc = out::measured_json(run_metadata(ctx.argv), {{"monitor", r.json}});
  std::ofstream f(std::filesystem::path(r.csv_path).parent_path() / "summary.json");
  f << out::dump_json(doc, 2) << "\n";
  if (!f) r.json["notes"].push_back("summary.json beside monitor.csv could not be written");
  return r;
}

// Serves until killed (iperf3's habit), or --sessions N. Ctrl-C / SIGTERM between
// sessions ends it cleanly (monitor lines printed, exit 128 + signal); one during a
// session lets that session finish first. A failed session does not end a server of
// many; an --accept-timeout with no client ends it (an error if none was served).
const char* command_name(const BenchTcpOptions& o) { return o.net ? "p2pscope bench net" : "p2pscope bench tcp"; }

void serve(const BenchTcpOptions& o, const tcp::LocalOptions& local, double monitor_interval_s, Context& ctx,
           const Printing& printing) {
  if (o.sessions < 0) throw UsageError("--sessions must be 0 (serve until killed) or a count of sessions");
  // Before the server: its sessions stop on the flag too (a receiving server that never
  // saw it ran to the end of its session after "stopping within a second": issue 43 item 7).
  const profile::InterruptFlag interrupt(command_name(o));
  tcp::ServerOptions so;
  so.bind_addrs = o.bind;
  so.port = static_cast<std::uint16_t>(o.port);
  so.local = local;
  so.local.stop = interrupt.flag();
  so.accept_timeout_s = o.accept_timeout_s;
  so.limits.max_memory_bytes = o.max_memory.empty() ? 0 : parse_size(o.max_memory);
  so.limits.max_connections = o.max_conns;
  so.limits.max_timeout_s = o.max_timeout_s;
  so.token = auth::load_token();
  so.log = [&o](const std::string& line) { std::fprintf(stderr, "%s: %s\n", command_name(o), line.c_str()); };
  tcp::Server server(so);
  if (!so.token)
    std::fprintf(stderr, "%s: no shared secret (P2PSCOPE_TOKEN): any host that reaches this port can "
                         "run sessions; set one on both sides, or --bind one address\n", command_name(o));
  if (o.sessions == 0)
    std::fprintf(stderr, "%s: listening on port %u until stopped (Ctrl-C; --sessions N stops after N)\n", command_name(o),
                 server.port());
  else
    std::fprintf(stderr, "%s: listening on port %u for %d session%s\n", command_name(o), server.port(), o.sessions,
                 o.sessions == 1 ? "" : "s");
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
        print(r, printing, &m);
      } else {
        print(r, printing);
      }
      if (!r.failure.empty()) report_failure(r, ctx);
    } catch (const tcp::NoClient& e) {
      if (interrupt.flag()->load()) break;
      if (served == 0) throw;
      std::fprintf(stderr, "%s: %s; served %d session%s\n", command_name(o), e.what(), served, served == 1 ? "" : "s");
      break;
    } catch (const tcp::Refused& e) {  // told why; no session was run, so none is counted
      if (interrupt.flag()->load()) break;
      std::fprintf(stderr, "%s: %s\n", command_name(o), e.what());
      --n;
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
    std::fprintf(stderr, "%s: stopped by signal %d after %d session%s\n", command_name(o), interrupt.signal_number(),
                 served, served == 1 ? "" : "s");
    ctx.exit_code = 128 + interrupt.signal_number();
  }
}

void run(BenchTcpOptions& o, Context& ctx) {
  apply_iperf3_flags(o);
  const int roles = (o.server ? 1 : 0) + (o.client.empty() ? 0 : 1) + (o.loopback ? 1 : 0);
  if (roles != 1) throw UsageError(std::string(o.net ? "bench net" : "bench tcp") + ": give exactly one of --server, --client HOST[,HOST...] or --loopback");
  if (o.port < 0 || o.port > 65535) throw UsageError("--port must be in 0-65535");
  if (o.against_nccl && !o.loopback)
    throw UsageError("--against-nccl runs both ends on this host: give --loopback (between hosts, run `p2pscope bench "
                     "gpu --backend nccl` under your launcher beside bench tcp/net)");
  // Server-only settings are refused elsewhere rather than silently ignored.
  for (const char* f : {"--bind", "--sessions", "--accept-timeout", "--max-memory", "--max-conns", "--max-timeout"})
    if (!o.server && given(o, f))
      throw UsageError(std::string(f) + " is a server setting (--server / -s); " +
                       (o.loopback ? "--loopback runs one session in this process" : "a client does not take it"));
  const out::Output output = o.json ? out::Output(out::Format::json) : bench_output(o.out.format);
  // One file holds one result: a server of several sessions prints each to stdout.
  if (!o.out.out.empty() && o.out.out != "-" && o.server && o.sessions != 1)
    throw UsageError("--out writes one session's results: give --server --sessions 1 with it (a server of several "
                     "sessions prints each to stdout)");
  tcp::LocalOptions local = o.engine.local();
  const double monitor_interval_s = o.monitor.enabled ? o.monitor.interval_s() : 0;  // bad value: exit 2 now
  std::shared_ptr<net::Plugin> plugin;
  if (o.net) {
    plugin = tcp::use_plugin_path(local, o.plugin, o.dmabuf, command_name(o));
    std::fprintf(stderr, "p2pscope bench net: loaded %s\n", plugin->describe().c_str());
  }
  const Printing printing{output, o, ctx, plugin.get()};
  if (o.server) return serve(o, local, monitor_interval_s, ctx, printing);
  tcp::Params p = o.engine.params();
  if (o.against_nccl) {
    // NCCL moves GPU memory: so does the engine, unless told, or unless the plugin takes
    // host memory only (NCCL then stages through host memory, and the engine does too).
    bool cuda_ok = true;
    if (plugin)
      for (const auto& d : plugin->devices()) cuda_ok = cuda_ok && (d.ptr_support & net::kPtrCuda);
    if (!given(o, "--mem")) p.mem = cuda_ok ? tcp::MemKind::gpu : tcp::MemKind::host;
    const profile::InterruptFlag interrupt(command_name(o));
    local.stop = interrupt.flag();
    AgainstNcclCommand c{p, local, o.loopback, plugin ? plugin->path() : "", plugin ? plugin->name() : "", &output};
    run_against_nccl(c, [&](const std::string& text) { emit(text, output, o.out, "against_nccl"); }, ctx);
    if (interrupt.signal_number() != 0) ctx.exit_code = 128 + interrupt.signal_number();
    return;
  }
  // Ctrl-C / SIGTERM stop the session within a chunk (or a ping): the rounds done are kept.
  const profile::InterruptFlag interrupt(command_name(o));
  local.stop = interrupt.flag();
  const auto mon = start_monitor(o, monitor_interval_s);
  const tcp::Results r = run_as_client_or_loopback(o.client, o.port, local, p);  // --loopback: no --client (one role)
  if (!mon) {
    print(r, printing);
  } else {
    const monitor::SessionResult m = stop_monitor(*mon, ctx);
    print(r, printing, &m);
  }
  if (!r.failure.empty()) report_failure(r, ctx);
  if (interrupt.signal_number() != 0) ctx.exit_code = 128 + interrupt.signal_number();
}

}  // namespace

namespace {

CLI::App* add_engine_command(CLI::App& bench, Context& ctx, bool net) {
  auto o = std::make_shared<BenchTcpOptions>();
  o->net = net;
  auto* c = net ? bench.add_subcommand("net", "NCCL net plugin engine (TCPX, aws-ofi-nccl, IB, socket plugins) without "
                                              "NCCL: channels = plugin comms over its devices, windows, pinned workers")
                : bench.add_subcommand("tcp", "TCP transfer engine: channels over NICs, windows, pinned TX/RX workers");
  if (net) {
    c->add_option("--plugin", o->plugin, "plugin: a path, a file name or NAME (libnccl-net-NAME.so); default "
                                         "$NCCL_NET_PLUGIN, else libnccl-net.so, as NCCL resolves it");
    c->add_option("--dmabuf", o->dmabuf, "--mem gpu: register CUDA buffers with regMrDmaBuf (a dma-buf of the buffer, "
                                         "as NCCL): auto (where the plugin device and the GPU offer it), on (or refuse), "
                                         "off (regMr)")
        ->capture_default_str();
  }
  c->add_flag("-s,--server", o->server, "serve clients (each proposes its parameters) until killed, or --sessions N");
  c->add_option("--bind", o->bind, "server: local addresses to listen on (one per NIC)")->delimiter(',')->capture_default_str();
  c->add_option("-c,--client", o->client, "client: server addresses or host names; channel c goes to HOST[c % n]")
      ->delimiter(',');
  c->add_flag("--loopback", o->loopback, "server and client in this process over 127.0.0.1");
  c->add_option("-p,--port", o->port, "TCP port (server: 0 = any free one)")->capture_default_str();
  c->add_option("-P,--parallel", o->parallel, "iperf3's -P: parallel streams, as --channels N");
  c->add_flag("-J,--json", o->json, "iperf3's -J: as --format json");
  c->add_flag("-R", o->iperf_reverse, "iperf3's -R: as --reverse (the server sends)");
  c->add_option("-t,--time", o->iperf_time, "iperf3's -t: refused with what to use (p2pscope counts rounds)");
  c->add_flag("--against-nccl", o->against_nccl, "with --loopback: also NCCL's send/recv over the same path, GPU and "
                                                 "NICs (2 ranks, own NCCL_HOSTIDs), and the engine at NCCL's shape; "
                                                 "a table of what each used and what explains the gap");
  o->cmd = c;
  c->add_option("--sessions", o->sessions, "server: sessions to serve, then exit (0 = until killed)")->capture_default_str();
  c->add_option("--accept-timeout", o->accept_timeout_s, "server: seconds to wait for a client (0 = forever)");
  c->add_option("--format", o->out.format, "text, csv (channel, NIC and total rows) or json (with run metadata)")
      ->capture_default_str();
  c->add_option("--out", o->out.out, "write to FILE, or into DIR (existing, or ending in /) under a dated name");
  c->add_flag("--force", o->out.force, "replace the --out FILE if it exists");
  c->add_option("--max-memory", o->max_memory, "server: host buffer bytes one session may take (default: a quarter "
                                               "of RAM; K/M/G)");
  c->add_option("--max-conns", o->max_conns, "server: data connections one session may open")->capture_default_str();
  c->add_option("--max-timeout", o->max_timeout_s, "server: the most seconds a client's --timeout may ask for")
      ->capture_default_str();
  o->engine.add_engine_options(*c);
  o->monitor.add(*c, true);
  c->footer(
      "Examples:\n"
      "  p2pscope bench tcp --server --bind 10.0.1.1,10.0.2.1        # until killed; --sessions 1 for one client\n"
      "  p2pscope bench tcp --client 10.0.1.1,10.0.2.1 --nics eth1,eth2 --channels 8 --window 16 --chunk 512K\n"
      "  p2pscope bench tcp --loopback --mode bidir --channels 2 --verify\n"
      "  p2pscope bench tcp --loopback --monitor --monitor-dir out/  (monitor.csv, summary.json, verdicts)\n"
      "Bindings default to $NCCL_GPUDIRECTTCPX_TX_BINDINGS / _RX_BINDINGS when set.\n"
      "Set the same P2PSCOPE_TOKEN (or P2PSCOPE_TOKEN_FILE) on server and client: the server then refuses\n"
      "anyone without it, before reading any parameter.");
  c->callback([o, &ctx] { run(*o, ctx); });
  return c;
}

}  // namespace

void add_bench_tcp_command(CLI::App& bench, Context& ctx) {
  add_engine_command(bench, ctx, false);
  auto* n = add_engine_command(bench, ctx, true);
  n->footer(
      "Examples:\n"
      "  p2pscope bench net --plugin build/lib/libnccl-net-p2pscope.so --loopback --channels 4 --size 256M --verify\n"
      "  NCCL_NET_PLUGIN=gpudirecttcpx p2pscope bench net --server --bind 10.0.0.2 --mem gpu --gpus 0-7\n"
      "  p2pscope bench net --client 10.0.0.2 --mem gpu --gpus 0-7 --channels 8 --tx-bind \"$NCCL_GPUDIRECTTCPX_TX_BINDINGS\"\n"
      "  p2pscope bench net --plugin ofi --loopback --mem gpu --dmabuf on --verify   # regMrDmaBuf or a clear refusal\n"
      "Both sides load the same plugin; the server and the client must both be bench net (or both bench tcp).\n"
      "Set the same P2PSCOPE_TOKEN on both sides to keep strangers out of the server.");
}

}  // namespace p2pscope::app
