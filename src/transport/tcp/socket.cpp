#include "transport/tcp/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::tcp {
namespace {

std::string sockaddr_text(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

sockaddr_in make_addr(const std::string& ip, std::uint16_t port, const std::string& what) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = parse_ipv4(ip, what);
  return a;
}

IoError io_error(const std::string& label, const char* op, int err) {
  if (err == EAGAIN || err == EWOULDBLOCK)
    return IoError(label + ": " + op + " timed out (peer silent past --timeout; link down or peer stalled?)",
                   IoCause::timeout);
  return IoError(label + ": " + op + " failed: " + errno_text(err), cause_of_errno(err));
}

std::string refused_hint(int err) {
  if (err != ECONNREFUSED) return "";
  return " (is `p2pscope bench tcp --server` running there? A server started with --sessions N exits after N "
         "sessions: it may have finished them)";
}

}  // namespace

const char* to_string(IoCause c) {
  switch (c) {
    case IoCause::closed: return "peer closed the connection";
    case IoCause::reset: return "connection reset by the peer";
    case IoCause::timeout: return "timed out (peer silent)";
    case IoCause::unreachable: return "link down or peer unreachable";
    case IoCause::other: break;
  }
  return "I/O error";
}

IoCause cause_of_errno(int err) {
  switch (err) {
    case ECONNRESET: case EPIPE: case ECONNABORTED: return IoCause::reset;
    case EAGAIN: case ETIMEDOUT: return IoCause::timeout;
    case EHOSTUNREACH: case ENETUNREACH: case ENETDOWN: case EHOSTDOWN: return IoCause::unreachable;
    default: return IoCause::other;
  }
}

std::uint32_t parse_ipv4(const std::string& text, const std::string& what) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1)
    throw UsageError(what + ": '" + text + "' is not an IPv4 address (expected a.b.c.d)");
  return a.s_addr;
}

Socket::~Socket() { close(); }

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    label_ = std::move(o.label_);
    timeout_s_ = o.timeout_s_;
    lowat_ = o.lowat_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdown() noexcept {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Socket Socket::connect_to(const std::string& addr, std::uint16_t port, const std::string& src_addr,
                          double timeout_s) {
  const sockaddr_in dst = make_addr(addr, port, "peer address");
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) throw_errno("socket()");
  const std::string what = "connect to " + addr + ":" + std::to_string(port) +
                           (src_addr.empty() ? "" : " from " + src_addr);
  if (!src_addr.empty()) {
    const sockaddr_in src = make_addr(src_addr, 0, "local NIC address");
    if (::bind(s.fd(), reinterpret_cast<const sockaddr*>(&src), sizeof src) != 0)
      throw Error(what + ": bind to local address failed: " + errno_text(errno));
  }
  // Non-blocking connect so the wait is bounded by timeout_s.
  const int flags = fcntl(s.fd(), F_GETFL);
  fcntl(s.fd(), F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(s.fd(), reinterpret_cast<const sockaddr*>(&dst), sizeof dst);
  if (rc != 0 && errno != EINPROGRESS)
    throw IoError(what + " failed: " + errno_text(errno) + refused_hint(errno), cause_of_errno(errno));
  if (rc != 0) {
    pollfd p{s.fd(), POLLOUT, 0};
    const int ms = static_cast<int>(std::ceil(timeout_s * 1000));
    rc = ::poll(&p, 1, ms);
    if (rc == 0) throw IoError(what + " timed out after " + std::to_string(timeout_s) + " s", IoCause::timeout);
    if (rc < 0) throw Error(what + ": poll failed: " + errno_text(errno));
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) throw IoError(what + " failed: " + errno_text(err) + refused_hint(err), cause_of_errno(err));
  }
  fcntl(s.fd(), F_SETFL, flags);
  s.set_label(addr + ":" + std::to_string(port));
  return s;
}

// The kernel's SO_RCVTIMEO / SO_SNDTIMEO count a whole call: one that moved a byte early
// and then nothing returns short after the full timeout, and the next call waited one
// more, so a stopped peer was found after up to twice --timeout (issue 32 item 9). The
// kernel wait is a slice of the timeout instead; the silence is counted here.
double Socket::slice_of(double timeout_s) { return std::clamp(timeout_s / 20, 0.005, 0.25); }

void Socket::set_timeout(double seconds) {
  timeout_s_ = seconds > 0 ? seconds : 0;
  const double slice = timeout_s_ > 0 ? std::min(timeout_s_, slice_of(timeout_s_)) : 0;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(slice);
  tv.tv_usec = static_cast<suseconds_t>((slice - static_cast<double>(tv.tv_sec)) * 1e6);
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  // Unacknowledged data older than this kills the connection (link down).
  const unsigned ms = static_cast<unsigned>(seconds * 1000);
  setsockopt(fd_, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
}

void Socket::set_nodelay(bool on) {
  const int v = on ? 1 : 0;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v);
}

