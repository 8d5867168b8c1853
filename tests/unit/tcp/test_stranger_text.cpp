// Strangers' text is data (issue 43): what a client or a server sends (a frame that is
// no JSON, a reason cut inside a character, escape sequences) reaches our results and
// logs only as valid UTF-8 holding nothing a terminal acts on. On the old code nlohmann's
// parse error quoted a stranger's bytes raw and a reason was cut at 2000 bytes inside a
// character: dump() of the results threw type_error 316, which ended a --format json
// server, and cost a --format json client the rounds it had measured.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "support/hooked_path.hpp"
#include "support/raw_peer.hpp"
#include "support/run_binary.hpp"
#include "support/server_thread.hpp"
#include "transport/session/channel.hpp"
#include "transport/session/protocol.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
namespace pt = p2pscope::test;

namespace {

Params small() { return {.size_bytes = 1u << 20, .chunk_bytes = 256u << 10, .iters = 1, .warmup = 0, .timeout_s = 4}; }

// A reason of 1000 euro signs (3000 bytes of valid UTF-8): a cut at 500 or 2000 bytes
// falls inside a character.
std::string euros() {
  std::string s;
  for (int i = 0; i < 1000; ++i) s += "\xE2\x82\xAC";
  return s;
}

// A body that is not JSON: an object whose key is a byte no UTF-8 has. With the header,
// the 21-byte frame of the issue; nlohmann's parse error quotes the byte raw.
const std::string kRawBody = "{\"\xFF\"}";

// Text a printer can take: valid UTF-8 (nlohmann's strict dump() does not throw on it)
// and no ESC or other C0 byte anywhere.
::testing::AssertionResult safe_text(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception& e) {
    return ::testing::AssertionFailure() << "not valid UTF-8 (" << e.what() << "): " << s.substr(0, 200);
  }
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20)
      return ::testing::AssertionFailure() << "a control byte in: " << s.substr(0, 200);
  return ::testing::AssertionSuccess();
}

// Lines of output as one line, for safe_text (their own newlines are ours).
std::string joined(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '\n'), s.end());
  return s;
}

// What a printer is handed: the results as JSON under the strict dump, and as text.
::testing::AssertionResult prints(const Results& r) {
  try {
    const std::string j = to_json(r).dump();  // nlohmann's default handler: throws on invalid UTF-8
    const std::string t = format_text(r);
    if (j.find('\x1B') != std::string::npos || t.find('\x1B') != std::string::npos)
      return ::testing::AssertionFailure() << "an ESC is printed";
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "printing threw: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

std::string legit_error(std::uint16_t port) {
  ClientOptions co;
  co.port = port;
  try {
    return run_client(co, small()).failure;
  } catch (const Error& e) {
    return e.what();
  }
}

// Past the handshake with its data connection open: the server waits for the first go.
struct InSession {
  pt::RawPeer ctrl, data;
  explicit InSession(std::uint16_t port) : ctrl(port), data(port) {
    const pt::Reply r = ctrl.propose(to_json(small()));
    EXPECT_EQ(r.type, pt::kAccept) << r.body.substr(0, 300);
    data.send_frame(pt::kDataHello, {{"session", r.json().value("session", std::string())},
                                     {"c2s", true},
                                     {"gpu_slot", 0},
                                     {"channel", 0},
                                     {"socket", 0}});
    EXPECT_EQ(ctrl.read_frame().type, pt::kDone);
  }
};

}  // namespace

// (a) a bench tcp server: a client's frame of raw bytes where its go belongs, a reason cut
// inside a character, an escape sequence: each fails that session only, the client is
// told why in valid JSON, the server's results print, and the next client is served.
TEST(TcpStrangerText, AServerFailsTheSessionOfInvalidTextAndItsResultsStillPrint) {
  pt::ServerThread srv;
  struct Case {
    const char* what;
    std::uint32_t type;
    std::string body;
    const char* named;  // in the server's failure
  };
  const Case cases[] = {
      {"a 21-byte frame of raw bytes", pt::kGo, kRawBody, "not JSON"},
      {"a reason cut inside a character", pt::kError, nlohmann::json({{"reason", euros()}}).dump(), "peer failed"},
      {"an escape sequence", pt::kError, R"({"reason":"\u001b[2J\u001b]0;owned\u0007\u009b31m"})", "[2J"},
  };
  std::size_t sessions = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    InSession s(srv.port());
    const std::string f = pt::RawPeer::frame(c.type, c.body);
    ASSERT_TRUE(s.ctrl.send_bytes(f.data(), f.size()));
    if (c.type == pt::kGo) {
      EXPECT_EQ(f.size(), 21u);
      // The old server's reply threw in dump() and never went: the client read its result.
      const pt::Reply r = s.ctrl.read_frame();
      EXPECT_EQ(r.type, pt::kError) << r.type << ": " << r.body.substr(0, 300);
      EXPECT_NE(r.reason().find("not JSON"), std::string::npos) << r.body.substr(0, 300);
      EXPECT_TRUE(safe_text(r.reason()));
    }
    ++sessions;
    ASSERT_TRUE(pt::ServerThread::wait_for([&] { return srv.results().size() == sessions; })) << srv.errors_text();
    const Results r = srv.results().back();
    EXPECT_NE(r.failure.find(c.named), std::string::npos) << r.failure;
    EXPECT_TRUE(safe_text(r.failure));
    EXPECT_TRUE(prints(r));
  }
  EXPECT_EQ(legit_error(srv.port()), "");
  EXPECT_TRUE(pt::ServerThread::wait_for([&] { return srv.results().size() == sessions + 1; }));
  EXPECT_TRUE(prints(srv.results().back()));
}

