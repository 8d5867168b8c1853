#pragma once
// An owned TCP socket with bounded blocking I/O. A send/recv fails once the peer has
// been silent for the socket's timeout (see set_timeout), so a silent, stopped or
// vanished peer turns into an Error naming the socket instead of a hang. shutdown() from another thread
// wakes a blocked call (used to stop a whole session when one worker fails).
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "p2pscope/error.hpp"

namespace p2pscope::tcp {

// Why a socket call failed, as far as the errno tells: a failed session names it.
enum class IoCause { other, closed, reset, timeout, unreachable };
const char* to_string(IoCause c);

class IoError : public Error {
 public:
  IoError(const std::string& what, IoCause cause) : Error(what), cause_(cause) {}
  IoCause cause() const { return cause_; }

 private:
  IoCause cause_;
};
IoCause cause_of_errno(int err);

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& o) noexcept : fd_(o.fd_), label_(std::move(o.label_)), timeout_s_(o.timeout_s_), lowat_(o.lowat_) {
    o.fd_ = -1;
  }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Text used in error messages ("channel 3 socket 0 (c2s) 10.0.0.1:5000").
  void set_label(std::string label) { label_ = std::move(label); }
  const std::string& label() const { return label_; }

  // Connects to addr:port (IPv4 dotted), from src_addr when not empty; waits at most
  // timeout_s. Throws Error naming both ends.
  static Socket connect_to(const std::string& addr, std::uint16_t port, const std::string& src_addr,
                           double timeout_s);

  // send_all / send_two / recv_all fail once the peer moved no byte for `seconds`
  // (within slice_of(seconds)), or once a message, past the timeout from its first short
  // call, has moved fewer bytes than kMinBytesPerS times the time past it (a floor on its
  // rate, checked as it goes). TCP_USER_TIMEOUT is set to it too; the kernel's
  // SO_RCVTIMEO / SO_SNDTIMEO get the slice.
  void set_timeout(double seconds);
  double timeout_s() const { return timeout_s_; }  // 0: none
  // How late past the timeout a silent peer is found: the kernel wait of one call.
  static double slice_of(double timeout_s);
  void set_nodelay(bool on);
  void set_buffers(std::uint32_t bytes);  // SO_SNDBUF/SO_RCVBUF; kernel caps at wmem_max

  void send_all(const void* data, std::size_t n);
  // header then payload in one sendmsg where possible.
  void send_two(const void* a, std::size_t an, const void* b, std::size_t bn);
  // A read of kMarkedReadBytes or more sleeps until the bytes are in, not per arriving
  // segment (recv_marked); P2PSCOPE_TCP_RCVLOWAT=0 keeps one MSG_WAITALL recv (A/B runs).
  // Returns the system calls it made (the engines count them per chunk).
  std::size_t recv_all(void* data, std::size_t n);
  static constexpr std::size_t kMarkedReadBytes = 64u << 10;
  // A message that moves slower than this after its first timeout is a stalled peer's.
  static constexpr double kMinBytesPerS = 1e6;
  // Whatever is readable now, at most n bytes, without waiting: 0 when nothing is.
  // Throws IoError as recv_all does (a closed peer included).
  std::size_t recv_now(void* data, std::size_t n);
  void shutdown() noexcept;  // SHUT_RDWR; safe from any thread
  void close() noexcept;

  std::string local_addr() const;  // "127.0.0.1:40000"
  std::string peer_addr() const;
  std::string local_ip() const;    // "127.0.0.1"
  std::uint64_t retransmits() const;  // TCP_INFO tcpi_total_retrans; 0 if unknown

 private:
  int fd_ = -1;
  std::string label_;
  double timeout_s_ = 0;  // 0: no deadline
  int lowat_ = 1;         // SO_RCVLOWAT as last set (the kernel's default: 1 byte)
  std::size_t recv_marked(void* data, std::size_t n);
  enum class Retry { now, later };
  Retry nothing_received(ssize_t r) const;
  struct Wait {
    std::int64_t start_ns = 0, silent_since_ns = 0;  // 0: not yet known
  };
  // After a call that returned short (moved: it moved bytes; else a slice passed with
  // none): throws IoError (timeout) once the peer was silent for the timeout or the
  // message of n bytes, `done` of them moved, fell below its rate floor.
  void after_short_call(Wait& w, std::size_t n, std::size_t done, bool moved, const char* op) const;
};

// "a.b.c.d" or throws UsageError naming `what`.
std::uint32_t parse_ipv4(const std::string& text, const std::string& what);

}  // namespace p2pscope::tcp
