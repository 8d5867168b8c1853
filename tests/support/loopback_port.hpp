#pragma once
// A loopback port nobody listens on right now, for tests whose rank 0 (or server) must
// listen on a port the other side knows in advance.
//
// Picked at random below the kernel's ephemeral range (ip_local_port_range), not by
// binding port 0: a port the kernel handed out and took back is the next one it hands to
// any socket that binds 0 or connects, and under `ctest -j` another test's client took
// such a port in the gap before this test's server bound it ("connection refused" for 5 s
// in a CI-like run). Below that range only another test's random pick can collide.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>

namespace p2pscope::test {

// Binds a loopback TCP socket to `port` (0: any) and returns the port it got, 0 when the
// port is taken.
inline std::uint16_t try_bind_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  std::uint16_t got = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    socklen_t len = sizeof a;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) got = ntohs(a.sin_port);
  }
  ::close(fd);
  return got;
}

inline std::uint16_t free_port() {
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  const int lo = 10000, hi = ephemeral_low - 1;
  if (hi - lo >= 1000) {
    static thread_local std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
    std::uniform_int_distribution<int> pick(lo, hi);
    for (int tries = 0; tries < 200; ++tries)
      if (const std::uint16_t p = try_bind_loopback(static_cast<std::uint16_t>(pick(rng)))) return p;
  }
  return try_bind_loopback(0);  // no room below the ephemeral range: the kernel's choice
}

}  // namespace p2pscope::test
