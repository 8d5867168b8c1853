// A bench net server against a client that forges its plugin listen handles (issue 32,
// item 2) or nests its net_handles frame 100,000 deep (item 3): the server refuses the
// handle before its plugin sees it, names why, and serves the next client. The old server
// handed any handle to the plugin: it connected wherever the handle said (a port scan,
// 64 MiB sent to a third machine) and, with the reference plugin, used the descriptor
// number the handle carried.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "p2pscope/auth.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"
#include "support/raw_peer.hpp"
#include "support/server_thread.hpp"
#include "support/tcp_session.hpp"
#include "transport/session/protocol.hpp"
#include "transport/tcp/listener.hpp"
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

nlohmann::json one_link(const std::string& transport) {
  nlohmann::json p = to_json(small());
  p["transport"] = transport;
  p["channels"] = 1;  // one link: one handle
  p["sockets_per_channel"] = 1;
  return p;
}

// A raw bench net client past the handshake: the server's handles read, `body` sent as ours.
Reply send_handles(std::uint16_t port, const std::string& transport, const std::string& body,
                   const nlohmann::json& extra = nlohmann::json::object()) {
  RawPeer peer(port);
  nlohmann::json p = one_link(transport);
  p.update(extra);
  const Reply r = peer.propose(p);
  EXPECT_EQ(r.type, pt::kAccept) << r.body;
  const Reply theirs = peer.read_frame();
  EXPECT_EQ(theirs.type, kNetHandles) << theirs.body;
  const std::string f = RawPeer::frame(kNetHandles, body);
  peer.send_bytes(f.data(), f.size());
  return peer.read_frame();
}

// The same past a token handshake, made by hand as the library's client makes it: the
// proof covers the parameters, `net_addresses` included.
void send_handles_with_token(RawPeer& peer, std::uint16_t port, const std::string& token, const nlohmann::json& p,
                             const net::NetHandle& h) {
  const std::string nonce = "00112233445566778899aabbccddeeff";
  peer.send_frame(pt::kHello, {{"nonce", nonce}});
  const Reply c = peer.read_frame();
  ASSERT_EQ(c.type, pt::kChallenge) << c.body;
  const std::string server_nonce = c.json().value("nonce", "");
  const std::string binding = session::client_binding("127.0.0.1:" + std::to_string(port), p);
  peer.send_frame(pt::kParams, {{"proof", auth::proof(token, "client", nonce, server_nonce + binding)}, {"params", p}});
  const Reply a = peer.read_frame();
  ASSERT_EQ(a.type, pt::kAccept) << a.body;
  ASSERT_EQ(peer.read_frame().type, kNetHandles);
  peer.send_frame(kNetHandles, {{"handles", {hex(h)}}});
}

// A listener on another loopback address (127.0.0.0/8 is this host's, on lo, the plugin's
// device): a host on the server's own subnet that the client never named as its own.
class SideListener {
 public:
  explicit SideListener(const char* ip) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, ip, &a.sin_addr);
    socklen_t len = sizeof a;
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 8) == 0 &&
          ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    port_ = ntohs(a.sin_port);
  }
  ~SideListener() { ::close(fd_); }
  SideListener(const SideListener&) = delete;
  SideListener& operator=(const SideListener&) = delete;
  bool ok() const { return ok_; }
  std::uint16_t port() const { return port_; }
  // True when a connection came within wait_ms.
  bool reached(int wait_ms) const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, wait_ms) == 1;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  std::uint16_t port_ = 0;
};

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

// Issue 43 item 3: the old check let a handle name any host on the subnet of one of the
// server's plugin devices; across namespaces that reached a host on the server's internal
// subnet that the stranger itself could not reach. Now only the control connection's
// address, or one a peer that proved the token vouched for; a list from a stranger is
// not read.
TEST(BenchNetForgedHandles, AHandleToAnotherHostOfTheServersSubnetIsRefusedThoughAStrangerVouchesForIt) {
  auto plugin = nettest::load_refnet();
  ServerThread srv(plugin_server(plugin));
  const SideListener side("127.0.0.2");
  ASSERT_TRUE(side.ok());
  const std::string transport = pt::over(plugin).path->name();
  send_handles(srv.port(), transport, nlohmann::json{{"handles", {hex(refnet_handle("127.0.0.2", side.port(), 0, 0))}}}.dump(),
               {{"net_addresses", {"127.0.0.2"}}});
  const bool refused = ServerThread::wait_for([&] { return srv.errors().size() == 1; });
  EXPECT_FALSE(side.reached(0)) << "the server connected to 127.0.0.2, which its client did not name as its own";
  ASSERT_TRUE(refused) << "no refusal within 5 s";
  const std::string err = srv.errors()[0];
  EXPECT_NE(err.find("127.0.0.2:" + std::to_string(side.port()) + ", neither the address the control connection came "
                     "from (127.0.0.1)"), std::string::npos) << err;
  EXPECT_NE(err.find("only from a peer that proved P2PSCOPE_TOKEN"), std::string::npos) << err;
  EXPECT_EQ(legit(srv.port(), plugin), "");
}

