#include "bootstrap/wire.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "p2pscope/auth.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::rdv {

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

std::string intro_bytes() {
  std::string out(kMagic, sizeof kMagic);
  put_u32(out, kVersion);
  out.append(8, '\0');
  return out;
}

std::string hello_bytes(const Hello& h) {
  if (h.nonce.size() != kNonceHexBytes || h.proof.size() != kProofHexBytes || h.job.size() != kProofHexBytes)
    throw Error("bootstrap: internal: a hello field of the wrong length");
  std::string out = h.nonce + h.proof + h.job;
  put_u32(out, h.rank);
  put_u32(out, h.size);
  return out;
}

Hello parse_hello(const char* p) {
  Hello h;
  h.nonce.assign(p, kNonceHexBytes);
  p += kNonceHexBytes;
  h.proof.assign(p, kProofHexBytes);
  p += kProofHexBytes;
  h.job.assign(p, kProofHexBytes);
  p += kProofHexBytes;
  h.rank = get_u32(p);
  h.size = get_u32(p + 4);
  return h;
}

std::string job_digest(const std::string& job_id) {
  const auth::Digest d = auth::sha256("p2pscope-job:" + job_id);
  return auth::to_hex(d.data(), d.size());
}

std::string frame(const std::string& data) {
  if (data.size() > kMaxFrame)
    throw Error(fmt::format("bootstrap: a message of {} bytes is over the {} byte limit", data.size(), kMaxFrame));
  std::string out;
  out.reserve(4 + data.size());
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  return out.append(data);
}

void send_frame(tcp::Socket& s, const std::string& data, std::uint32_t limit) {
  if (data.size() > limit)
    throw Error(fmt::format("bootstrap: a message of {} bytes is over the {} byte limit", data.size(), limit));
  char n[4];
  std::string head;
  put_u32(head, static_cast<std::uint32_t>(data.size()));
  std::memcpy(n, head.data(), 4);
  s.send_two(n, sizeof n, data.data(), data.size());
}

std::string recv_frame(tcp::Socket& s, std::uint32_t limit) {
  char head[4];
  s.recv_all(head, sizeof head);
  const std::uint32_t n = get_u32(head);
  if (n > limit)
    throw FrameTooLarge(fmt::format("bootstrap: {} announced a message of {} bytes (limit {}): not a p2pscope peer?",
                                    s.label(), n, limit));
  std::string data(n, '\0');
  if (n) s.recv_all(data.data(), n);
  return data;
}

tcp::Socket connect_ipv4(const std::string& ip, std::uint16_t port, double timeout_s, int& err) {
  err = 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = tcp::parse_ipv4(ip, "rendezvous address");
  tcp::Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) throw_errno("bootstrap: socket()");
  if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) {
      err = errno;
      return {};
    }
    pollfd p{s.fd(), POLLOUT, 0};
    const int ms = static_cast<int>(std::ceil(std::clamp(timeout_s, 0.001, 3600.0) * 1000));
    int rc;
    do {
      rc = ::poll(&p, 1, ms);
    } while (rc < 0 && errno == EINTR);
    if (rc <= 0) {
      err = rc == 0 ? ETIMEDOUT : errno;
      return {};
    }
    socklen_t len = sizeof err;
    if (::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) return {};
  }
  const int flags = ::fcntl(s.fd(), F_GETFL);
  if (flags < 0 || ::fcntl(s.fd(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    err = errno;
    return {};
  }
  return s;
}

}  // namespace p2pscope::rdv
