// The TCP rendezvous bootstrap: a star around rank 0. Rank 0 admits one connection
// per peer (rendezvous.cpp: secret, job, world size, a free rank; wire.hpp: the bytes)
// and relays every collective: peers send their part to rank 0, rank 0 sends the whole
// to everyone. Star, not ring: the messages are small (ids, names, samples) and one
// relay keeps the failure cases simple (a dead peer is seen by rank 0 at once).
// Every socket runs with TCP_NODELAY: an op sends rank 0 two frames in a row to one
// peer (an allgather's answer, then the next op's command), and Nagle held the second
// until the peer's delayed ACK (40 ms): a torchrun campaign ran at 5.5 ops/s.
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "bootstrap/rendezvous.hpp"
#include "bootstrap/wire.hpp"
#include "p2pscope/affinity.hpp"
#include "p2pscope/auth.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope {
namespace {

using tcp::Socket;
using rdv::kMaxFrame;
using rdv::kMaxMeetingFrame;
using rdv::recv_frame;
using rdv::send_frame;

// Each part framed by its u32 length. The total is checked before anything is built:
// size ranks x 256 MiB would not fit one frame (nor, on 32 bits, a size_t).
std::string pack(const std::vector<std::string>& parts) {
  std::uint64_t total = 0;
  for (const auto& p : parts) total += 4 + static_cast<std::uint64_t>(p.size());  // parts <= kMaxFrame each
  if (total > kMaxFrame)
    throw Error(fmt::format("bootstrap: an allgather of {} bytes in all is over the {} byte limit of one message",
                            total, kMaxFrame));
  std::string out;
  out.reserve(static_cast<std::size_t>(total));
  for (const auto& p : parts) {
    rdv::put_u32(out, static_cast<std::uint32_t>(p.size()));
    out.append(p);
  }
  return out;
}

std::vector<std::string> unpack(const std::string& data, int count) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  for (int i = 0; i < count; ++i) {
    if (data.size() - at < 4) throw Error("bootstrap: rank 0 sent a truncated allgather");
    const std::uint32_t n = rdv::get_u32(data.data() + at);
    at += 4;
    if (n > data.size() - at) throw Error("bootstrap: rank 0 sent a truncated allgather");
    parts.emplace_back(data, at, n);
    at += n;
  }
  return parts;
}

// Plain text of a refusal frame: 'R' + text from version 2, bare text from others.
std::string refusal_text(const std::string& answer) {
  const std::string text = !answer.empty() && answer[0] == 'R' ? answer.substr(1) : answer;
  const bool printable = std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  return printable && !text.empty() ? text : "answered with something that is not a p2pscope rank 0's";
}

// IPv4 text of a host name or address ("localhost" -> "127.0.0.1").
std::string resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0 || !res)
    throw UsageError(fmt::format("bootstrap: cannot resolve the rendezvous host '{}': {}", host, gai_strerror(rc)));
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, text, sizeof text);
  freeaddrinfo(res);
  return text;
}

