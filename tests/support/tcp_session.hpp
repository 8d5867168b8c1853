#pragma once
// One bench tcp / bench net session over 127.0.0.1 for tests: the server's options, the
// server in a thread and the client here with each side's results or error, a side's
// data path over a net plugin, and a connect that waits for a listener to come up.
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"
#include "support/timing.hpp"
#include "transport/session/datapath.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope::test {

// A server for one session on 127.0.0.1, on a port the kernel picks, that waits 10 s
// for its client.
inline tcp::ServerOptions loopback_server(tcp::LocalOptions local = {}) {
  tcp::ServerOptions so;
  so.bind_addrs = {"127.0.0.1"};
  so.port = 0;
  so.accept_timeout_s = 10;
  so.local = std::move(local);
  return so;
}

// A side that moves its data through `plugin` (bench net), registering CUDA buffers as
// `m` says.
inline tcp::LocalOptions over(const std::shared_ptr<net::Plugin>& plugin, tcp::DmabufMode m = tcp::DmabufMode::auto_) {
  tcp::LocalOptions l;
  l.path = tcp::make_plugin_path(plugin, m);
  return l;
}

// Each side's own figures and what it threw (std::exception's text), with the seconds
// from the start to its end.
struct Both {
  tcp::Results client, server;
  std::string client_error, server_error;
  double client_s = 0, server_s = 0;
};

// The server (`so`) serves one session in a thread while the client (`client_local`)
// runs `p` here. A client that fails stops the server, so neither waits out a timeout.
inline Both run_both(const tcp::Params& p, const tcp::ServerOptions& so, tcp::LocalOptions client_local = {}) {
  tcp::Server srv(so);
  Both b;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread t([&] {
    try {
      b.server = srv.serve_one();
    } catch (const std::exception& e) {
      b.server_error = e.what();
    }
    b.server_s = seconds_since(t0);
  });
  tcp::ClientOptions co;
  co.port = srv.port();
  co.local = std::move(client_local);
  try {
    b.client = tcp::run_client(co, p);
  } catch (const std::exception& e) {
    b.client_error = e.what();
    srv.stop();
  }
  b.client_s = seconds_since(t0);
  t.join();
  return b;
}

// A connection to 127.0.0.1:port, retried every 20 ms for about 2 s while nothing
// listens there yet (a rank 0 or server starting in another thread).
inline tcp::Socket connect_when_up(std::uint16_t port) {
  for (int i = 0;; ++i) {
    try {
      return tcp::Socket::connect_to("127.0.0.1", port, "", 2);
    } catch (const Error&) {
      if (i > 100) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace p2pscope::test