void Socket::set_buffers(std::uint32_t bytes) {
  if (bytes == 0) return;
  const int v = static_cast<int>(bytes);
  setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
}

void Socket::send_all(const void* data, std::size_t n) { send_two(data, n, nullptr, 0); }

// A call that moved a byte renews SO_RCVTIMEO / SO_SNDTIMEO: a peer moving a byte per
// timeout held a server for ever (issue 32, item 7). So a message, from the first call
// that returned short, must move kMinBytesPerS for every second past the timeout: the
// floor is checked as it goes, so a trickle ends a timeout and a slice after it began.
// The deadline of issue 32 (the timeout plus the whole message's size at 1 MB/s) let a
// 1 GiB chunk trickled at 0.1 byte/s hold a server for 1084 s at --max-timeout 10 (issue
// 43 item 7); this floor is the same at the message's end, and never later. The grace is
// the timeout, not one second: a socket of a many-channel run over a slow link moves
// under 1 MB/s, and a stall shorter than --timeout is what --timeout allows. A peer
// silent for the timeout (no byte either way) fails at once, within a slice (issue 32,
// item 9). Only calls that returned short read the clock: the full-speed path and a
// ping-pong's latency are untouched.
void Socket::after_short_call(Wait& w, std::size_t n, std::size_t done, bool moved, const char* op) const {
  if (timeout_s_ <= 0) {  // a timeout set on the descriptor by hand: its expiry is the answer
    if (!moved) throw io_error(label_, op, EAGAIN);
    return;
  }
  const std::int64_t now = monotonic_ns();
  const auto slice_ns = static_cast<std::int64_t>(std::min(timeout_s_, slice_of(timeout_s_)) * 1e9);
  if (w.start_ns == 0) w.start_ns = now;
  if (moved) {
    w.silent_since_ns = now;  // the latest the last byte can have moved: never calls a live peer silent
  } else if (w.silent_since_ns == 0) {
    w.silent_since_ns = now - slice_ns;  // the call that just timed out waited a slice for nothing
  }
  const double silent_s = static_cast<double>(now - w.silent_since_ns) * 1e-9;
  if (!moved && silent_s >= timeout_s_)
    throw IoError(fmt::format("{}: {} timed out: the peer moved no byte for {:.1f} s (--timeout {:.1f} s; link down, "
                              "or the peer stalled or stopped)",
                              label_, op, silent_s, timeout_s_),
                  IoCause::timeout);
  const double elapsed_s = static_cast<double>(now - w.start_ns) * 1e-9;
  const double past_s = elapsed_s - timeout_s_;
  if (past_s > 0 && static_cast<double>(done) < kMinBytesPerS * past_s)
    throw IoError(fmt::format("{}: {} of a {}-byte message timed out: {} bytes moved in {:.1f} s, {} B/s on "
                              "average, slower than 1 MB/s past --timeout {:.1f} s (stalled, or trickling on purpose)",
                              label_, op, n, done, elapsed_s,
                              fmt::format("{:.3g}", static_cast<double>(done) / std::max(elapsed_s, 1e-9)),
                              timeout_s_),
                  IoCause::timeout);
}

void Socket::send_two(const void* a, std::size_t an, const void* b, std::size_t bn) {
  iovec iov[2] = {{const_cast<void*>(a), an}, {const_cast<void*>(b), bn}};
  int cnt = bn ? 2 : 1;
  iovec* v = iov;
  Wait w;
  std::size_t sent = 0;
  while (cnt > 0) {
    msghdr m{};
    m.msg_iov = v;
    m.msg_iovlen = static_cast<std::size_t>(cnt);
    const ssize_t r = ::sendmsg(fd_, &m, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) throw io_error(label_, "send", errno);
      after_short_call(w, an + bn, sent, false, "send");  // a slice with nothing sent
      continue;
    }
    sent += static_cast<std::size_t>(r);
    std::size_t done = static_cast<std::size_t>(r);
    while (cnt > 0 && done >= v->iov_len) {
      done -= v->iov_len;
      ++v;
      --cnt;
    }
    if (cnt > 0) {
      v->iov_base = static_cast<char*>(v->iov_base) + done;
      v->iov_len -= done;
      after_short_call(w, an + bn, sent, r > 0, "send");
    }
  }
}

namespace {
bool marked_reads() {
  static const bool on = [] {
    const char* v = std::getenv("P2PSCOPE_TCP_RCVLOWAT");
    return !(v && std::string(v) == "0");
  }();
  return on;
}
}  // namespace

