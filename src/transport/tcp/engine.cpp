// Session control: handshake, data connections, rounds, exchange of results.
#include <unistd.h>

#include <exception>
#include <thread>

#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "transport/tcp/channel.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/tcp/protocol.hpp"

namespace p2pscope::tcp {
namespace {

void configure(Socket& s, const Params& p) {
  s.set_timeout(p.timeout_s);
  s.set_nodelay(p.nodelay);
  s.set_buffers(p.sockbuf_bytes);
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

// Reports a failed round to the peer and adds the peer's own reason when it has one.
[[noreturn]] void fail_round(Socket& ctrl, const std::string& what, const std::string& side) {
  std::string msg = what;
  try {
    ctrl.set_timeout(1.0);
    send_frame(ctrl, FrameType::error, {{"reason", what}});
    expect_frame(ctrl, FrameType::done, side);
  } catch (const Error& e) {
    const std::string peer = e.what();
    if (peer.find("peer failed") != std::string::npos) msg += "; " + peer;
  }
  throw Error(msg);
}

// Fails early (before any data moves) when a GPU of the list cannot be used.
void probe_gpus(const Params& p) {
  if (p.mem != MemKind::gpu) return;
  for (int g : p.gpus) Buffer::device(1, g);
}

void run_rounds(Session& s, Socket& ctrl) {
  const std::string side = s.is_client ? "server" : "client";
  // The server says when its buffers are ready, so no timed round includes its setup;
  // it fills the next round's sources before reporting a round done, for the same reason.
  if (s.is_client)
    expect_frame(ctrl, FrameType::done, "waiting for the server to set up");
  else
    send_frame(ctrl, FrameType::done, {{"round", -1}});
  std::int64_t rounds0 = 0;  // from the first go: not the peer's set-up
  for (std::uint32_t r = 0; r < rounds_of(s.p); ++r) {
    if (s.is_client) {
      if (r > 0) fill_sources(s, r);
      send_frame(ctrl, FrameType::go, {{"round", r}});
    } else {
      const auto body = expect_frame(ctrl, FrameType::go, "waiting for round " + std::to_string(r));
      if (body.value("round", -1) != static_cast<int>(r)) throw Error("client is out of step: round mismatch");
    }
    if (r == 0) rounds0 = monotonic_ns();
    try {
      run_round(s, r, timed_round(s.p, r));
      after_round(s, r);
    } catch (const Error& e) {
      fail_round(ctrl, s.report.side + " round " + std::to_string(r) + ": " + e.what(), side);
    }
    if (s.is_client) {
      expect_frame(ctrl, FrameType::done, "round " + std::to_string(r));
    } else {
      if (r + 1 < rounds_of(s.p)) fill_sources(s, r + 1);
      send_frame(ctrl, FrameType::done, {{"round", r}});
    }
  }
  s.report.rounds_s = static_cast<double>(monotonic_ns() - rounds0) * 1e-9;
  finish_report(s);
}

}  // namespace

Results run_client(const ClientOptions& o, const Params& p) {
  validate(p);
  if (o.hosts.empty()) throw UsageError("--client needs at least one server address");
  for (const auto& h : o.hosts) parse_ipv4(h, "--client");
  std::vector<NicAddr> nics;
  for (const auto& n : o.local.nics) nics.push_back(resolve_nic(n));
  probe_gpus(p);

  Session s;
  s.p = p;
  s.is_client = true;
  s.local = o.local;
  Socket ctrl = Socket::connect_to(o.hosts[0], o.port, nics.empty() ? "" : nics[0].ipv4, p.timeout_s);
  configure(ctrl, p);
  ctrl.set_label("control connection to " + ctrl.peer_addr());
  const std::uint64_t session = static_cast<std::uint64_t>(monotonic_ns()) ^ (static_cast<std::uint64_t>(getpid()) << 40);
  send_frame(ctrl, FrameType::hello, {{"params", to_json(p)}, {"session", session}});
  expect_frame(ctrl, FrameType::accept, "handshake with " + ctrl.peer_addr());

  for (bool c2s : {true, false}) {
    if (!s.dir_used(c2s)) continue;
    for (std::uint32_t g = 0; g < p.gpus.size(); ++g)
      for (std::uint32_t c = 0; c < p.channels; ++c)
        for (std::uint32_t k = 0; k < p.sockets_per_channel; ++k) {
          const std::size_t gc = g * p.channels + c;
          auto conn = std::make_unique<Conn>();
          conn->c2s = c2s;
          conn->gpu_slot = g;
          conn->channel = c;
          conn->socket = k;
          if (!nics.empty()) conn->nic = nics[gc % nics.size()];
          conn->sock = Socket::connect_to(o.hosts[gc % o.hosts.size()], o.port, conn->nic.ipv4, p.timeout_s);
          configure(conn->sock, p);
          if (nics.empty()) conn->nic = {nic_name_of(conn->sock.local_ip()), conn->sock.local_ip()};
          conn->sock.set_label("channel " + std::to_string(c) + " socket " + std::to_string(k) + " of gpu " +
                               std::to_string(p.gpus[g]) + " (" + (c2s ? "c2s" : "s2c") + ") " +
                               conn->sock.local_addr() + " -> " + conn->sock.peer_addr());
          send_frame(conn->sock, FrameType::data_hello,
                     {{"session", session}, {"c2s", c2s}, {"gpu_slot", g}, {"channel", c}, {"socket", k}});
          s.conns.push_back(std::move(conn));
        }
  }
  prepare_session(s);
  run_rounds(s, ctrl);
  const auto server_json = expect_frame(ctrl, FrameType::result, "final results");
  Results r;
  r.params = p;
  r.client = s.report;
  r.server = side_from_json(server_json);
  return r;
}

struct Server::Impl {
  ServerOptions opts;
  Listener listener;
  explicit Impl(const ServerOptions& o) : opts(o), listener(o.bind_addrs, o.port) {}
};

Server::Server(const ServerOptions& opts) {
  if (opts.bind_addrs.empty()) throw UsageError("--bind needs at least one address");
  for (const auto& a : opts.bind_addrs) parse_ipv4(a, "--bind");
  for (const auto& n : opts.local.nics) resolve_nic(n);
  impl_ = std::make_unique<Impl>(opts);
}
Server::~Server() = default;
std::uint16_t Server::port() const { return impl_->listener.port(); }
void Server::stop() { impl_->listener.stop(); }

Results Server::serve_one() {
  Socket ctrl = impl_->listener.accept(impl_->opts.accept_timeout_s);
  ctrl.set_timeout(10);  // until the client's parameters say otherwise
  ctrl.set_label("control connection from " + ctrl.peer_addr());
  Frame hello = recv_frame(ctrl, true);
  if (hello.type != FrameType::hello) {
    send_frame(ctrl, FrameType::reject, {{"reason", "expected a hello on a new connection"}});
    throw Error("refused " + ctrl.peer_addr() + ": it did not start with a hello");
  }
  Params p;
  std::uint64_t session = 0;
  try {
    p = params_from_json(hello.body.at("params"));
    session = hello.body.at("session").get<std::uint64_t>();
    probe_gpus(p);
  } catch (const std::exception& e) {
    send_frame(ctrl, FrameType::reject, {{"reason", e.what()}});
    throw Error("refused " + ctrl.peer_addr() + ": " + e.what());
  }
  configure(ctrl, p);
  send_frame(ctrl, FrameType::accept, nlohmann::json::object());

  Session s;
  s.p = p;
  s.is_client = false;
  s.local = impl_->opts.local;
  const std::size_t per_dir = p.gpus.size() * p.channels * p.sockets_per_channel;
  const std::size_t total = per_dir * ((s.dir_used(true) ? 1 : 0) + (s.dir_used(false) ? 1 : 0));
  std::vector<std::unique_ptr<Conn>> slots(2 * per_dir);
  for (std::size_t n = 0; n < total; ++n) {
    Socket sock;
    try {
      sock = impl_->listener.accept(p.timeout_s);
    } catch (const NoClient& e) {  // inside a session: that session failed
      throw Error("waiting for the data connections of " + ctrl.peer_addr() + ": " + e.what());
    }
    configure(sock, p);
    sock.set_label("data connection from " + sock.peer_addr());
    Frame f = recv_frame(sock, true);
    auto conn = std::make_unique<Conn>();
    try {
      if (f.type != FrameType::data_hello) throw Error("expected a data hello");
      if (f.body.at("session").get<std::uint64_t>() != session) throw Error("belongs to another session");
      conn->c2s = f.body.at("c2s").get<bool>();
      conn->gpu_slot = f.body.at("gpu_slot").get<std::uint32_t>();
      conn->channel = f.body.at("channel").get<std::uint32_t>();
      conn->socket = f.body.at("socket").get<std::uint32_t>();
    } catch (const std::exception& e) {
      send_frame(sock, FrameType::reject, {{"reason", e.what()}});
      throw Error("data connection from " + sock.peer_addr() + " refused: " + e.what());
    }
    if (conn->gpu_slot >= p.gpus.size() || conn->channel >= p.channels || conn->socket >= p.sockets_per_channel ||
        !s.dir_used(conn->c2s))
      throw Error("data connection from " + sock.peer_addr() + " names a channel outside the session");
    const std::size_t idx = (conn->c2s ? 0 : per_dir) +
                            (conn->gpu_slot * p.channels + conn->channel) * p.sockets_per_channel + conn->socket;
    if (slots[idx]) throw Error("data connection from " + sock.peer_addr() + " duplicates a channel");
    conn->nic = {nic_name_of(sock.local_ip()), sock.local_ip()};
    sock.set_label("channel " + std::to_string(conn->channel) + " socket " + std::to_string(conn->socket) + " of gpu " +
                   std::to_string(p.gpus[conn->gpu_slot]) + " (" + (conn->c2s ? "c2s" : "s2c") + ") " +
                   sock.local_addr() + " <- " + sock.peer_addr());
    conn->sock = std::move(sock);
    slots[idx] = std::move(conn);
  }
  for (auto& c : slots)
    if (c) s.conns.push_back(std::move(c));
  prepare_session(s);
  run_rounds(s, ctrl);
  send_frame(ctrl, FrameType::result, to_json(s.report));
  Results r;
  r.params = p;
  r.client.side = "client";
  r.server = s.report;
  return r;
}

Results run_loopback(const Params& p, const LocalOptions& client_local, const LocalOptions& server_local) {
  validate(p);
  ServerOptions so;
  so.bind_addrs = {"127.0.0.1"};
  so.port = 0;
  so.local = server_local;
  so.accept_timeout_s = p.timeout_s;
  Server srv(so);
  ClientOptions co;
  co.hosts = {"127.0.0.1"};
  co.port = srv.port();
  co.local = client_local;
  std::exception_ptr server_error;
  std::thread t([&] {
    try {
      srv.serve_one();
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
  if (server_error) std::rethrow_exception(server_error);
  return r;
}

}  // namespace p2pscope::tcp
