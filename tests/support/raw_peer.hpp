#pragma once
// A hostile (or fake) bench tcp peer as a raw socket over 127.0.0.1: it sends what it
// likes (frames with any body, any header, bytes one at a time) and reads what comes
// back, without the library's checks in the way.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "p2pscope/tcp.hpp"

namespace p2pscope::test {

// Frame types by number (transport/session/protocol.hpp): a hostile peer need not agree.
inline constexpr std::uint32_t kHello = 1, kAccept = 2, kReject = 3, kDataHello = 4, kGo = 5, kDone = 6,
                               kResult = 7, kError = 8, kChallenge = 9, kParams = 10;

struct Reply {
  std::uint32_t type = 0;  // 0: nothing whole came (closed, reset or timed out)
  std::string body;
  bool closed = false;     // the peer closed or reset the connection
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
  std::string reason() const {
    const auto j = json();
    return j.is_object() && j.contains("reason") && j["reason"].is_string() ? j["reason"].get<std::string>() : "";
  }
};

class RawPeer {
 public:
  // Connects to 127.0.0.1:port; reads wait at most recv_timeout_s.
  explicit RawPeer(std::uint16_t port, double recv_timeout_s = 5) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{static_cast<time_t>(recv_timeout_s),
               static_cast<suseconds_t>((recv_timeout_s - static_cast<double>(static_cast<time_t>(recv_timeout_s))) * 1e6)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  RawPeer(RawPeer&& o) noexcept : fd_(o.fd_), connected_(o.connected_) { o.fd_ = -1; }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;
  RawPeer& operator=(RawPeer&&) = delete;
  ~RawPeer() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  bool send_bytes(const void* p, std::size_t n) {
    return ::send(fd_, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
  }
  static std::string frame(std::uint32_t type, const std::string& body, std::uint32_t magic = tcp::kProtocolMagic,
                           std::uint32_t version = tcp::kProtocolVersion) {
    const std::uint32_t h[4] = {magic, version, type, static_cast<std::uint32_t>(body.size())};
    std::string out(reinterpret_cast<const char*>(h), sizeof h);
    return out + body;
  }
  bool send_frame(std::uint32_t type, const nlohmann::json& body) {
    const std::string f = frame(type, body.dump());
    return send_bytes(f.data(), f.size());
  }

  // The next frame (any type); type 0 when none came whole.
  Reply read_frame() {
    Reply r;
    std::uint32_t h[4];
    if (!read_all(h, sizeof h, r)) return r;
    if (h[3] > (16u << 20)) return r;  // not a frame of ours
    r.body.resize(h[3]);
    if (!read_all(r.body.data(), r.body.size(), r)) return r;
    r.type = h[2];
    return r;
  }

  // True when the peer closed or reset the connection within timeout_s (a refusal
  // frame, if any, is read and dropped on the way).
  bool closed_within(double timeout_s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    char buf[4096];
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return true;
    }
    return false;
  }

  // A client's opening: a hello (its fields also carry the parameters, as the first
  // protocol's hello did), then, when the server answers with a challenge, the
  // parameters. Returns the server's answer to the proposal.
  Reply propose(const nlohmann::json& params, const nlohmann::json& proof = "") {
    send_frame(kHello, {{"nonce", "0123456789abcdef"}, {"session", 1}, {"params", params}});
    Reply r = read_frame();
    if (r.type != kChallenge) return r;
    send_frame(kParams, {{"proof", proof}, {"params", params}});
    return read_frame();
  }

 private:
  bool read_all(void* p, std::size_t n, Reply& r) {
    auto* c = static_cast<char*>(p);
    for (std::size_t got = 0; got < n;) {
      const ssize_t k = ::recv(fd_, c + got, n - got, 0);
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) r.closed = true;
      if (k <= 0) {
        if (k < 0 && errno == EINTR) continue;
        return false;
      }
      got += static_cast<std::size_t>(k);
    }
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace p2pscope::test