// Before any session: a hello of raw bytes is refused in valid JSON (the old reject threw
// in dump() and was never sent) and logged as text (the old log line held the raw byte);
// parameters naming a memory kind of escape sequences are refused, and the refusal the
// command prints on stderr holds no ESC (the old one cleared the terminal).
TEST(TcpStrangerText, AStrangersHelloAndParametersAreRefusedAsText) {
  pt::ServerThread srv;
  {
    pt::RawPeer peer(srv.port());
    const std::string f = pt::RawPeer::frame(pt::kHello, kRawBody);
    ASSERT_TRUE(peer.send_bytes(f.data(), f.size()));
    const pt::Reply r = peer.read_frame();
    EXPECT_EQ(r.type, pt::kReject) << r.type;
    EXPECT_NE(r.reason().find("not JSON"), std::string::npos) << r.body.substr(0, 300);
    ASSERT_TRUE(srv.log_has("not JSON")) << srv.log();
    EXPECT_TRUE(safe_text(joined(srv.log())));
  }
  {
    pt::RawPeer peer(srv.port());
    nlohmann::json p = to_json(small());
    p["mem"] = "\x1B[2J\x1B]0;owned\x07";
    const pt::Reply r = peer.propose(p);
    EXPECT_EQ(r.type, pt::kReject) << r.type;
    EXPECT_NE(r.reason().find("[2J"), std::string::npos) << r.body.substr(0, 300);
    EXPECT_TRUE(safe_text(r.reason()));
    ASSERT_TRUE(pt::ServerThread::wait_for([&] { return !srv.errors().empty(); }));
    EXPECT_NE(srv.errors().back().find("neither host nor gpu"), std::string::npos) << srv.errors_text();
    EXPECT_TRUE(safe_text(srv.errors().back()));
  }
  EXPECT_EQ(legit_error(srv.port()), "");
}

namespace {

// A malicious server: a real one whose data path, after round 1's workers, sends the
// client an error frame of `body` (raw bytes, whatever they are) on the control connection.
pt::ServerThread lying_server(const std::string& body) {
  ServerOptions so;
  so.local.path =
      std::make_shared<pt::HookedPath>(make_socket_path(), nullptr, [body](session::Session& s, std::uint32_t round) {
        if (round != 1 || !s.ctrl) return;
        const std::string f = pt::RawPeer::frame(pt::kError, body);
        s.ctrl->send_two(f.data(), f.size(), nullptr, 0);
      });
  return pt::ServerThread(so);
}

const std::string kCutReason = nlohmann::json({{"reason", euros()}}).dump();
const std::string kRawReason = "{\"reason\":\"\xC3(\"}";  // a lead byte, then no continuation

}  // namespace

// (b) the client: a server's reason of raw bytes, or cut inside a character by the
// client's own limit, ends the session after round 0; round 0's figures are kept and
// print (on the old code to_json(r).dump() threw: a --format json client printed nothing).
TEST(TcpStrangerText, AClientKeepsItsRoundsWhateverTheServersReasonHolds) {
  for (const std::string& body : {kRawReason, kCutReason}) {
    SCOPED_TRACE(body.substr(0, 40));
    pt::ServerThread srv = lying_server(body);
    ClientOptions co;
    co.port = srv.port();
    Params p = small();
    p.iters = 3;
    const Results r = run_client(co, p);
    EXPECT_FALSE(r.failure.empty());
    EXPECT_EQ(r.rounds_completed, 1u) << r.failure;
    EXPECT_EQ(r.client.round_tx_bytes_per_s.size(), 1u) << r.failure;
    EXPECT_GT(r.client.tx_bytes_per_s, 0) << r.failure;
    EXPECT_TRUE(safe_text(r.failure));
    EXPECT_TRUE(prints(r));
  }
}

// The command itself: `bench tcp --client --format json` against that server prints a
// JSON document holding round 0 and exits 1 (the old binary died in dump(), no JSON).
TEST(TcpStrangerText, AJsonClientPrintsItsRoundsWhenTheServersReasonIsCut) {
  pt::ServerThread srv = lying_server(kCutReason);
  const pt::SplitResult r =
      pt::run_binary_split("bench tcp --client 127.0.0.1 --port " + std::to_string(srv.port()) +
                           " --format json --size 1M --chunk 256K --iters 3 --warmup 0 --timeout 4");
  EXPECT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << "stdout is not one JSON document: " << r.out.substr(0, 300) << "\nstderr: " << r.err;
  EXPECT_EQ(j["client"]["round_tx_bytes_per_s"].size(), 1u) << r.out.substr(0, 300);
  EXPECT_EQ(j["failure"]["rounds_completed"], 1) << r.out.substr(0, 300);
  EXPECT_TRUE(safe_text(j["failure"]["reason"].get<std::string>()));
  EXPECT_TRUE(safe_text(joined(r.err)));
}
