// free_port_on: a port below the ephemeral range that can be bound now; a clear error
// for an address that is not this host's.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "p2pscope/error.hpp"
#include "p2pscope/free_port.hpp"

namespace p2pscope {
namespace {

TEST(FreePort, APortBelowTheEphemeralRangeThatCanBeBoundNow) {
  int low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  for (int i = 0; i < 20; ++i) {
    const int p = free_port_on("127.0.0.1");
    ASSERT_GT(p, 0);
    if (low - 1 - 10000 >= 1000) {
      EXPECT_LT(p, low) << "a port the kernel hands out to connections";
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(p));
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << p;
    ::close(fd);
  }
}

TEST(FreePort, AnAddressNotOfThisHostIsAClearError) {
  try {
    (void)free_port_on("203.0.113.7");  // TEST-NET-3: no host has it
    FAIL() << "a port of another host's address";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is it an IPv4 address of this host?"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)free_port_on("not-an-address"), Error);
}

}  // namespace
}  // namespace p2pscope
