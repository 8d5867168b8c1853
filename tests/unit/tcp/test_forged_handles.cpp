// A bench net server against a client that forges its plugin listen handles (issue 32,
// item 2) or nests its net_handles frame 100,000 deep (item 3): the server refuses the
// handle before its plugin sees it, names why, and serves the next client. The old server
// handed any handle to the plugin: it connected wherever the handle said (a port scan,
// 64 MiB sent to a third machine) and, with the reference plugin, used the descriptor
// number the handle carried.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"
#include "support/raw_peer.hpp"
#include "support/server_thread.hpp"
#include "support/tcp_session.hpp"
#include "unit/net/net_test_util.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using p2pscope::test::RawPeer;
using p2pscope::test::Reply;
using p2pscope::test::ServerThread;
namespace pt = p2pscope::test;

namespace {

constexpr std::uint32_t kNetHandles = 11;
constexpr std::uint64_t kMagic = 0x5032505352454631ull;  // the reference plugin's "P2PSREF1"

Params small() {
  // reverse: the server sends, so it connects to the client's handle.
  return {.size_bytes = 1u << 20, .chunk_bytes = 256u << 10, .iters = 1, .warmup = 0, .verify = true,
          .reverse = true, .timeout_s = 3};
}

std::string hex(const net::NetHandle& h) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned char c : h) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

net::NetHandle refnet_handle(const char* ip, std::uint16_t port, int stage, int fd) {
  net::NetHandle h{};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  std::memcpy(h.data(), &kMagic, 8);
  std::memcpy(h.data() + 8, &a, sizeof a);
  std::memcpy(h.data() + 24, &stage, 4);
  std::memcpy(h.data() + 28, &fd, 4);
  return h;
}

// NCCL's socket and IB layout: the handle begins with the address.
net::NetHandle socket_handle(const char* ip, std::uint16_t port) {
  net::NetHandle h{};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  std::memcpy(h.data(), &a, sizeof a);
  return h;
}

ServerOptions plugin_server(const std::shared_ptr<net::Plugin>& plugin) {
  ServerOptions so;
  so.local = pt::over(plugin);
  return so;
}

// A raw bench net client past the handshake: the server's handles read, `body` sent as ours.
Reply send_handles(std::uint16_t port, const std::string& transport, const std::string& body) {
  RawPeer peer(port);
  nlohmann::json p = to_json(small());
  p["transport"] = transport;
  p["channels"] = 1;  // one link: one handle
  p["sockets_per_channel"] = 1;
  const Reply r = peer.propose(p);
  EXPECT_EQ(r.type, pt::kAccept) << r.body;
  const Reply theirs = peer.read_frame();
  EXPECT_EQ(theirs.type, kNetHandles) << theirs.body;
  const std::string f = RawPeer::frame(kNetHandles, body);
  peer.send_bytes(f.data(), f.size());
  return peer.read_frame();
}

std::string legit(std::uint16_t port, const std::shared_ptr<net::Plugin>& plugin) {
  ClientOptions co;
  co.port = port;
  co.local = pt::over(plugin);
  try {
    return run_client(co, small()).failure;
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

TEST(BenchNetForgedHandles, AHandleToAThirdAddressOrALocalDescriptorIsRefusedByTheServer) {
  auto plugin = nettest::load_refnet();
  ServerThread srv(plugin_server(plugin));
  const std::string transport = pt::over(plugin).path->name();
  struct Case {
    net::NetHandle h;
    const char* why;
  };
  const Case cases[] = {
      {refnet_handle("192.0.2.1", 9, 0, 0), "192.0.2.1:9, neither the address the control connection came from"},
      {socket_handle("198.51.100.7", 22), "198.51.100.7:22, neither"},
      {refnet_handle("127.0.0.1", 9, 1, 1), "carries connection progress"},  // stdout, as the old handle's fd
  };
  std::size_t n = 0;
  for (const Case& c : cases) {
    send_handles(srv.port(), transport, nlohmann::json{{"handles", {hex(c.h)}}}.dump());
    ++n;
    ASSERT_TRUE(ServerThread::wait_for([&] { return srv.errors().size() == n; })) << c.why;
    EXPECT_NE(srv.errors().back().find(c.why), std::string::npos) << srv.errors().back();
  }
  EXPECT_EQ(legit(srv.port(), plugin), "");
}

TEST(BenchNetForgedHandles, ADeeplyNestedNetHandlesFrameIsRefusedAndTheServerServesOn) {
  auto plugin = nettest::load_refnet();
  ServerThread srv(plugin_server(plugin));
  const std::string transport = pt::over(plugin).path->name();
  const Reply r = send_handles(srv.port(), transport,
                               "{\"handles\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
  ASSERT_TRUE(ServerThread::wait_for([&] { return srv.errors().size() == 1; }));
  EXPECT_NE(srv.errors()[0].find("nested deeper than"), std::string::npos) << srv.errors()[0];
  EXPECT_EQ(legit(srv.port(), plugin), "");
}
