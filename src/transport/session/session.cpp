// Session control, the same for every data path: handshake (challenge-response over
// the shared secret, then parameters checked against the server's own limits), rounds,
// exchange of results, and what a failed session keeps. Data links are the DataPath's.
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "p2pscope/auth.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tcp.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "transport/session/channel.hpp"
#include "transport/session/datapath.hpp"
#include "transport/session/figures_check.hpp"
#include "transport/session/gate.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/session/protocol.hpp"

namespace p2pscope::tcp {
using namespace p2pscope::session;
namespace {

// One side's session before its links are open.
Session new_session(const Params& p, bool is_client, const LocalOptions& local, DataPath* path) {
  Session s;
  s.p = p;
  s.is_client = is_client;
  s.local = local;
  s.path = path;
  s.report.side = is_client ? "client" : "server";
  return s;
}

std::uint32_t rounds_of(const Params& p) { return p.mode == Mode::latency ? 1 : p.warmup + p.iters; }
bool timed_round(const Params& p, std::uint32_t r) { return p.mode == Mode::latency || r >= p.warmup; }

// GPU destinations are checked whole after the round (host ones chunk by chunk).
void after_round(Session& s, std::uint32_t round) {
  if (!s.p.verify || s.p.mode == Mode::latency) return;
  for (bool c2s : {true, false}) {
    if (!s.dir_used(c2s) || s.sends(c2s)) continue;
    for (std::uint32_t g = 0; g < s.dst.size(); ++g) {
      if (s.dst[g].on_gpu()) {
        const auto bad = check_buffer(s.dst[g], s.seed(c2s, g, round));
        if (bad != s.dst[g].size())
          throw Error("verify: GPU " + std::to_string(s.p.gpus[g]) + " destination byte " + std::to_string(bad) +
                      " differs from the sender's pattern after round " + std::to_string(round));
      }
      s.report.verified_bytes += s.p.size_bytes;
    }
  }
}

// Fails early (before any data moves) when a GPU of the list cannot be used.
void probe_gpus(const Params& p) {
  if (p.mem != MemKind::gpu) return;
  for (int g : p.gpus) Buffer::device(1, g);
}

// "link down (NIC eth1: operstate down)" when the failing link's NIC says so: a
// timeout and an unplugged cable look alike from the socket.
std::optional<std::string> link_down(const LocalOptions& local, const std::string& nic) {
  if (nic.empty() || nic == "lo") return std::nullopt;
  try {
    const FsRoot root(local.fsroot);
    const auto oper = root.read_line("/sys/class/net/" + nic + "/operstate");
    const auto carrier = root.read_line("/sys/class/net/" + nic + "/carrier");
    if ((oper && *oper != "up" && *oper != "unknown") || (carrier && *carrier == "0"))
      return "link down (NIC " + nic + ": operstate " + oper.value_or("?") + ", carrier " + carrier.value_or("?") + ")";
  } catch (const std::exception&) {  // the NIC is gone altogether: say what the socket said
  }
  return std::nullopt;
}

std::string name_cause(const LocalOptions& local, IoCause cause, const std::string& nic) {
  if (cause != IoCause::closed && cause != IoCause::reset)
    if (auto down = link_down(local, nic)) return *down;
  if (cause == IoCause::reset || cause == IoCause::closed)
    // The peer may have reset this link because another of the session's links went
    // down: it gives up on the session as soon as it sees its own link fail, which can
    // be before this side's socket on the dead link says anything.
    for (const auto& other : local.nics)
      if (auto down = link_down(local, other)) return *down + "; then " + to_string(cause) + " on another link";
  return to_string(cause);
}

// A timed round's figures, taken before it runs: a round that fails after this side's
// workers finished it (the peer failed it: a plugin's send completes once the bytes are
// handed over, before they arrive) must not count, as rounds_completed does not count it.
struct Figures {
  struct Chan {
    std::uint64_t bytes, occ_n;
    double elapsed_s, occ_sum;
    std::uint64_t lat_n;
    std::uint32_t occ_max;
  };
  std::vector<Chan> chans;
  std::size_t tx_rounds = 0, rx_rounds = 0;
};

Figures figures_of(const Session& s) {
  Figures f;
  for (const auto& c : s.chans) f.chans.push_back({c->bytes, c->occ_n, c->elapsed_s, c->occ_sum, c->lat_ns.seen(), c->occ_max});
  f.tx_rounds = s.report.round_tx_bytes_per_s.size();
  f.rx_rounds = s.report.round_rx_bytes_per_s.size();
  return f;
}

void restore(Session& s, const Figures& f) {
  for (std::size_t i = 0; i < f.chans.size() && i < s.chans.size(); ++i) {
    ChannelState& c = *s.chans[i];
    const Figures::Chan& k = f.chans[i];
    c.bytes = k.bytes;
    c.elapsed_s = k.elapsed_s;
    c.lat_ns.truncate(k.lat_n);
    c.occ_sum = k.occ_sum;
    c.occ_n = k.occ_n;
    c.occ_max = k.occ_max;
  }
  s.report.round_tx_bytes_per_s.resize(f.tx_rounds);
  s.report.round_rx_bytes_per_s.resize(f.rx_rounds);
}

// A plugin names a killed peer only by a failed call (ncclRemoteError: "I/O error"); the
// control connection says whether the peer's process is gone (issue 32 item 13): closed
// or reset within wait_s, and no frame (a live peer that failed sends its reason first).
std::optional<IoCause> peer_gone(const Socket& ctrl, double wait_s) {
  pollfd pf{ctrl.fd(), POLLIN | POLLRDHUP, 0};
  if (::poll(&pf, 1, static_cast<int>(wait_s * 1000)) <= 0) return std::nullopt;
  char b = 0;
  const ssize_t n = ::recv(ctrl.fd(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return IoCause::closed;
  if (n < 0 && (errno == ECONNRESET || errno == EPIPE)) return IoCause::reset;
  return std::nullopt;
}

// "Too many open files" said plainly: a server out of descriptors read "peer closed" at
// the client (issue 32 item 13).
std::string name_exhaustion(const std::string& what) {
  if (what.find(std::strerror(EMFILE)) == std::string::npos && what.find(std::strerror(ENFILE)) == std::string::npos)
    return what;
  rlimit rl{};
  const std::string limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                                ? " (its limit, ulimit -n, is " + std::to_string(rl.rlim_cur) + ")"
                                : "";
  return "ran out of file descriptors" + limit + ": raise the limit or ask for fewer links (--channels, "
         "--sockets-per-channel); " + what;
}

void expect_go(Socket& ctrl, std::uint32_t r) {
  const auto body = expect_frame(ctrl, FrameType::go, "waiting for round " + std::to_string(r));
  const auto it = body.find("round");
  if (it == body.end() || !it->is_number_integer() || it->get<std::int64_t>() != r)
    throw Error("client is out of step: round mismatch");
}

struct Outcome {
  std::string failure, cause;
  std::uint32_t timed_done = 0;
};

// Tells the peer this side failed; never throws (the peer may be gone).
void tell_peer(Socket& ctrl, const std::string& why, const std::string& cause = "") noexcept {
  try {
    ctrl.set_timeout(1.0);
    nlohmann::json body = {{"reason", why}};
    if (!cause.empty()) body["cause"] = cause;  // the peer's watch keeps it (peer_watch.cpp)
    send_frame(ctrl, FrameType::error, body);
  } catch (const std::exception&) {
  }
}

Outcome run_rounds(Session& s, Socket& ctrl) {
  const std::string peer = s.is_client ? "server" : "client";
  Outcome out;
  std::int64_t rounds0 = 0;  // from the first go: not the peer's set-up
  std::optional<Figures> before;  // set while a timed round's figures are not yet confirmed
  s.ctrl = &ctrl;
  struct Forget {
    Session& s;
    ~Forget() { s.ctrl = nullptr; }
  } forget{s};
  try {
    // The server says when its buffers are ready, so no timed round includes its setup;
    // it fills the next round's sources before reporting a round done, for the same reason.
    if (s.is_client)
      expect_frame(ctrl, FrameType::done, "waiting for the server to set up");
    else
      send_frame(ctrl, FrameType::done, {{"round", -1}});
    for (std::uint32_t r = 0; r < rounds_of(s.p); ++r) {
      if (s.is_client) {
        if (r > 0) fill_sources(s, r);
        send_frame(ctrl, FrameType::go, {{"round", r}});
      } else {
        expect_go(ctrl, r);
        confirm_sends(s, monotonic_ns());  // the client's next go: it has the last round's bytes
      }
      if (r == 0) rounds0 = monotonic_ns();
      if (timed_round(s.p, r) && s.p.mode != Mode::latency) before = figures_of(s);
      run_round(s, r, timed_round(s.p, r));
      after_round(s, r);
      if (s.is_client) {
        expect_frame(ctrl, FrameType::done, "round " + std::to_string(r));
        confirm_sends(s, monotonic_ns());  // the server's done: it has this round's bytes
      } else {
        if (r + 1 < rounds_of(s.p)) fill_sources(s, r + 1);
        send_frame(ctrl, FrameType::done, {{"round", r}});
      }
      if (timed_round(s.p, r) && s.p.mode != Mode::latency) ++out.timed_done;
      before.reset();
    }
    // A last go confirms the last round to a server whose sends complete locally.
    if (s.is_client) {
      send_frame(ctrl, FrameType::go, {{"round", rounds_of(s.p)}});
    } else {
      expect_go(ctrl, rounds_of(s.p));
      confirm_sends(s, monotonic_ns());
    }
  } catch (const RoundFailure& e) {
    out.failure = s.report.side + ": " + e.what();
    out.cause = name_cause(s.local, e.cause(), e.nic());
    if (e.cause() == IoCause::other) {
      if (const auto gone = peer_gone(ctrl, 0.5)) {
        out.cause = to_string(*gone);
        out.failure += "; the " + peer + "'s control connection " + (*gone == IoCause::closed ? "closed" : "was reset") +
                       " too: its process ended (killed?) or closed the session";
      }
    }
  } catch (const IoError& e) {  // the control connection: its NIC may be the one that went down
    out.failure = s.report.side + ": control connection to the " + peer + ": " + e.what();
    std::string nic;
    try {
      nic = nic_name_of(ctrl.local_ip());
    } catch (const std::exception&) {
    }
    out.cause = name_cause(s.local, e.cause(), nic);
  } catch (const std::exception& e) {
    out.failure = s.report.side + ": " + e.what();
    out.cause = "error";
  }
  if (!out.failure.empty() && s.local.stop && s.local.stop->load()) out.cause = "interrupted by a signal";
  if (!out.failure.empty()) tell_peer(ctrl, out.failure, out.cause);
  if (!out.failure.empty() && before) restore(s, *before);
  if (s.p.mode == Mode::latency && out.failure.empty()) out.timed_done = 1;
  s.report.rounds_s = rounds0 ? static_cast<double>(monotonic_ns() - rounds0) * 1e-9 : 0;
  finish_report(s);
  return out;
}

// After a failure the peer may still send its figures (it failed too, or saw ours):
// read frames for a short while, keep its reason and its result.
void collect_after_failure(Socket& ctrl, Results& r) {
  const std::int64_t until = monotonic_ns() + 1'000'000'000;
  try {
    ctrl.set_timeout(0.5);
    while (monotonic_ns() < until) {
      Frame f = recv_frame(ctrl, false);
      if (f.type == FrameType::error) {
        const auto it = f.body.find("reason");
        if (it != f.body.end() && it->is_string())
          r.failure += "; server: " + external_text(it->get<std::string>(), 500);
      } else if (f.type == FrameType::result) {
        r.server = side_from_json(f.body);
        return;
      }
    }
  } catch (const std::exception&) {  // gone: the client's side is what there is
  }
  r.server.side = "server";
  r.server.warnings.push_back("the server's figures did not arrive after the failure");
}

// The server's reason for a failed set-up, if it sends one within a second; "" if not.
std::string peer_reason_after_setup(Socket& ctrl) noexcept {
  try {
    ctrl.set_timeout(1.0);
    const Frame f = recv_frame(ctrl, false);
    const auto it = f.body.find("reason");
    if (f.type == FrameType::error && it != f.body.end() && it->is_string())
      return "; " + external_text(it->get<std::string>(), 2000);
  } catch (const std::exception&) {  // gone or silent: this side's error is what there is
  }
  return "";
}

std::string json_string(const nlohmann::json& j, const char* key, const std::string& context) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    throw Error(context + ": malformed reply (field '" + key + "' missing or not a string)");
  return it->get<std::string>();
}

std::shared_ptr<DataPath> path_of(const LocalOptions& l) { return l.path ? l.path : make_socket_path(); }

}  // namespace

Results run_client(const ClientOptions& o, const Params& params) {
  validate(params);
  if (o.hosts.empty()) throw UsageError("--client needs at least one server address");
  for (const auto& h : o.hosts) parse_ipv4(h, "--client");
  const auto path = path_of(o.local);
  Params p = params;
  p.transport = path->name();
  path->check(p);
  probe_gpus(p);

  Session s = new_session(p, true, o.local, path.get());
  std::string src;
  if (!o.local.nics.empty()) src = resolve_nic(o.local.nics[0]).ipv4;
  Socket ctrl = Socket::connect_to(o.hosts[0], o.port, src, p.timeout_s);
  configure(ctrl, p);
  ctrl.set_label("control connection to " + ctrl.peer_addr());
  const std::string context = "handshake with " + ctrl.peer_addr();
  const std::string nonce = auth::random_nonce_hex();
  send_frame(ctrl, FrameType::hello, {{"nonce", nonce}});
  const auto challenge = expect_frame(ctrl, FrameType::challenge, context);
  const std::string server_nonce = json_string(challenge, "nonce", context);
  const bool required = json_string(challenge, "auth", context) == "required";
  if (required && !o.token)
    throw Error(context + ": the server requires the shared secret: set P2PSCOPE_TOKEN (or P2PSCOPE_TOKEN_FILE) "
                          "to the server's value");
  // A client with a secret talks only to a server that checks it: one that says it
  // checks none may be anyone's (an impostor, or a relay to the real one).
  if (o.token && !required)
    throw Error(context + ": this client has a shared secret (P2PSCOPE_TOKEN) but the server checks none: not "
                          "sending parameters to it; give the server the same P2PSCOPE_TOKEN, or unset it here");
  nlohmann::json pj = to_json(p);
  // bench net: the addresses this side's handles may name, under the proof's digest.
  if (const auto mine = path->own_addresses(); !mine.empty()) pj["net_addresses"] = mine;
  const std::string binding = client_binding(ctrl.peer_addr(), pj);
  send_frame(ctrl, FrameType::params,
             {{"proof", o.token ? auth::proof(*o.token, "client", nonce, server_nonce + binding) : ""}, {"params", pj}});
  const auto accepted = expect_frame(ctrl, FrameType::accept, context);
  const std::string session_id = json_string(accepted, "session", context);
  if (required) {
    const auto to = accepted.find("timeout_s");
    const auto addrs = accepted.find("net_addresses");
    const std::string bound = server_binding(binding, session_id, to == accepted.end() ? nlohmann::json() : *to,
                                             addrs == accepted.end() ? nlohmann::json() : *addrs);
    if (!auth::equal_constant_time(json_string(accepted, "proof", context),
                                   auth::proof(*o.token, "server", nonce, server_nonce + bound)))
      throw Error(context + ": the server could not prove it holds the shared secret for this session; not "
                            "sending data to it");
    s.authenticated = true;
    s.peer_addrs = vouched_addresses(accepted);  // proven: the server's other addresses
  }
  const auto t = accepted.find("timeout_s");
  if (t != accepted.end() && t->is_number() && t->get<double>() != p.timeout_s)
    s.warnings.push_back("the server runs this session with a timeout of " + fixed(t->get<double>(), 1) +
                         " s (its limits), not --timeout " + fixed(p.timeout_s, 1));

  try {
    path->open_client(s, ctrl, o, session_id);
    prepare_session(s);
  } catch (const std::exception& e) {
    // A server that failed its set-up (out of descriptors, say) resets the data links it
    // had; its reason follows on the control connection and is what the user needs.
    const std::string why = peer_reason_after_setup(ctrl);
    if (why.empty()) throw;
    throw Error(e.what() + why);
  }
  const Outcome out = run_rounds(s, ctrl);
  Results r;
  r.params = p;
  r.client = s.report;
  r.failure = out.failure;
  r.failure_cause = out.cause;
  r.rounds_completed = out.timed_done;
  if (out.failure.empty()) {
    r.server = side_from_json(expect_frame(ctrl, FrameType::result, "final results"));
    if (const std::string why = check_server_figures(r); !why.empty()) {  // never shown as measured
      r.failure = "client: the server's figures disagree with this client's: " + why +
                  " (a faulty or lying server): its figures are not reported";
      r.failure_cause = "server's figures refused";
      r.server = {};
      r.server.side = "server";
      r.server.warnings.push_back("figures refused: " + why);
    }
  } else {
    collect_after_failure(ctrl, r);
  }
  return r;
}

struct Server::Impl {
  ServerOptions opts;
  Listener listener;
  std::shared_ptr<DataPath> path;
  std::mutex gate_mu;
  bool stopped = false;
  // Started by the first serve_one (not the constructor: a test may fork a child that
  // serves, and threads do not survive fork) and kept between sessions, so a client
  // that connects as one session ends waits for the next instead of being dropped.
  std::unique_ptr<Gate> gate;
  explicit Impl(const ServerOptions& o) : opts(o), listener(o.bind_addrs, o.port), path(path_of(o.local)) {}
  void log(const std::string& line) const {
    if (opts.log) opts.log(line);
  }
  // A stranger's refusals are logged at most kRefusalsPerWindow per 10 s window, then
  // counted: a flood of 200 slow connections wrote 1.9 MB of stderr per 40 s (issue 32
  // item 14). Every other line passes.
  static constexpr int kRefusalsPerWindow = 20;
  mutable std::mutex log_mu;
  mutable std::int64_t window_start_ns = 0;
  mutable int refusals_in_window = 0, suppressed = 0;
  void flush_log(Gate& g) const {
    std::lock_guard lk(log_mu);
    const std::int64_t now = monotonic_ns();
    if (now - window_start_ns > 10'000'000'000LL) {
      if (suppressed > 0)
        log(std::to_string(suppressed) + " more refusal(s) in the last 10 s not printed (a flood of connections?)");
      window_start_ns = now, refusals_in_window = 0, suppressed = 0;
    }
    for (const auto& l : g.take_log()) {
      if (l.rfind("refused ", 0) == 0 && ++refusals_in_window > kRefusalsPerWindow) {
        ++suppressed;
        continue;
      }
      log(l);
    }
  }
  Gate& the_gate() {
    std::lock_guard lk(gate_mu);
    if (stopped) throw NoClient("server stopped");
    if (!gate) {
      const ServerLimits& lim = opts.limits;
      gate = std::make_unique<Gate>(listener, GateLimits{lim.hello_timeout_s, lim.max_pending, 64u << 10}, opts.token);
    }
    return *gate;
  }
  ClientHello wait_client(Gate& gate);
  Results session(Gate& gate, ClientHello& c);
};

Server::Server(const ServerOptions& opts) {
  if (opts.bind_addrs.empty()) throw UsageError("--bind needs at least one address");
  for (const auto& a : opts.bind_addrs) parse_ipv4(a, "--bind");
  for (const auto& n : opts.local.nics) resolve_nic(n);
  const auto& l = opts.limits;
  if (l.min_timeout_s <= 0 || l.max_timeout_s < l.min_timeout_s) throw UsageError("server timeout limits out of order");
  if (l.hello_timeout_s <= 0 || l.max_pending == 0) throw UsageError("server handshake limits must be positive");
  impl_ = std::make_unique<Impl>(opts);
}
Server::~Server() = default;
std::uint16_t Server::port() const { return impl_->listener.port(); }
void Server::stop() {
  impl_->listener.stop();
  std::lock_guard lk(impl_->gate_mu);
  impl_->stopped = true;
  if (impl_->gate) impl_->gate->stop();
}

// Waits for the next client in short slices, passing on what the gate refused as it
// happens (not when a client finally comes: a server nobody uses would log nothing).
ClientHello Server::Impl::wait_client(Gate& gate) {
  const double total_s = opts.accept_timeout_s;
  const std::int64_t start = monotonic_ns();
  for (;;) {
    double slice_s = 0.25;
    if (total_s > 0) slice_s = std::min(slice_s, total_s - static_cast<double>(monotonic_ns() - start) * 1e-9);
    try {
      if (slice_s <= 0) throw NoClient("");
      ClientHello c = gate.next_client(slice_s);
      flush_log(gate);
      return c;
    } catch (const NoClient&) {
      flush_log(gate);
      {
        std::lock_guard lk(gate_mu);
        if (stopped) throw NoClient("server stopped");
      }
      if (total_s > 0 && static_cast<double>(monotonic_ns() - start) * 1e-9 >= total_s)
        throw NoClient("no client on port " + std::to_string(listener.port()) + " within " + fixed(total_s, 1) + " s");
    }
  }
}

Results Server::serve_one() {
  Gate& gate = impl_->the_gate();
  ClientHello c = impl_->wait_client(gate);
  try {
    Results r = impl_->session(gate, c);
    impl_->flush_log(gate);
    return r;
  } catch (const Error&) {
    impl_->flush_log(gate);
    throw;
  } catch (const std::exception& e) {  // a resource (threads, memory) or a bug: this session only
    impl_->flush_log(gate);
    throw Error("session with " + c.peer + " failed: " + e.what());
  }
}

namespace {

// What a server allows any client (ServerLimits), checked before anything is made: the
// timeout clamped into its range, then the links, threads and memory the session needs
// here, each refused by name.
void admit_within_limits(Params& p, const DataPath& path, const ServerLimits& lim) {
  p.timeout_s = std::min(std::max(p.timeout_s, lim.min_timeout_s), lim.max_timeout_s);
  const std::uint64_t links = link_count(p);
  if (links > lim.max_connections)
    throw UsageError("the session needs " + std::to_string(links) + " data links, over this server's limit of " +
                     std::to_string(lim.max_connections));
  const std::uint64_t threads = worker_count(p, path, false);
  if (threads > lim.max_threads)
    throw UsageError("the session needs " + std::to_string(threads) + " worker threads here, over this server's "
                     "limit of " + std::to_string(lim.max_threads));
  const std::uint64_t host_bytes = host_buffer_bytes(p, path, false);
  // The bookkeeping counts too: per-chunk samples of 100000 rounds grew a server outside
  // its --max-memory (issue 32 item 10); it is capped, and the cap is what is counted.
  // So do the buffers' page tables: a fold of small pieces maps far more than it holds
  // (issue 43 item 8).
  const std::uint64_t books = bookkeeping_bytes(p), kernel = host_kernel_bytes(p, path, false);
  const std::uint64_t max_mem = lim.max_memory_bytes ? lim.max_memory_bytes : default_max_memory_bytes();
  if (host_bytes > max_mem || books > max_mem - host_bytes || kernel > max_mem - host_bytes - books)
    throw UsageError("the session needs " + format_size(host_bytes) + " of host buffers, " + format_size(kernel) +
                     " of their page tables and mappings, and " + format_size(books) +
                     " of bookkeeping (timing samples, per-round figures, per-chunk tracking) here, over this "
                     "server's --max-memory " + format_size(max_mem) + "; use a smaller --size or --chunk x "
                     "--window, fewer --iters or a larger --chunk, a larger --slot-memory, or drop --verify (it "
                     "keeps a whole source)");
}

}  // namespace

Results Server::Impl::session(Gate& gate, ClientHello& c) {
  Socket& ctrl = c.ctrl;
  ctrl.set_label("control connection from " + c.peer);
  Params p;
  std::vector<std::string> vouched;
  try {
    p = params_from_json(c.params);
    if (p.transport != path->name())
      throw UsageError("the client moves data over " + external_text(p.transport, 100) + ", this server over " +
                       path->name() + " (bench tcp and bench net servers are separate)");
    path->check(p);
    admit_within_limits(p, *path, opts.limits);
    probe_gpus(p);
    // Only a client that proved the secret vouches: a stranger's list is not read.
    if (c.authenticated) vouched = vouched_addresses(c.params);
  } catch (const std::exception& e) {
    try {
      send_frame(ctrl, FrameType::reject, {{"reason", e.what()}});
    } catch (const std::exception&) {
    }
    throw Refused("refused " + c.peer + ": " + e.what());
  }
  configure(ctrl, p);
  const std::string session_id = auth::random_nonce_hex();
  // The busy refusal tells a stranger nothing about this client (its address, its start).
  gate.open_session(session_id, "busy: serving another client's session");
  struct Close {
    Gate& g;
    ~Close() { g.close_session(); }
  } close{gate};
  const auto mine = path->own_addresses();
  const nlohmann::json addrs = mine.empty() ? nlohmann::json() : nlohmann::json(mine);
  nlohmann::json accept = {
      {"session", session_id},
      {"proof", opts.token ? auth::proof(*opts.token, "server", c.client_nonce,
                                         c.server_nonce + server_binding(c.binding, session_id,
                                                                         nlohmann::json(p.timeout_s), addrs))
                           : ""},
      {"timeout_s", p.timeout_s}};
  if (!addrs.is_null()) accept["net_addresses"] = addrs;
  send_frame(ctrl, FrameType::accept, accept);

  Session s = new_session(p, false, opts.local, path.get());
  s.reveal_host = c.authenticated;
  s.authenticated = c.authenticated;
  s.peer_addrs = std::move(vouched);
  try {  // the client is told why: it read "peer closed" when this side ran out of descriptors
    path->open_server(s, ctrl, gate, session_id);
    prepare_session(s);
  } catch (const std::exception& e) {
    const std::string named = name_exhaustion(e.what());
    const std::string why = "server: setting up the session " + (named == e.what() ? "failed: " + named : named);
    tell_peer(ctrl, external_text(why, 4000));
    throw Error("session with " + c.peer + ": " + why);
  }
  const Outcome out = run_rounds(s, ctrl);
  gate.close_session();  // before the result: a client that connects once it has it is not "busy"
  try {
    send_frame(ctrl, FrameType::result, to_json(s.report));
  } catch (const std::exception& e) {
    if (out.failure.empty()) throw;
  }
  if (out.failure.empty() && path->linger_until_client_closes()) {
    try {  // ends at the client's close, its timeout, or any frame: all we wait for is the client
      ctrl.set_timeout(p.timeout_s);
      recv_frame(ctrl, false);
    } catch (const std::exception&) {
    }
  }
  Results r;
  r.params = p;
  r.client.side = "client";
  r.server = s.report;
  r.failure = out.failure;
  r.failure_cause = out.cause;
  r.rounds_completed = out.timed_done;
  return r;
}

Results run_loopback(const Params& p, const LocalOptions& client_local, const LocalOptions& server_local) {
  validate(p);
  ServerOptions so;
  so.bind_addrs = {"127.0.0.1"};
  so.port = 0;
  so.local = server_local;
  so.accept_timeout_s = p.timeout_s;
  so.limits.max_timeout_s = std::max(so.limits.max_timeout_s, p.timeout_s);  // one process: no stranger's limits
  so.limits.min_timeout_s = std::min(so.limits.min_timeout_s, p.timeout_s);
  so.limits.max_memory_bytes = ~std::uint64_t{0};
  so.limits.max_connections = so.limits.max_threads = 1u << 20;
  const std::optional<std::string> token = auth::random_nonce_hex();  // nobody else can join this session
  so.token = token;
  Server srv(so);
  ClientOptions co;
  co.hosts = {"127.0.0.1"};
  co.port = srv.port();
  co.local = client_local;
  co.token = token;
  std::exception_ptr server_error;
  Results server_side;
  std::thread t([&] {
    try {
      server_side = srv.serve_one();
    } catch (...) {
      server_error = std::current_exception();
    }
  });
  Results r;
  try {
    r = run_client(co, p);
  } catch (...) {
    srv.stop();
    t.join();
    throw;
  }
  t.join();
  if (server_error && r.failure.empty()) std::rethrow_exception(server_error);
  // One process: the server's own figures are at hand even when they could not be sent.
  if (!r.failure.empty() && r.server.channels.empty() && !server_side.server.channels.empty())
    r.server = server_side.server;
  return r;
}

}  // namespace p2pscope::tcp
