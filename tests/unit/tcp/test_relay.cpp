// Proofs bound to the session (issue 32, item 3): an impostor without the secret sits
// between a real client and the real server and relays the nonces and the client's
// proof. The old proof covered only the nonces, so the server let the impostor in,
// with the client's parameters or its own. Now the proof covers the server's address
// as the client dialed it and the exact parameters: the relay is refused either way.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/server_thread.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/session/protocol.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using namespace p2pscope::session;
using p2pscope::test::ServerThread;

namespace {

Params one_round() {
  return {.size_bytes = 1u << 20, .chunk_bytes = 1u << 20, .iters = 1, .warmup = 0, .timeout_s = 3};
}

ServerOptions with_token(const std::string& t) {
  ServerOptions so;
  so.token = t;
  return so;
}

// The impostor: accepts the client on its own port, dials the real server and relays
// the handshake, optionally putting its own parameters in place of the client's.
struct Relay {
  Listener l{{"127.0.0.1"}, 0};
  std::string server_answer;  // the real server's reply to the relayed proof
  std::thread t;
  Relay(std::uint16_t server_port, bool swap_params) {
    t = std::thread([this, server_port, swap_params] {
      try {
        Socket c = l.accept(5);
        c.set_timeout(5);
        Socket s = Socket::connect_to("127.0.0.1", server_port, "", 5);
        s.set_timeout(5);
        send_frame(s, FrameType::hello, expect_frame(c, FrameType::hello, "relay"));
        send_frame(c, FrameType::challenge, expect_frame(s, FrameType::challenge, "relay"));
        nlohmann::json params = expect_frame(c, FrameType::params, "relay");
        if (swap_params) params["params"]["size_bytes"] = 1u << 30;  // its own 1 GiB session
        send_frame(s, FrameType::params, params);
        Frame f = recv_frame(s, false);
        server_answer = std::to_string(static_cast<unsigned>(f.type)) + " " + f.body.dump();
        send_frame(c, f.type, f.body);
      } catch (const std::exception& e) {
        server_answer = std::string("relay failed: ") + e.what();
      }
    });
  }
  ~Relay() {
    if (t.joinable()) t.join();
  }
};

std::string client_error(std::uint16_t port, const std::optional<std::string>& token) {
  ClientOptions co;
  co.port = port;
  co.token = token;
  try {
    return run_client(co, one_round()).failure;
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

TEST(TcpRelay, AProofRelayedToTheRealServerIsRefusedWithTheClientsParametersOrOthers) {
  ServerThread srv(with_token("s3cret"));
  for (bool swap : {false, true}) {
    Relay relay(srv.port(), swap);
    const std::string err = client_error(relay.l.port(), "s3cret");
    relay.t.join();
    EXPECT_EQ(relay.server_answer.rfind("3 ", 0), 0u) << (swap ? "swapped: " : "relayed: ") << relay.server_answer;
    EXPECT_NE(relay.server_answer.find("authentication failed"), std::string::npos) << relay.server_answer;
    EXPECT_NE(err.find("authentication failed"), std::string::npos) << err;
  }
  EXPECT_TRUE(srv.results().empty());  // no session ran for the impostor
  EXPECT_EQ(client_error(srv.port(), "s3cret"), "");  // the client dialing the server itself is served
}

TEST(TcpRelay, AClientWithASecretRefusesAServerThatChecksNone) {
  ServerThread srv;
  const std::string err = client_error(srv.port(), "s3cret");
  EXPECT_NE(err.find("the server checks none"), std::string::npos) << err;
  EXPECT_TRUE(srv.results().empty());
  EXPECT_EQ(client_error(srv.port(), std::nullopt), "");
}
