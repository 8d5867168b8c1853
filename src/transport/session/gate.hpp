#pragma once
// The server's front door. One thread polls the listeners and every connection that
// has not yet said who it is, reading their first frames without blocking, each under
// a deadline the server sets (not the client). It authenticates control connections
// (challenge-response over the shared secret, before any parameter is read), hands the
// one session it serves its data connections by session id, and refuses everything
// else with a reason: a second client is told the server is busy, a probe that says
// nothing times out without using a session, a slow or garbled peer holds no one up.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "transport/tcp/listener.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope::session {
using namespace p2pscope::tcp;  // the engine's public types (Params, reports) and its sockets

struct GateLimits {
  double hello_timeout_s = 5;             // a new connection's whole handshake
  std::size_t max_pending = 64;           // connections still handshaking; the oldest goes first
  std::uint32_t max_frame_bytes = 64u << 10;  // any frame before a session accepted the peer
};

// A control connection that passed authentication and sent its parameters (not yet checked).
struct ClientHello {
  Socket ctrl;
  std::string peer;
  nlohmann::json params;           // the client's proposal, unchecked
  std::string client_nonce, server_nonce;
  bool authenticated = false;      // a shared secret was configured and the proof matched
  std::string binding;             // what the proof was bound to (client_binding), with a secret
};

// A data connection that named this session.
struct DataHello {
  Socket sock;
  nlohmann::json body;  // unchecked: the session checks types and ranges
};

class Gate {
 public:
  // token: the shared secret, or nullopt (then any client is let in, and told so).
  Gate(Listener& listener, GateLimits limits, std::optional<std::string> token);
  ~Gate();  // stops the thread, closes every pending connection
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // The next authenticated client; NoClient after timeout_s (<= 0: forever) or stop().
  ClientHello next_client(double timeout_s);
  // From now on: data connections naming `session_id` are queued for it, other
  // clients are refused as busy (`busy_reason` says with whom).
  void open_session(const std::string& session_id, const std::string& busy_reason);
  // The next data connection of the open session; Error after timeout_s.
  DataHello next_data(double timeout_s);
  void close_session();
  void stop() noexcept;  // wakes next_client / next_data (thread-safe)
  // What the gate refused, for the server's log ("refused 127.0.0.1:5000: ...").
  std::vector<std::string> take_log();

 private:
  struct Pending;
  void loop();
  void step(Pending& p);  // reads what arrived; may finish p (moved out) or refuse it
  void refuse(Pending& p, const std::string& why, bool tell);

  Listener& listener_;
  GateLimits limits_;
  std::optional<std::string> token_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ClientHello> clients_;
  std::deque<DataHello> data_;
  std::string session_id_, busy_reason_;
  std::vector<std::string> log_;
  bool stopping_ = false;
  // When accept last failed for want of descriptors (0: never): a session that waits
  // for its data connections then says so, not "did not arrive" (issue 32 item 13).
  std::int64_t exhausted_ns_ = 0;
  std::jthread thread_;
};

}  // namespace p2pscope::session
