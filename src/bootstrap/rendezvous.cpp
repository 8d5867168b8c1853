// Rank 0 listens on 0.0.0.0 for runs across hosts, so whoever reaches the port may
// knock: garbage, an old binary, another job's rank, a stranger without the secret, a
// connection that says nothing or trickles a byte a second. One poll serves every
// pending connection at once, each with its own deadline for the whole hello, so none
// of these can hold up the real ranks; a refusal is a log line, never an exception out
// of here. Only a peer that proved the secret (when there is one) and named this job,
// world size and a free rank takes a place, and nothing about the run is sent before.
#include "bootstrap/rendezvous.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>

#include "bootstrap/wire.hpp"
#include "p2pscope/auth.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::rdv {
namespace {

std::string sockaddr_text(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return fmt::format("{}:{}", buf, ntohs(a.sin_port));
}

std::int64_t seconds_to_ns(double s) { return static_cast<std::int64_t>(std::clamp(s, 0.0, 1e6) * 1e9); }

// True when the peer has closed or reset the connection (no data is consumed).
bool hung_up(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

// Best effort, never blocks: a frame to a connection that is about to be closed or
// whose buffer is empty (the meeting's frames are a few dozen bytes).
bool send_now(int fd, const std::string& bytes) {
  const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  return n == static_cast<ssize_t>(bytes.size());
}

struct Pending {
  tcp::Socket s;
  std::string addr;
  std::int64_t deadline_ns = 0;
  std::string got;  // bytes of the current step (intro, then hello)
  bool intro_done = false;
  std::string nonce;  // rank 0's challenge to this connection
  bool done = false;  // admitted or refused: drop from the list
};

class Meeting {
 public:
  Meeting(const MeetingPlace& place, const RendezvousOptions& opts)
      : place_(place),
        opts_(opts),
        job_(job_digest(opts.job_id)),
        peers_(static_cast<std::size_t>(place.size)),
        peer_addr_(static_cast<std::size_t>(place.size)),
        joined_at_ns_(static_cast<std::size_t>(place.size), 0) {
    hello_ns_ = seconds_to_ns(std::max(opts.hello_timeout_s, 0.1));
    max_pending_ =
        opts.max_pending ? opts.max_pending : std::max<std::size_t>(64, 4 * static_cast<std::size_t>(place.size));
    listen();
  }

  std::vector<tcp::Socket> run() {
    const std::int64_t start = monotonic_ns();
    const std::int64_t deadline = start + seconds_to_ns(place_.timeout_s);
    for (;;) {
      while (joined() < place_.size) step(deadline);
      // A place whose holder left before the start is free again, not a dead rank of the run.
      if (free_dead_places() == 0) break;
    }
    listen_.close();  // late comers get "connection refused" instead of a silent wait
    for (auto& p : pending_) refuse(p, "too late", "refused: the run has started with every rank", false);
    for (int r = 1; r < place_.size; ++r) {
      tcp::Socket& s = peers_[static_cast<std::size_t>(r)];
      try {
        send_frame(s, "W", kMaxMeetingFrame);
      } catch (const Error& e) {
        throw Error(fmt::format("bootstrap (rank 0 of {}, rendezvous {}): {} left just before the start: {}",
                                place_.size, place_.where, s.label(), e.what()));
      }
    }
    return std::move(peers_);
  }

 private:
  int joined() const {
    int n = 1;
    for (std::size_t r = 1; r < peers_.size(); ++r) n += peers_[r].valid() ? 1 : 0;
    return n;
  }

  void listen() {
    listen_ = tcp::Socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!listen_.valid()) throw_errno("bootstrap: socket()");
    const int one = 1;
    ::setsockopt(listen_.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(place_.port);
    a.sin_addr.s_addr = tcp::parse_ipv4(place_.listen_ip, "rendezvous address");
    if (::bind(listen_.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      const int err = errno;
      throw Error(fmt::format("bootstrap: rank 0 cannot listen on {}:{} (rendezvous {}): {}{}", place_.listen_ip,
                              place_.port, place_.where, errno_text(err),
                              err == EADDRINUSE ? ". Another program or another run holds the port: give this run "
                                                  "its own P2PSCOPE_RENDEZVOUS=<host of rank 0>:<free port>"
                                                : ""));
    }
    if (::listen(listen_.fd(), SOMAXCONN) != 0) throw_errno("bootstrap: listen on " + place_.where);
  }

  // One poll over the listener, the pending connections and the admitted peers.
  void step(std::int64_t deadline) {
    std::int64_t now = monotonic_ns();
    if (now >= deadline) give_up();
    std::int64_t wake = deadline;
    std::vector<pollfd> fds;
    const bool accepting = now >= accept_paused_until_ns_;
    fds.push_back({accepting ? listen_.fd() : -1, POLLIN, 0});
    for (const auto& p : pending_) {
      fds.push_back({p.s.fd(), POLLIN, 0});
      wake = std::min(wake, p.deadline_ns);
    }
    if (!accepting) wake = std::min(wake, accept_paused_until_ns_);
    for (std::size_t r = 1; r < peers_.size(); ++r)
      fds.push_back({peers_[r].valid() ? peers_[r].fd() : -1, POLLRDHUP, 0});
    const int ms = static_cast<int>(std::clamp<std::int64_t>((wake - now + 999'999) / 1'000'000, 0, 1000));
    if (::poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) throw_errno("bootstrap: poll");

    // Places first: a hello served below may take a place freed here, and must not be
    // judged by the revents of the connection it replaced.
    const std::size_t peer_at = 1 + pending_.size();
    for (std::size_t r = 1; r < peers_.size(); ++r)
      if (peers_[r].valid() && (fds[peer_at + r - 1].revents & (POLLRDHUP | POLLHUP | POLLERR)))
        free_place(static_cast<int>(r));
    for (std::size_t i = 0; i < pending_.size(); ++i)
      if (fds[1 + i].revents) serve(pending_[i]);
    now = monotonic_ns();
    for (auto& p : pending_)
      if (!p.done && now >= p.deadline_ns)
        refuse(p, "no hello in time",
               fmt::format("refused: no complete hello within {:.1f} s", static_cast<double>(hello_ns_) / 1e9),
               p.intro_done);
    std::erase_if(pending_, [](const Pending& p) { return p.done; });
    if (fds[0].revents & POLLIN) accept_all();
  }

  void accept_all() {
    // Bounded: a flood arriving faster than it is accepted must not starve the hellos.
    for (int i = 0; i < 64; ++i) {
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const int fd = ::accept4(listen_.fd(), reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        // Out of descriptors or memory: the listener stays readable, so pause instead of
        // spinning, and make room by closing the oldest stranger.
        note("accept failed",
             fmt::format("rendezvous {}: accept failed ({}); pausing 100 ms", place_.where, errno_text(errno)));
        accept_paused_until_ns_ = monotonic_ns() + 100'000'000;
        if (!pending_.empty()) evict_oldest();
        return;
      }
      Pending p;
      p.s = tcp::Socket(fd);
      p.addr = sockaddr_text(from);
      p.deadline_ns = monotonic_ns() + hello_ns_;
      pending_.push_back(std::move(p));
      if (pending_.size() > max_pending_) evict_oldest();
    }
  }

  void evict_oldest() {
    // No text: a real rank that was caught in a flood sees the connection close and
    // connects again; a text would read as a final refusal.
    Pending& p = pending_.front();
    note("evicted", fmt::format("rendezvous {}: closed {} (more than {} connections were waiting at once)",
                                place_.where, p.addr, max_pending_));
    pending_.erase(pending_.begin());
  }

  // Reads what has arrived; never blocks.
  void serve(Pending& p) {
    if (p.done) return;
    try {
      const std::size_t need = p.intro_done ? kHelloBytes : kIntroBytes;
      char buf[kHelloBytes];
      const ssize_t n = ::recv(p.s.fd(), buf, need - p.got.size(), MSG_DONTWAIT);
      if (n == 0) return refuse(p, "closed early", "closed the connection before its hello", false, false);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        return refuse(p, "closed early", "connection failed before its hello: " + errno_text(errno), false, false);
      }
      p.got.append(buf, static_cast<std::size_t>(n));
      if (!p.intro_done) {
        // Refuse garbage at its first wrong byte, not at the deadline.
        if (std::memcmp(p.got.data(), kMagic, std::min(p.got.size(), sizeof kMagic)) != 0)
          return refuse(p, "not p2pscope", "refused: not a p2pscope rendezvous hello", false);
        if (p.got.size() == kIntroBytes) on_intro(p);
      } else if (p.got.size() == kHelloBytes) {
        on_hello(p);
      }
    } catch (const std::exception& e) {  // whatever a peer's bytes cause, the meeting goes on
      refuse(p, "failed", fmt::format("refused: {}", e.what()), p.intro_done);
    }
  }

  void on_intro(Pending& p) {
    const std::uint32_t version = get_u32(p.got.data() + sizeof kMagic);
    if (version != kVersion)
      return refuse(p, "other version",
                    fmt::format("refused: rendezvous protocol version {} (rank 0 speaks {}): use the same p2pscope "
                                "on every rank",
                                version, kVersion),
                    false);
    p.nonce = auth::random_nonce_hex(kNonceHexBytes / 2);
    if (!send_now(p.s.fd(), frame(std::string("C") + (opts_.token ? 'T' : 'N') + p.nonce)))
      return refuse(p, "closed early", "could not send the challenge", false, false);
    p.intro_done = true;
    p.got.clear();
  }

  void on_hello(Pending& p) {
    const Hello h = parse_hello(p.got.data());
    // The secret first: nothing else a stranger says is looked at.
    if (opts_.token && !auth::equal_constant_time(h.proof, auth::proof(*opts_.token, kRankRole, p.nonce, h.nonce)))
      return refuse_hello(
          p, "wrong secret",
          "refused: wrong shared secret: this rank's P2PSCOPE_TOKEN (or P2PSCOPE_TOKEN_FILE) differs from "
          "rank 0's; give every rank the same one");
    if (!auth::equal_constant_time(h.job, job_))
      return refuse_hello(
          p, "another job",
          fmt::format("refused: this rank belongs to another job (its launcher's job id differs from rank "
                      "0's). Either two runs meet at {}: give each its own P2PSCOPE_RENDEZVOUS; or the ranks' "
                      "environments differ (P2PSCOPE_JOB_ID set for some ranks only)",
                      place_.where));
    const auto size = static_cast<std::uint32_t>(place_.size);
    if (h.size != size)
      return refuse_hello(
          p, "world size",
          fmt::format("refused: this rank says the run has {} processes but rank 0 says {}", h.size, size));
    if (h.rank == 0 || h.rank >= size)  // unsigned: 0xffffffff is no rank, not -1
      return refuse_hello(p, "bad rank", fmt::format("refused: rank {} is not a peer rank of {}", h.rank, size));
    const auto r = static_cast<std::size_t>(h.rank);
    if (peers_[r].valid() && hung_up(peers_[r].fd())) free_place(static_cast<int>(r));
    if (peers_[r].valid())
      return refuse_hello(
          p, "duplicate rank",
          fmt::format("refused: rank {} has already joined, from {} {:.1f} s ago. If that is not this "
                      "process, something else holds its place: another run meeting at {} (give each run "
                      "its own P2PSCOPE_RENDEZVOUS) or a stranger (set the same P2PSCOPE_TOKEN for every "
                      "rank so that strangers are refused)",
                      h.rank, peer_addr_[r], static_cast<double>(monotonic_ns() - joined_at_ns_[r]) / 1e9,
                      place_.where));
    const std::string answer =
        std::string("A") + (opts_.token ? auth::proof(*opts_.token, kRootRole, p.nonce, h.nonce) : std::string());
    if (!send_now(p.s.fd(), frame(answer))) return refuse(p, "closed early", "could not send the answer", false, false);
    // Admitted: from here on plain blocking I/O with timeouts, as every collective uses.
    const int flags = ::fcntl(p.s.fd(), F_GETFL);
    if (flags < 0 || ::fcntl(p.s.fd(), F_SETFL, flags & ~O_NONBLOCK) != 0)
      return refuse(p, "failed", "fcntl: " + errno_text(errno), true);
    p.s.set_timeout(std::min(5.0, place_.timeout_s));
    p.s.set_label(fmt::format("rank {} ({})", h.rank, p.addr));
    peers_[r] = std::move(p.s);
    peer_addr_[r] = p.addr;
    joined_at_ns_[r] = monotonic_ns();
    p.done = true;
  }

  // Sends the reason (tagged 'R' for a peer that spoke version 2 this far, plain text
  // otherwise, which version 1 also prints) unless `tell` is false, then closes.
  void refuse(Pending& p, const std::string& kind, const std::string& why, bool tagged, bool tell = true) {
    if (p.done) return;
    p.done = true;
    note(kind, fmt::format("rendezvous {}: {}: {}", place_.where, p.addr, why));  // before the peer can see it
    if (tell) {
      try {
        send_now(p.s.fd(), frame((tagged ? "R" : "") + why));
      } catch (const std::exception&) {
      }
      // Read what the peer already sent: closing with unread bytes resets the connection,
      // and the peer would see "reset" instead of the reason.
      ::shutdown(p.s.fd(), SHUT_WR);
      char sink[1024];
      for (int i = 0; i < 8 && ::recv(p.s.fd(), sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
      }
    }
    p.s.close();
  }

  void refuse_hello(Pending& p, const std::string& kind, const std::string& why) { refuse(p, kind, why, true); }

  void free_place(int r) {
    const auto i = static_cast<std::size_t>(r);
    note("left early", fmt::format("rendezvous {}: rank {} ({}) closed its connection before the run started; its "
                                   "place is free again",
                                   place_.where, r, peer_addr_[i]));
    peers_[i].close();
  }

  int free_dead_places() {
    int freed = 0;
    for (std::size_t r = 1; r < peers_.size(); ++r)
      if (peers_[r].valid() && hung_up(peers_[r].fd())) {
        free_place(static_cast<int>(r));
        ++freed;
      }
    return freed;
  }

  void note(const std::string& kind, const std::string& line) {
    ++refused_[kind];
    if (opts_.log) {
      try {
        opts_.log(line);
      } catch (...) {  // a failing log sink must not end the meeting
      }
    }
  }

  [[noreturn]] void give_up() {
    std::string missing, refused;
    for (int r = 1; r < place_.size; ++r)
      if (!peers_[static_cast<std::size_t>(r)].valid()) missing += (missing.empty() ? "" : ",") + std::to_string(r);
    refused = join(refused_, ", ", [](const auto& kv) { return fmt::format("{} {}", kv.second, kv.first); });
    const std::string told =
        fmt::format("Rrank 0 gave up after {:.0f} s: rank(s) {} never joined", place_.timeout_s, missing);
    for (auto& s : peers_)
      if (s.valid()) send_now(s.fd(), frame(told));
    throw Error(
        fmt::format("bootstrap: rank 0 waited {:.0f} s at {} and {} of {} ranks came (missing: {}). Did "
                    "every process start, with the same rendezvous address?{}",
                    place_.timeout_s, place_.where, joined(), place_.size, missing,
                    refused.empty() ? "" : fmt::format(" Connections refused or dropped meanwhile: {}", refused)));
  }

  MeetingPlace place_;
  const RendezvousOptions& opts_;
  std::string job_;
  std::int64_t hello_ns_ = 0;
  std::size_t max_pending_ = 64;
  tcp::Socket listen_;
  std::int64_t accept_paused_until_ns_ = 0;
  std::vector<Pending> pending_;
  std::vector<tcp::Socket> peers_;
  std::vector<std::string> peer_addr_;
  std::vector<std::int64_t> joined_at_ns_;
  std::map<std::string, int> refused_;
};

}  // namespace

std::vector<tcp::Socket> meet_peers(const MeetingPlace& place, const RendezvousOptions& options) {
  return Meeting(place, options).run();
}

}  // namespace p2pscope::rdv
