// The shared secret (P2PSCOPE_TOKEN) and a malicious server (issue 21): a client or
// server without the secret is refused before any parameter is read, and a server
// sending wrong JSON types gives the client an Error, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/raw_peer.hpp"
#include "support/server_thread.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/session/protocol.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using namespace p2pscope::session;
namespace pt = p2pscope::test;

namespace {

Params one_round() {
  return {.size_bytes = 1u << 20, .chunk_bytes = 1u << 20, .iters = 1, .warmup = 0, .timeout_s = 3};
}

// run_client's error text, or "" when it returned.
std::string client_error(std::uint16_t port, const std::optional<std::string>& token, Results* out = nullptr) {
  ClientOptions co;
  co.port = port;
  co.token = token;
  try {
    Results r = run_client(co, one_round());
    if (out) *out = r;
    return r.failure;
  } catch (const Error& e) {
    return e.what();
  }
}

std::string hostname() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

ServerOptions with_token(const std::string& t) {
  ServerOptions so;
  so.token = t;
  return so;
}

// A fake server for one client: `script` runs on its control connection after the
// client's hello was read; what the script throws is kept.
struct FakeServer {
  Listener l{{"127.0.0.1"}, 0};
  std::string error;
  std::thread t;
  explicit FakeServer(std::function<void(Listener&, Socket&, const nlohmann::json& hello)> script) {
    t = std::thread([this, script] {
      try {
        Socket ctrl = l.accept(5);
        const auto hello = expect_frame(ctrl, FrameType::hello, "fake");
        script(l, ctrl, hello);
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
  }
  ~FakeServer() {
    if (t.joinable()) t.join();
  }
};

// The fake's side of a handshake that lets the client in (no secret).
std::string let_in(Socket& ctrl) {
  send_frame(ctrl, FrameType::challenge, {{"nonce", "00"}, {"auth", "none"}});
  expect_frame(ctrl, FrameType::params, "fake");
  send_frame(ctrl, FrameType::accept, {{"session", "s1"}, {"proof", ""}, {"timeout_s", 3.0}});
  return "s1";
}

}  // namespace

TEST(TcpToken, TheRightSecretIsServedAndLearnsTheHostname) {
  pt::ServerThread srv(with_token("s3cret"));
  Results r;
  EXPECT_EQ(client_error(srv.port(), "s3cret", &r), "");
  EXPECT_EQ(r.server.hostname, hostname());  // an authenticated client may know whom it measured
  EXPECT_TRUE(r.client.warnings.empty());
}

TEST(TcpToken, AWrongOrMissingSecretIsRefusedAndLogged) {
  pt::ServerThread srv(with_token("s3cret"));
  const std::string wrong = client_error(srv.port(), "guess");
  EXPECT_NE(wrong.find("authentication failed"), std::string::npos) << wrong;
  const std::string missing = client_error(srv.port(), std::nullopt);  // the client knows it lacks one
  EXPECT_NE(missing.find("requires the shared secret"), std::string::npos) << missing;
  EXPECT_NE(missing.find("P2PSCOPE_TOKEN"), std::string::npos) << missing;
  EXPECT_TRUE(srv.log_has("authentication failed")) << srv.log();
  EXPECT_TRUE(srv.errors().empty()) << srv.errors_text();  // refused at the door: no session began
  EXPECT_EQ(client_error(srv.port(), "s3cret"), "");        // and the right one still gets in
}

// Parameters that would be refused if read (a string for a count) show whether the
// server read them: it must refuse for the secret first and say nothing about them.
TEST(TcpToken, TheSecretIsCheckedBeforeAnyParameterIsRead) {
  pt::ServerThread srv(with_token("s3cret"));
  nlohmann::json bad = to_json(one_round());
  bad["channels"] = "all of them";
  for (const nlohmann::json& proof : {nlohmann::json(""), nlohmann::json("00ff"), nlohmann::json(42)}) {
    pt::RawPeer peer(srv.port());
    const pt::Reply r = peer.propose(bad, proof);
    EXPECT_EQ(r.type, pt::kReject) << proof.dump() << ": " << r.body;
    EXPECT_EQ(r.reason().find("malformed"), std::string::npos) << proof.dump() << ": " << r.body;
    EXPECT_TRUE(r.reason().find("requires the shared secret") != std::string::npos ||
                r.reason().find("authentication failed") != std::string::npos)
        << proof.dump() << ": " << r.body;
  }
  EXPECT_TRUE(srv.log_has("requires the shared secret")) << srv.log();
  EXPECT_TRUE(srv.log_has("authentication failed")) << srv.log();
  const std::string log = srv.log();
  EXPECT_EQ(log.find("malformed"), std::string::npos) << log;
  EXPECT_TRUE(srv.errors().empty()) << srv.errors_text();
}

// A server that asks for the secret but cannot prove it holds it (an impostor on the
// port) gets no data connection from the client.
TEST(TcpToken, TheClientChecksTheServersProof) {
  bool data_came = false;
  FakeServer fake([&](Listener& l, Socket& ctrl, const nlohmann::json&) {
    send_frame(ctrl, FrameType::challenge, {{"nonce", "00"}, {"auth", "required"}});
    expect_frame(ctrl, FrameType::params, "fake");
    send_frame(ctrl, FrameType::accept, {{"session", "s1"}, {"proof", std::string(64, '0')}, {"timeout_s", 3.0}});
    try {
      l.accept(1.5);
      data_came = true;
    } catch (const Error&) {
    }
  });
  const std::string err = client_error(fake.l.port(), "s3cret");
  fake.t.join();
  EXPECT_NE(err.find("could not prove it holds the shared secret"), std::string::npos) << err;
  EXPECT_FALSE(data_came);
  EXPECT_EQ(fake.error, "");
}

// A malicious server's wrong JSON types in each frame the client reads: an Error
// naming what was wrong, never an internal error or a crash.
TEST(TcpHostileServer, WrongJsonTypesAreErrorsForTheClient) {
  struct Case {
    std::function<void(Listener&, Socket&, const nlohmann::json&)> script;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {[](Listener&, Socket& c, const nlohmann::json&) {
         send_frame(c, FrameType::challenge, {{"nonce", 5}, {"auth", "none"}});
       },
       "field 'nonce'"},
      {[](Listener&, Socket& c, const nlohmann::json&) {
         send_frame(c, FrameType::challenge, {{"nonce", "00"}, {"auth", {"x"}}});
       },
       "field 'auth'"},
      {[](Listener&, Socket& c, const nlohmann::json&) { send_frame(c, FrameType::reject, {{"reason", 42}}); },
       "no reason given"},
      {[](Listener&, Socket& c, const nlohmann::json&) {
         send_frame(c, FrameType::challenge, {{"nonce", "00"}, {"auth", "none"}});
         expect_frame(c, FrameType::params, "fake");
         send_frame(c, FrameType::accept, {{"session", 7}, {"proof", ""}, {"timeout_s", "soon"}});
       },
       "field 'session'"},
      // A whole round, then figures of the wrong types.
      {[](Listener& l, Socket& c, const nlohmann::json&) {
         const std::string session = let_in(c);
         Socket data = l.accept(5);
         expect_frame(data, FrameType::data_hello, "fake");
         send_frame(c, FrameType::done, {{"round", -1}});
         expect_frame(c, FrameType::go, "fake");
         ChunkHeader h;
         data.recv_all(&h, sizeof h);
         std::string payload(h.length, '\0');
         data.recv_all(payload.data(), payload.size());
         const Ack ack{h.round, 0};
         data.send_all(&ack, sizeof ack);
         send_frame(c, FrameType::done, {{"round", 0}});
         send_frame(c, FrameType::result, {{"side", 1}, {"hostname", {1, 2}}, {"channels", "x"}});
         std::this_thread::sleep_for(std::chrono::milliseconds(200));
       },
       "malformed results from the server"},
  };
  for (const auto& c : cases) {
    FakeServer fake(c.script);
    std::string err;
    try {
      ClientOptions co;
      co.port = fake.l.port();
      const Results r = run_client(co, one_round());
      err = r.failure.empty() ? "no error" : r.failure;
    } catch (const Error& e) {
      err = e.what();
    }
    fake.t.join();
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    EXPECT_EQ(err.find("internal error"), std::string::npos) << err;
    EXPECT_EQ(fake.error, "") << c.expect;
  }
}
