// The reference plugin's connect handle comes from the peer (issue 32, item 2): a forged
// one must not name a descriptor of this process nor an address no listener has. The old
// handle carried the connecting socket's fd: a peer writing stage 1 and fd N into it
// made connect() send its hello on fd N, use it as a comm and close it (stdout, stderr).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "net_test_util.hpp"

using namespace nettest;

namespace {

constexpr std::uint64_t kMagic = 0x5032505352454631ull;  // "P2PSREF1"

// A handle in the reference plugin's layout: magic, sockaddr_in, then whatever follows
// (the old layout's stage at byte 24 and fd at byte 28).
NetHandle forged(const sockaddr_in& a, int stage, int fd) {
  NetHandle h{};
  std::memcpy(h.data(), &kMagic, 8);
  std::memcpy(h.data() + 8, &a, sizeof a);
  std::memcpy(h.data() + 24, &stage, 4);
  std::memcpy(h.data() + 28, &fd, 4);
  return h;
}

sockaddr_in addr_of(const NetHandle& h) {
  sockaddr_in a;
  std::memcpy(&a, h.data() + 8, sizeof a);
  return a;
}

std::string connect_error(const std::shared_ptr<Plugin>& p, const NetHandle& h) {
  try {
    p->connect(0, h, in_s(1));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(NetRefPluginForged, AHandleNamingALocalDescriptorIsRefusedAndTheDescriptorUntouched) {
  auto plugin = load_refnet();
  ListenComm l = plugin->listen(0);  // a real listener: the forged handle names its address
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  for (int stage : {1, 2, -1}) {
    const std::string err = connect_error(plugin, forged(addr_of(l.handle()), stage, sv[0]));
    EXPECT_NE(err, "") << "stage " << stage << ": a forged handle in progress was connected";
  }
  // Nothing was sent on the named descriptor, and it is still open.
  char c;
  EXPECT_EQ(::recv(sv[1], &c, 1, MSG_DONTWAIT), -1) << "the plugin wrote its hello on a descriptor the peer named";
  EXPECT_NE(::fcntl(sv[0], F_GETFD), -1) << "the plugin closed a descriptor the peer named";
  ::close(sv[0]);
  ::close(sv[1]);
  // The genuine handle still connects.
  SendComm s = plugin->connect(0, l.handle(), in_s(5));
  RecvComm r = plugin->accept(l, in_s(5));
  EXPECT_TRUE(s);
  EXPECT_TRUE(r);
}

TEST(NetRefPluginForged, AHandleNamingNoListenerAddressIsRefusedBeforeAnyConnect) {
  auto plugin = load_refnet();
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = htons(9);
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  EXPECT_NE(connect_error(plugin, forged(any, 0, 0)), "");
  sockaddr_in v6{};
  v6.sin_family = AF_INET6;
  EXPECT_NE(connect_error(plugin, forged(v6, 0, 0)), "");
  sockaddr_in no_port{};
  no_port.sin_family = AF_INET;
  no_port.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(connect_error(plugin, forged(no_port, 0, 0)), "");
  // The cases above fail in connect() even without the check (nothing listens on port 9
  // or 0, no IPv6 address fits an IPv4 socket). The wildcard with the port of a listener
  // bound to it does not: to connect() 0.0.0.0 is this host, and the old plugin connected.
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_in wild{};
  wild.sin_family = AF_INET;
  wild.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof wild;
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&wild), sizeof wild), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  ASSERT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr*>(&wild), &len), 0);
  EXPECT_NE(connect_error(plugin, forged(wild, 0, 0)), "") << "a handle naming the wildcard address was connected";
  ::close(lfd);
}
