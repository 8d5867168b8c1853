#pragma once
// Listening sockets on one or more local addresses (one per NIC), all on one port.
#include <cstdint>
#include <string>
#include <vector>

#include "transport/tcp/socket.hpp"

namespace p2pscope::tcp {

class Listener {
 public:
  // Binds every address on `port` (0: the kernel picks one for the first address and
  // the rest reuse it). Throws Error naming the address that failed.
  Listener(const std::vector<std::string>& addrs, std::uint16_t port);
  std::uint16_t port() const { return port_; }
  // Waits at most timeout_s (<= 0: forever) for a connection on any address.
  // Throws Error on timeout or when stop() was called.
  Socket accept(double timeout_s);
  void stop() noexcept;  // wakes accept(); thread-safe
  // For a caller's own poll loop: the listening sockets, and accept on one that polled
  // readable (an invalid Socket when the connection went away meanwhile).
  std::vector<int> fds() const;
  // *exhausted (when given) says whether it failed for want of descriptors or memory.
  Socket accept_on(int fd, bool* exhausted = nullptr);

 private:
  std::vector<Socket> socks_;
  std::uint16_t port_ = 0;
  int wake_[2] = {-1, -1};  // pipe: stop() writes to wake a poll

 public:
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
};

}  // namespace p2pscope::tcp
