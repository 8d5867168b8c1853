#include "transport/tcp/listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"

namespace p2pscope::tcp {

Listener::Listener(const std::vector<std::string>& addrs, std::uint16_t port) : port_(port) {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw_errno("pipe2");
  for (const auto& addr : addrs) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) throw_errno("socket()");
    const int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = parse_ipv4(addr, "--bind");
    if (::bind(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
      throw Error("listen on " + addr + ":" + std::to_string(port_) + ": bind failed: " + errno_text(errno) +
                  (errno == EADDRINUSE ? " (another server on this port? pick --port)" : ""));
    if (::listen(s.fd(), 1024) != 0) throw_errno("listen on " + addr);
    fcntl(s.fd(), F_SETFL, fcntl(s.fd(), F_GETFL) | O_NONBLOCK);  // accept_on never blocks
    if (port_ == 0) {
      socklen_t len = sizeof a;
      getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a), &len);
      port_ = ntohs(a.sin_port);
    }
    s.set_label("listener " + addr + ":" + std::to_string(port_));
    socks_.push_back(std::move(s));
  }
}

Listener::~Listener() {
  for (int fd : wake_)
    if (fd >= 0) ::close(fd);
}

void Listener::stop() noexcept {
  const char c = 1;
  [[maybe_unused]] ssize_t r = ::write(wake_[1], &c, 1);
}

std::vector<int> Listener::fds() const {
  std::vector<int> out;
  for (const auto& s : socks_) out.push_back(s.fd());
  return out;
}

Socket Listener::accept_on(int listen_fd, bool* exhausted) {
  if (exhausted) *exhausted = false;
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) return Socket(fd);
  if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED || errno == EWOULDBLOCK) return Socket();
  if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
    if (exhausted) *exhausted = true;
    return Socket();  // out of descriptors for now: the connection waits in the backlog
  }
  throw_errno("accept");
}

Socket Listener::accept(double timeout_s) {
  std::vector<pollfd> fds;
  for (const auto& s : socks_) fds.push_back({s.fd(), POLLIN, 0});
  fds.push_back({wake_[0], POLLIN, 0});
  const int ms = timeout_s > 0 ? static_cast<int>(std::ceil(timeout_s * 1000)) : -1;
  for (;;) {
    const int rc = ::poll(fds.data(), fds.size(), ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) throw_errno("poll on listeners");
    if (rc == 0)
      throw NoClient("no connection on port " + std::to_string(port_) + " within " + std::to_string(timeout_s) +
                     " s (client gone, or its address unreachable?)");
    if (fds.back().revents) throw NoClient("server stopped");
    for (std::size_t i = 0; i + 1 < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      const int fd = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) continue;
        throw_errno("accept on " + socks_[i].label());
      }
      return Socket(fd);
    }
  }
}

}  // namespace p2pscope::tcp