// How long a bootstrap read spins (non-blocking polls) before it sleeps in the kernel:
// P2PSCOPE_BOOTSTRAP_SPIN_US, 5000 by default (where each rank can have two cores), 0 =
// never. Under a launcher every op of a campaign is an announcement and a gather on
// these sockets; a reader asleep in recv() pays its wake-up (tens of microseconds in a
// VM) twice per op, as much as an 8 MiB transfer over NVLink takes. With 4 ranks a rank
// sits out half the ops and waits through them, and rank 0 waits out every op in the
// gather: a spin shorter than an op (200 us) let them fall asleep at 1-64 MiB. 4 x H200,
// the seed's torchrun campaign against one process in one call: worst size 0.70x at 200
// us, 0.81x at 5000 us (bench/results/multigpu.md).
std::int64_t bootstrap_spin_ns() {
  static const std::int64_t ns = [] {
    const char* v = std::getenv("P2PSCOPE_BOOTSTRAP_SPIN_US");
    const long us = v ? std::strtol(v, nullptr, 10) : 5000;
    return static_cast<std::int64_t>(std::clamp(us, 0L, 100'000L)) * 1000;
  }();
  return ns;
}

// Returns when `s` has bytes to read or `spin` ns are up (then recv blocks as before).
void spin_until_readable(const Socket& s, std::int64_t spin) {
  if (spin <= 0) return;
  pollfd p{s.fd(), POLLIN, 0};
  const std::int64_t t0 = monotonic_ns();
  do {
    if (::poll(&p, 1, 0) != 0) return;  // readable, closed, or an error: recv says which
  } while (monotonic_ns() - t0 < spin);
}

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(int rank, int size, const std::string& host, std::uint16_t port, double timeout_s,
               const RendezvousOptions& opts)
      : rank_(rank), size_(size), timeout_s_(timeout_s), opts_(opts) {
    if (size < 1 || rank < 0 || rank >= size)
      throw UsageError(fmt::format("bootstrap: rank {} of {} is not a valid place", rank, size));
    // NaN, infinite or absurd timeouts would overflow the nanosecond deadlines below.
    if (!(timeout_s > 0) || !std::isfinite(timeout_s))
      throw UsageError(fmt::format("bootstrap: timeout of {} s: expected a positive number of seconds", timeout_s));
    timeout_s_ = std::min(timeout_s, 1e6);
    // Spin only where every rank can have a core of its own to spin on (ranks on this
    // host are at most size): on a 2-core machine spinning ranks would starve the one
    // that has to answer. The CPUs this process may run on, not the machine's: a rank
    // bound to one core (mpirun's default for np <= 2) would spin on its own NCCL proxy.
    spin_ns_ = allowed_cpus().size() >= 2u * static_cast<std::size_t>(size) ? bootstrap_spin_ns() : 0;
    const std::string ip = resolve_ipv4(host);
    where_ = fmt::format("{}:{}", host, port);
    if (rank == 0) {
      // Loopback stays loopback; any other address: listen on all, so a name that
      // resolves to one of this host's NICs is reachable however it resolved.
      rdv::MeetingPlace place{ip.rfind("127.", 0) == 0 ? ip : "0.0.0.0", port, where_, size_, timeout_s_};
      peers_ = rdv::meet_peers(place, opts_);
      for (int r = 1; r < size_; ++r) {
        peer(r).set_timeout(timeout_s_);
        peer(r).set_nodelay(true);
      }
    } else {
      join(ip, port);
      root_.set_nodelay(true);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> allgather(const std::string& mine) override {
    const Timed t(*this);
    if (rank_ != 0) {
      send(root_, mine);
      return unpack(recv(root_), size_);
    }
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    all[0] = mine;
    for (int r = 1; r < size_; ++r) all[static_cast<std::size_t>(r)] = recv(peer(r));
    const std::string packed = pack(all);
    for (int r = 1; r < size_; ++r) send(peer(r), packed);
    return all;
  }

  std::vector<std::string> allgather_bounded(const std::string& mine, std::uint32_t max_part_bytes,
                                             const std::string& what) override {
    const Timed t(*this);
    const Bound bound{max_part_bytes, what};
    if (rank_ != 0) {
      send(root_, mine);
      // The whole: every part within the bound, each behind its 4-byte length.
      const std::uint64_t whole = (std::uint64_t{max_part_bytes} + 4) * static_cast<std::uint64_t>(size_);
      auto all = unpack(recv(root_, {static_cast<std::uint32_t>(std::min<std::uint64_t>(whole, kMaxFrame)), what}), size_);
      for (int r = 0; r < size_; ++r) check_part(all[static_cast<std::size_t>(r)], r, bound);
      return all;
    }
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    all[0] = mine;
    for (int r = 1; r < size_; ++r) all[static_cast<std::size_t>(r)] = recv(peer(r), bound);
    const std::string packed = pack(all);
    for (int r = 1; r < size_; ++r) send(peer(r), packed);
    return all;
  }

  std::vector<std::string> gather(const std::string& mine) override {
    const Timed t(*this);
    if (rank_ != 0) {
      send(root_, mine);
      return {};
    }
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    all[0] = mine;
    for (int r = 1; r < size_; ++r) all[static_cast<std::size_t>(r)] = recv(peer(r));
    return all;
  }

  std::string broadcast(int root, const std::string& data) override {
    if (root < 0 || root >= size_) throw UsageError(fmt::format("bootstrap: broadcast from rank {} of {}", root, size_));
    const Timed t(*this);
    if (rank_ != 0) {
      if (rank_ == root) send(root_, data);
      return recv(root_);
    }
    const std::string out = root == 0 ? data : recv(peer(root));
    for (int r = 1; r < size_; ++r) send(peer(r), out);
    return out;
  }

  BootstrapCounters counters() const override { return counters_; }

  std::vector<std::optional<std::string>> gather_live(const std::string& mine, double timeout_s) override {
    const Timed t(*this);
    if (rank_ != 0) {
      send(root_, mine);
      return {};
    }
    std::vector<std::optional<std::string>> all(static_cast<std::size_t>(size_));
    all[0] = mine;
    // One deadline for all: parts already sent wait in the kernel while a slow rank is
    // read, and a rank still silent at the deadline gets a last 50 ms.
    const std::int64_t deadline = monotonic_ns() + static_cast<std::int64_t>(std::clamp(timeout_s, 0.05, 1e6) * 1e9);
    for (int r = 1; r < size_; ++r) {
      if (!peer(r).valid()) continue;
      peer(r).set_timeout(std::max(0.05, static_cast<double>(deadline - monotonic_ns()) / 1e9));
      try {
        all[static_cast<std::size_t>(r)] = recv(peer(r));
        peer(r).set_timeout(timeout_s_);
      } catch (const Error& e) {
        drop(r, e.what());
      }
    }
    return all;
  }

  std::string broadcast_live(const std::string& data, double timeout_s) override {
    const Timed t(*this);
    if (rank_ != 0) {
      root_.set_timeout(std::clamp(timeout_s, 0.05, 1e6));
      std::string out = recv(root_);
      root_.set_timeout(timeout_s_);
      return out;
    }
    for (int r = 1; r < size_; ++r) {
      if (!peer(r).valid()) continue;
      try {
        send(peer(r), data);
      } catch (const Error& e) {
        drop(r, e.what());
      }
    }
    return data;
  }

  std::vector<std::pair<int, std::string>> dropped() const override { return dropped_; }

  int dead_peer() override {
    std::vector<pollfd> fds;
    std::vector<int> ranks;
    const auto watch = [&](Socket& s, int r) {
      fds.push_back({s.fd(), POLLRDHUP, 0});
      ranks.push_back(r);
    };
    if (rank_ != 0) watch(root_, 0);
    for (int r = 1; r < static_cast<int>(peers_.size()); ++r)
      if (peer(r).valid()) watch(peer(r), r);
    if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return -1;
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) return ranks[i];
    return -1;
  }

 private:
  Socket& peer(int r) { return peers_[static_cast<std::size_t>(r)]; }
  // Closed, so that a rank that wakes up later finds itself out of the run.
  void drop(int r, const std::string& why) {
    peer(r).close();
    dropped_.emplace_back(r, why);
  }

  // One collective call's count and wall time (counters()).
  struct Timed {
    explicit Timed(TcpBootstrap& b) : b_(b), t0_(monotonic_ns()) { ++b_.counters_.collectives; }
    ~Timed() { b_.counters_.collective_ns += monotonic_ns() - t0_; }
    TcpBootstrap& b_;
    std::int64_t t0_;
  };
  void send(Socket& s, const std::string& data) {
    guarded(s, [&] { send_frame(s, data); });
    ++counters_.frames_sent;
    counters_.bytes_sent += data.size();
  }
  // What may come in one collective's frame, and what belongs there (for the refusal).
  struct Bound {
    std::uint32_t bytes;
    std::string what;
  };
  std::string recv(Socket& s) { return recv(s, Bound{kMaxFrame, ""}); }
  std::string recv(Socket& s, const Bound& bound) {
    spin_until_readable(s, spin_ns_);
    std::string data = guarded(s, [&] {
      try {
        return recv_frame(s, bound.bytes);
      } catch (const rdv::FrameTooLarge& e) {  // a stranger's, or not this p2pscope: said as such
        throw UsageError(fmt::format("bootstrap (rank {} of {}, rendezvous {}): where {} of at most {} bytes "
                                     "belongs, {} Is every rank this run's? (set the same P2PSCOPE_TOKEN on every "
                                     "rank so that no stranger can take a rank's place)",
                                     rank_, size_, where_, bound.what.empty() ? "a message" : bound.what,
                                     bound.bytes, e.what()));
      }
    });
    ++counters_.frames_received;
    counters_.bytes_received += data.size();
    return data;
  }
  void check_part(const std::string& part, int r, const Bound& bound) const {
    if (part.size() > bound.bytes)
      throw UsageError(fmt::format("bootstrap (rank {} of {}): rank {} sent {} bytes where {} of at most {} bytes "
                                   "belongs: not this run's p2pscope (a stranger? set P2PSCOPE_TOKEN on every rank)",
                                   rank_, size_, r, part.size(), bound.what, bound.bytes));
  }

  // Runs one exchange step, turning a socket failure into an error that names the
  // rank and says what probably happened.
  template <class F>
  auto guarded(Socket& s, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const UsageError&) {  // it answered, with what no rank of this run sends
      throw;
    } catch (const Error& e) {
      throw Error(fmt::format("bootstrap (rank {} of {}, rendezvous {}): {} stopped answering: {}. It probably "
                              "failed or was killed; see its own output",
                              rank_, size_, where_, s.label(), e.what()));
    }
  }

  // Connects and proves itself until rank 0 admits this rank; a connection that drops
  // before an answer (rank 0 not up yet, or a flood of strangers made it close ours) is
  // tried again until the deadline; a refusal is final.
  void join(const std::string& ip, std::uint16_t port) {
    const std::int64_t deadline = monotonic_ns() + static_cast<std::int64_t>(timeout_s_ * 1e9);
    std::string last = "none yet";
    int connect_err = 0;
    bool answered_badly = false;  // something accepted our connection but did not answer as rank 0
    for (;;) {
      const double left = static_cast<double>(deadline - monotonic_ns()) / 1e9;
      if (left <= 0)
        throw Error(fmt::format("bootstrap: rank {} could not reach rank 0 at {} within {:.0f} s (last error: {}). {}",
                                rank_, where_, timeout_s_, last, unreachable_hint(connect_err, answered_badly)));
      root_ = rdv::connect_ipv4(ip, port, std::min(left, 2.0), connect_err);
      if (!root_.valid()) {
        last = fmt::format("connect to {}: {}", where_, errno_text(connect_err));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      root_.set_label(fmt::format("rank 0 ({})", where_));
      root_.set_timeout(std::min(left, 30.0));
      last = introduce();
      if (last.empty()) break;
      answered_badly = true;
      root_.close();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // Admitted; the others may take a while to come.
    root_.set_timeout(timeout_s_);
    const std::string start = guarded(root_, [&] { return recv_frame(root_, kMaxMeetingFrame); });
    if (start != "W") throw Error(fmt::format("bootstrap: rank 0 at {}: {}", where_, refusal_text(start)));
  }

  static std::string unreachable_hint(int connect_err, bool answered_badly) {
    if (connect_err == ECONNREFUSED)
      return "Nothing listens there: rank 0 has not started, has stopped, or started the run already with another "
             "process in this rank's place (set the same P2PSCOPE_TOKEN for every rank so that no stranger can "
             "take it)";
    if (connect_err == 0 && answered_badly)
      return "Something there accepts connections but does not answer as a p2pscope rank 0 (another program on "
             "that port? then give this run its own P2PSCOPE_RENDEZVOUS)";
    return "Is rank 0 running, and is the address reachable from here?";
  }

  // One attempt at the meeting's handshake (wire.hpp). Empty when admitted, else why the
  // connection dropped before an answer (try again); throws Error for a refusal or an
  // impostor.
  std::string introduce() {
    std::string challenge;
    try {
      root_.send_all(rdv::intro_bytes().data(), rdv::kIntroBytes);
      challenge = recv_frame(root_, kMaxMeetingFrame);
    } catch (const rdv::FrameTooLarge& e) {
      throw Error(fmt::format("bootstrap: rank {} at rendezvous {}: the process there is not a p2pscope rank 0 ({})",
                              rank_, where_, e.what()));
    } catch (const Error& e) {
      return e.what();
    }
    const auto fail = [&](const std::string& why) {
      return Error(fmt::format("bootstrap: rank {} at rendezvous {}: {}", rank_, where_, why));
    };
    if (challenge.size() != 2 + rdv::kNonceHexBytes || challenge[0] != 'C' ||
        (challenge[1] != 'T' && challenge[1] != 'N'))
      throw fail("rank 0 " + refusal_text(challenge));
    const bool root_has_secret = challenge[1] == 'T';
    if (root_has_secret && !opts_.token)
      throw fail("rank 0 requires the shared secret and this rank has none: set P2PSCOPE_TOKEN (or "
                 "P2PSCOPE_TOKEN_FILE) to the same secret for every rank (mpirun -x P2PSCOPE_TOKEN)");
    if (!root_has_secret && opts_.token)
      throw fail("this rank has a shared secret (P2PSCOPE_TOKEN or P2PSCOPE_TOKEN_FILE) but the process at the "
                 "rendezvous has none: set the same secret for every rank (or for none)");
    const std::string nonce0 = challenge.substr(2);
    rdv::Hello h;
    h.nonce = auth::random_nonce_hex(rdv::kNonceHexBytes / 2);
    h.proof = opts_.token ? auth::proof(*opts_.token, rdv::kRankRole, nonce0, h.nonce)
                          : std::string(rdv::kProofHexBytes, '-');
    h.job = rdv::job_digest(opts_.job_id);
    h.rank = static_cast<std::uint32_t>(rank_);
    h.size = static_cast<std::uint32_t>(size_);
    std::string answer;
    try {
      const std::string bytes = rdv::hello_bytes(h);
      root_.send_all(bytes.data(), bytes.size());
      answer = recv_frame(root_, kMaxMeetingFrame);
    } catch (const rdv::FrameTooLarge& e) {
      throw fail(fmt::format("the process there is not a p2pscope rank 0 ({})", e.what()));
    } catch (const Error& e) {
      return e.what();
    }
    if (answer.empty() || answer[0] != 'A') throw fail("rank 0 " + refusal_text(answer));
    if (opts_.token &&
        !auth::equal_constant_time(answer.substr(1), auth::proof(*opts_.token, rdv::kRootRole, nonce0, h.nonce)))
      throw fail("the process at the rendezvous did not prove the shared secret: it is not this run's rank 0 "
                 "(another program on that port?)");
    return {};
  }

  int rank_, size_;
  double timeout_s_;
  std::int64_t spin_ns_ = 0;  // spin_until_readable
  RendezvousOptions opts_;
  std::string where_;
  BootstrapCounters counters_;
  Socket root_;               // peers: the connection to rank 0
  std::vector<Socket> peers_;  // rank 0: one per peer rank (index 0 unused)
  std::vector<std::pair<int, std::string>> dropped_;  // rank 0: gather_live / broadcast_live
};

class SingleBootstrap final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> allgather(const std::string& mine) override { return {mine}; }
  std::string broadcast(int root, const std::string& data) override {
    if (root != 0) throw UsageError(fmt::format("bootstrap: broadcast from rank {} in a one-process run", root));
    return data;
  }
};

}  // namespace

std::unique_ptr<Bootstrap> make_single_bootstrap() { return std::make_unique<SingleBootstrap>(); }

std::unique_ptr<Bootstrap> make_tcp_bootstrap(int rank, int size, const std::string& host, std::uint16_t port,
                                              double timeout_s, const RendezvousOptions& options) {
  return std::make_unique<TcpBootstrap>(rank, size, host, port, timeout_s, options);
}

std::unique_ptr<Bootstrap> make_tcp_bootstrap(int rank, int size, const std::string& host, std::uint16_t port,
                                              double timeout_s) {
  return make_tcp_bootstrap(rank, size, host, port, timeout_s, RendezvousOptions{});
}

std::unique_ptr<Bootstrap> make_bootstrap(const LaunchInfo& launch, double timeout_s,
                                          const std::function<void(const std::string&)>& log) {
  if (!launch.multi_process()) return make_single_bootstrap();
  RendezvousOptions opts;
  opts.job_id = launch.job_id;
  opts.token = auth::load_token();
  opts.log = log;
  return make_tcp_bootstrap(launch.rank, launch.size, launch.rendezvous_host, launch.rendezvous_port, timeout_s, opts);
}

}  // namespace p2pscope
