// One frame that kills (issue 32, items 3 and 4): JSON nested 100,000 deep, sent where
// a frame of ours is read, on either side. The old parser built it whole and the first
// copy of it overflowed the stack (SIGSEGV). Now the parser refuses it by its depth
// limit: the server tells the peer why and serves the next client; the client ends
// with an Error naming the limit.
#include <gtest/gtest.h>

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
using p2pscope::test::RawPeer;
using p2pscope::test::Reply;
using p2pscope::test::ServerThread;
namespace pt = p2pscope::test;

namespace {

// {"round": [[[...]]]} with `depth` arrays: 2 bytes a level.
std::string deep_body(std::size_t depth, const std::string& key = "round") {
  return "{\"" + key + "\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

Params small() {
  return {.size_bytes = 1u << 20, .chunk_bytes = 256u << 10, .iters = 1, .warmup = 0, .verify = true, .timeout_s = 4};
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

std::string reply_text(const Reply& r) {
  return "type " + std::to_string(r.type) + (r.closed ? " (closed)" : "") + ": " + r.body.substr(0, 300);
}

// A control connection past the handshake, its data connection open, the server's
// buffers ready: the next frame the server reads is the client's `go`.
struct InSession {
  RawPeer ctrl, data;
  explicit InSession(std::uint16_t port) : ctrl(port), data(port) {
    nlohmann::json p = to_json(small());
    p["verify"] = false;
    p["channels"] = 1;
    const Reply r = ctrl.propose(p);
    EXPECT_EQ(r.type, pt::kAccept) << reply_text(r);
    const std::string session = r.json().value("session", std::string());
    data.send_frame(pt::kDataHello, {{"session", session}, {"c2s", true}, {"gpu_slot", 0}, {"channel", 0},
                                     {"socket", 0}});
    EXPECT_EQ(ctrl.read_frame().type, pt::kDone);
  }
};

}  // namespace

TEST(TcpHostileFrames, ADeeplyNestedGoFrameIsRefusedAndTheServerServesTheNextClient) {
  ServerThread srv;
  std::size_t sessions = 0;
  for (std::size_t depth : {100000u, 8u}) {  // far past the limit, and just past it (8 arrays in an object)
    InSession s(srv.port());
    const std::string f = RawPeer::frame(pt::kGo, deep_body(depth));
    ASSERT_TRUE(s.ctrl.send_bytes(f.data(), f.size()));
    const Reply r = s.ctrl.read_frame();
    EXPECT_EQ(r.type, pt::kError) << depth << ": " << reply_text(r);
    EXPECT_NE(r.reason().find("nested deeper than 8 levels"), std::string::npos) << depth << ": " << reply_text(r);
    ++sessions;  // the failed session ends before the next client comes (it would be told "busy")
    ASSERT_TRUE(ServerThread::wait_for([&] { return srv.results().size() == sessions; })) << srv.errors_text();
  }
  {  // 7 arrays in an object: within the limit, and read as a wrong round
    InSession s(srv.port());
    const std::string f = RawPeer::frame(pt::kGo, deep_body(7));
    ASSERT_TRUE(s.ctrl.send_bytes(f.data(), f.size()));
    const Reply r = s.ctrl.read_frame();
    EXPECT_NE(r.reason().find("round mismatch"), std::string::npos) << reply_text(r);
    ASSERT_TRUE(ServerThread::wait_for([&] { return srv.results().size() == 3; })) << srv.errors_text();
  }
  EXPECT_EQ(legit_error(srv.port()), "");
  EXPECT_TRUE(ServerThread::wait_for([&] { return srv.results().size() == 4; }));
}

// Before any session: a hello of 60 KiB (under the gate's 64 KiB) nested 30,000 deep.
TEST(TcpHostileFrames, ADeeplyNestedHelloIsRefusedAtTheDoorNamingTheLimit) {
  ServerThread srv;
  RawPeer peer(srv.port());
  const std::string body = "{\"nonce\":\"0123456789abcdef\",\"x\":" + std::string(30000, '[') +
                           std::string(30000, ']') + "}";
  ASSERT_LT(body.size(), 64u << 10);
  const std::string f = RawPeer::frame(pt::kHello, body);
  ASSERT_TRUE(peer.send_bytes(f.data(), f.size()));
  const Reply r = peer.read_frame();
  EXPECT_EQ(r.type, pt::kReject) << reply_text(r);
  EXPECT_NE(r.reason().find("nested deeper than 8 levels"), std::string::npos) << reply_text(r);
  EXPECT_TRUE(srv.log_has("nested deeper than")) << srv.log();
  EXPECT_EQ(legit_error(srv.port()), "");
}

// Too many values, and a string over the limit, in frames of the session.
TEST(TcpHostileFrames, WideFramesAndLongStringsAreRefusedByTheirLimits) {
  ServerThread srv;
  {
    InSession s(srv.port());
    std::string wide = "{\"round\":[";
    for (int i = 0; i < 40000; ++i) wide += "0,";
    wide += "0]}";
    const std::string f = RawPeer::frame(pt::kGo, wide);
    ASSERT_TRUE(s.ctrl.send_bytes(f.data(), f.size()));
    const Reply r = s.ctrl.read_frame();
    EXPECT_NE(r.reason().find("values and keys"), std::string::npos) << reply_text(r);
    ASSERT_TRUE(ServerThread::wait_for([&] { return srv.results().size() == 1; })) << srv.errors_text();
  }
  {
    InSession s(srv.port());
    const std::string f = RawPeer::frame(pt::kGo, "{\"round\":\"" + std::string(70000, 'a') + "\"}");
    ASSERT_TRUE(s.ctrl.send_bytes(f.data(), f.size()));
    const Reply r = s.ctrl.read_frame();
    EXPECT_NE(r.reason().find("a string of 70000 bytes"), std::string::npos) << reply_text(r);
    ASSERT_TRUE(ServerThread::wait_for([&] { return srv.results().size() == 2; })) << srv.errors_text();
  }
  EXPECT_EQ(legit_error(srv.port()), "");
}

// A malicious server: its very first frame (the challenge, before any authentication)
// or its results nested 100,000 deep. The client ends with an Error, not SIGSEGV.
TEST(TcpHostileFrames, AClientRefusesADeeplyNestedFrameFromAServer) {
  for (std::uint32_t type : {pt::kChallenge, pt::kAccept}) {
    Listener l({"127.0.0.1"}, 0);
    std::thread fake([&] {
      try {
        Socket ctrl = l.accept(5);
        expect_frame(ctrl, FrameType::hello, "fake");
        if (type == pt::kAccept) {
          send_frame(ctrl, FrameType::challenge, {{"nonce", "00"}, {"auth", "none"}});
          expect_frame(ctrl, FrameType::params, "fake");
        }
        const std::string f = RawPeer::frame(type, deep_body(100000, "session"));
        ctrl.send_two(f.data(), f.size(), nullptr, 0);
        char c;
        ctrl.set_timeout(5);
        ctrl.recv_all(&c, 1);  // until the client hangs up
      } catch (const std::exception&) {
      }
    });
    ClientOptions co;
    co.port = l.port();
    std::string err;
    try {
      run_client(co, small());
    } catch (const Error& e) {
      err = e.what();
    }
    fake.join();
    EXPECT_NE(err.find("nested deeper than 8 levels"), std::string::npos) << type << ": " << err;
  }
}