// A reader asleep in recv() is woken at SO_RCVLOWAT bytes, 1 by default: once per
// arriving segment. On a 64-core host bench tcp's receiver slept 3.9-4.1 times per 1 MiB
// chunk at 16-32 channels, where the plugin path's, which reads this way since e814896,
// slept 0.6-0.7, and bench net passed bench tcp there (83.6 against 64.1 GB/s at 32
// channels; bench/results/engines.md): each wake-up, and each small read's window update,
// is paid by the sender's thread on loopback. So: take what is there, set the mark to the
// bytes still missing (across calls: inside one MSG_WAITALL recv the kernel keeps the
// mark the call began with), poll until it is reached (or a slice of the timeout passes:
// the silence is counted as recv_all counts it), take the rest. The kernel caps the mark
// at half its largest receive buffer and grows the buffer to fit it.
std::size_t Socket::recv_marked(void* data, std::size_t n) {
  auto* p = static_cast<char*>(data);
  const std::size_t whole = n;
  std::size_t calls = 0;
  // Back to the kernel's 1 byte on every way out, a throw included (a peer that closes,
  // a timeout): the socket's other readers (a frame's poll, a small MSG_WAITALL read, the
  // peer watch) would not be woken below a stale mark.
  struct MarkBack {
    int fd;
    int& lowat;
    std::size_t& calls;
    ~MarkBack() {
      if (lowat == 1) return;
      const int one = 1;
      ++calls;
      if (::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one) == 0) lowat = 1;
    }
  };
  {
    const MarkBack back{fd_, lowat_, calls};
    Wait w;
    const int slice_ms = timeout_s_ > 0 ? std::max(1, static_cast<int>(std::min(timeout_s_, slice_of(timeout_s_)) * 1e3)) : -1;
    while (n > 0) {
      const ssize_t r = ::recv(fd_, p, n, MSG_DONTWAIT);
      ++calls;
      if (r > 0) {
        p += r;
        n -= static_cast<std::size_t>(r);
        if (n == 0) break;
      } else if (nothing_received(r) == Retry::now) {
        continue;
      }
      const int mark = static_cast<int>(std::min<std::size_t>(n, INT_MAX));
      if (mark != lowat_) {
        ++calls;
        if (::setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof mark) == 0) lowat_ = mark;
      }
      pollfd pfd{fd_, POLLIN, 0};
      const int k = ::poll(&pfd, 1, slice_ms);
      ++calls;
      if (k < 0 && errno != EINTR) throw io_error(label_, "poll", errno);
      if (k == 0 || r > 0) after_short_call(w, whole, whole - n, r > 0, "recv");  // a slice passed, or bytes moved short
    }
  }  // the mark is back at 1 here, its call counted
  return calls;
}

std::size_t Socket::recv_all(void* data, std::size_t n) {
  if (n >= kMarkedReadBytes && marked_reads()) return recv_marked(data, n);
  auto* p = static_cast<char*>(data);
  const std::size_t whole = n;
  std::size_t calls = 0;
  Wait w;
  while (n > 0) {
    const ssize_t r = ::recv(fd_, p, n, MSG_WAITALL);
    ++calls;
    if (r <= 0) {
      if (nothing_received(r) == Retry::later) after_short_call(w, whole, whole - n, false, "recv");  // a slice, nothing
      continue;
    }
    p += r;
    n -= static_cast<std::size_t>(r);
    if (n > 0) after_short_call(w, whole, whole - n, true, "recv");
  }
  return calls;
}

std::size_t Socket::recv_now(void* data, std::size_t n) {
  for (;;) {
    const ssize_t r = ::recv(fd_, data, n, MSG_DONTWAIT);
    if (r > 0) return static_cast<std::size_t>(r);
    if (nothing_received(r) == Retry::later) return 0;
  }
}

// A recv() that returned r <= 0: the peer's close and real errors are thrown; what is
// left is a call to repeat at once (a signal) or once data may have come (none yet).
Socket::Retry Socket::nothing_received(ssize_t r) const {
  if (r == 0) throw IoError(label_ + ": peer closed the connection (its process ended or closed it)", IoCause::closed);
  if (errno == EINTR) return Retry::now;
  if (errno == EAGAIN || errno == EWOULDBLOCK) return Retry::later;
  throw io_error(label_, "recv", errno);
}

std::string Socket::local_addr() const {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  return sockaddr_text(a);
}

std::string Socket::peer_addr() const {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  return sockaddr_text(a);
}

std::string Socket::local_ip() const {
  const std::string s = local_addr();
  return s.substr(0, s.rfind(':'));
}

std::uint64_t Socket::retransmits() const {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return 0;
  return info.tcpi_total_retrans;
}

}  // namespace p2pscope::tcp
