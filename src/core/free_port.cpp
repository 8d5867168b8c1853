// A free port of one of this host's addresses (p2pscope/free_port.hpp).
#include "p2pscope/free_port.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope {
namespace {

// `port` of ip (0: any) if it can be bound now, else 0.
int try_bind(const std::string& ip, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof a;
  const bool ok = ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr) == 1 &&
                  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

}  // namespace

int free_port_on(const std::string& ipv4) {
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  if (ephemeral_low - 1 - 10000 >= 1000) {
    static thread_local std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
    std::uniform_int_distribution<int> pick(10000, ephemeral_low - 1);
    for (int tries = 0; tries < 200; ++tries)
      if (const int p = try_bind(ipv4, pick(rng))) return p;
  }
  if (const int p = try_bind(ipv4, 0)) return p;
  throw Error(fmt::format("no free TCP port on {}: is it an IPv4 address of this host?", external_text(ipv4, 64)));
}

}  // namespace p2pscope