// With the token, a client's other addresses are its own to name: the server connects to
// an address the client vouched for in its (proven) parameters, and to no other.
TEST(BenchNetForgedHandles, AnAddressTheAuthenticatedClientVouchedForIsConnectedToAndNoOther) {
  auto plugin = nettest::load_refnet();
  ServerOptions so = plugin_server(plugin);
  so.token = "forty-two";
  ServerThread srv(so);
  const SideListener side("127.0.0.2");
  ASSERT_TRUE(side.ok());
  const std::string transport = pt::over(plugin).path->name();
  {
    RawPeer peer(srv.port());
    nlohmann::json p = one_link(transport);
    p["net_addresses"] = {"127.0.0.3"};
    send_handles_with_token(peer, srv.port(), *so.token, p, refnet_handle("127.0.0.2", side.port(), 0, 0));
    ASSERT_TRUE(ServerThread::wait_for([&] { return srv.errors().size() == 1; })) << srv.log();
    EXPECT_NE(srv.errors()[0].find("nor one of the 1 the peer vouched for"), std::string::npos) << srv.errors()[0];
    EXPECT_FALSE(side.reached(0));
  }
  RawPeer peer(srv.port());
  nlohmann::json p = one_link(transport);
  p["net_addresses"] = {"127.0.0.2"};
  send_handles_with_token(peer, srv.port(), *so.token, p, refnet_handle("127.0.0.2", side.port(), 0, 0));
  EXPECT_TRUE(side.reached(5000)) << "the server did not connect to the address its authenticated client vouched for";
}

// The vouched list is bounded and typed like every other field of the parameters.
TEST(BenchNetForgedHandles, AMalformedListOfAddressesIsRefusedByName) {
  auto plugin = nettest::load_refnet();
  ServerOptions so = plugin_server(plugin);
  so.token = "forty-two";
  ServerThread srv(so);
  const std::string transport = pt::over(plugin).path->name();
  for (const nlohmann::json& bad : {nlohmann::json("127.0.0.1"), nlohmann::json({1, 2}), nlohmann::json({"10.0.0.300"}),
                                    nlohmann::json(std::vector<std::string>(65, "10.0.0.1"))}) {
    RawPeer peer(srv.port());
    nlohmann::json p = one_link(transport);
    p["net_addresses"] = bad;
    const std::string nonce = "00112233445566778899aabbccddeeff";
    peer.send_frame(pt::kHello, {{"nonce", nonce}});
    const std::string server_nonce = peer.read_frame().json().value("nonce", "");
    const std::string binding = session::client_binding("127.0.0.1:" + std::to_string(srv.port()), p);
    peer.send_frame(pt::kParams, {{"proof", auth::proof(*so.token, "client", nonce, server_nonce + binding)}, {"params", p}});
    const Reply r = peer.read_frame();
    EXPECT_EQ(r.type, pt::kReject) << bad.dump();
    EXPECT_TRUE(r.reason().find("net_addresses") != std::string::npos ||
                r.reason().find("vouched address") != std::string::npos) << r.reason();
  }
}

// The other way: a malicious server's handle naming a host on the client's own subnet
// (and a list of "its" addresses, unauthenticated, that the client must not read). The
// old client connected where the server said, as the old server did.
TEST(BenchNetForgedHandles, AClientRefusesAServersHandleToAnotherHostOfItsSubnet) {
  auto plugin = nettest::load_refnet();
  const SideListener side("127.0.0.2");
  ASSERT_TRUE(side.ok());
  Listener l({"127.0.0.1"}, 0);
  std::thread fake([&] {
    try {
      Socket ctrl = l.accept(5);
      session::expect_frame(ctrl, session::FrameType::hello, "fake");
      session::send_frame(ctrl, session::FrameType::challenge, {{"nonce", "00"}, {"auth", "none"}});
      session::expect_frame(ctrl, session::FrameType::params, "fake");
      session::send_frame(ctrl, session::FrameType::accept,
                          {{"session", "s1"}, {"proof", ""}, {"timeout_s", 3.0}, {"net_addresses", {"127.0.0.2"}}});
      session::expect_frame(ctrl, session::FrameType::net_handles, "fake");
      session::send_frame(ctrl, session::FrameType::net_handles,
                          {{"handles", {hex(refnet_handle("127.0.0.2", side.port(), 0, 0))}}});
      char b;
      ::recv(ctrl.fd(), &b, 1, 0);  // until the client goes
    } catch (const std::exception&) {
    }
  });
  ClientOptions co;
  co.port = l.port();
  co.local = pt::over(plugin);
  Params p = small();
  p.reverse = false;  // the client sends: it connects to the server's handle
  std::string err;
  try {
    err = run_client(co, p).failure;
  } catch (const Error& e) {
    err = e.what();
  }
  fake.join();
  EXPECT_FALSE(side.reached(0)) << "the client connected to 127.0.0.2, which its server did not prove its own";
  EXPECT_NE(err.find("127.0.0.2:" + std::to_string(side.port()) + ", neither the address the control connection came "
                     "from (127.0.0.1)"), std::string::npos) << err;
}
