// The TCP rendezvous bootstrap: a star around rank 0. Rank 0 accepts one connection
// per peer, checks its hello (magic, version, world size, rank not yet taken), and
// relays every collective: peers send their part to rank 0, rank 0 sends the whole
// to everyone. Star, not ring: the messages are small (ids, names, samples) and one
// relay keeps the failure cases simple (a dead peer is seen by rank 0 at once).
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "p2pscope/bootstrap.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope {
namespace {

using tcp::Socket;

constexpr char kMagic[8] = {'P', '2', 'P', 'S', 'R', 'D', 'V', '1'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kMaxFrame = 256u << 20;  // bounded before anything is allocated

struct Hello {
  char magic[8];
  std::uint32_t version, rank, size;
};

void send_frame(Socket& s, const std::string& data) {
  if (data.size() > kMaxFrame) throw Error(fmt::format("bootstrap: a message of {} bytes is over the {} limit", data.size(), kMaxFrame));
  const auto n = static_cast<std::uint32_t>(data.size());
  s.send_two(&n, sizeof n, data.data(), data.size());
}

std::string recv_frame(Socket& s) {
  std::uint32_t n = 0;
  s.recv_all(&n, sizeof n);
  if (n > kMaxFrame) throw Error(fmt::format("bootstrap: {} announced a message of {} bytes (limit {}): not a p2pscope peer?", s.label(), n, kMaxFrame));
  std::string data(n, '\0');
  if (n) s.recv_all(data.data(), n);
  return data;
}

std::string pack(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    const auto n = static_cast<std::uint32_t>(p.size());
    out.append(reinterpret_cast<const char*>(&n), sizeof n).append(p);
  }
  return out;
}

std::vector<std::string> unpack(const std::string& data, int count) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  for (int i = 0; i < count; ++i) {
    std::uint32_t n = 0;
    if (at + sizeof n > data.size()) throw Error("bootstrap: rank 0 sent a truncated allgather");
    std::memcpy(&n, data.data() + at, sizeof n);
    at += sizeof n;
    if (n > data.size() - at) throw Error("bootstrap: rank 0 sent a truncated allgather");
    parts.emplace_back(data, at, n);
    at += n;
  }
  return parts;
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

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(int rank, int size, const std::string& host, std::uint16_t port, double timeout_s)
      : rank_(rank), size_(size), timeout_s_(timeout_s) {
    if (size < 1 || rank < 0 || rank >= size)
      throw UsageError(fmt::format("bootstrap: rank {} of {} is not a valid place", rank, size));
    const std::string ip = resolve_ipv4(host);
    where_ = fmt::format("{}:{}", host, port);
    if (rank == 0)
      accept_peers(ip, port);
    else
      join(ip, port);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> allgather(const std::string& mine) override {
    if (rank_ != 0) {
      guarded(root_, [&] { send_frame(root_, mine); });
      return unpack(guarded(root_, [&] { return recv_frame(root_); }), size_);
    }
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    all[0] = mine;
    for (int r = 1; r < size_; ++r) all[static_cast<std::size_t>(r)] = guarded(peer(r), [&] { return recv_frame(peer(r)); });
    const std::string packed = pack(all);
    for (int r = 1; r < size_; ++r) guarded(peer(r), [&] { send_frame(peer(r), packed); });
    return all;
  }

  std::string broadcast(int root, const std::string& data) override {
    if (root < 0 || root >= size_) throw UsageError(fmt::format("bootstrap: broadcast from rank {} of {}", root, size_));
    if (rank_ != 0) {
      if (rank_ == root) guarded(root_, [&] { send_frame(root_, data); });
      return guarded(root_, [&] { return recv_frame(root_); });
    }
    const std::string out = root == 0 ? data : guarded(peer(root), [&] { return recv_frame(peer(root)); });
    for (int r = 1; r < size_; ++r) guarded(peer(r), [&] { send_frame(peer(r), out); });
    return out;
  }

  bool peers_alive() override {
    std::vector<pollfd> fds;
    if (rank_ != 0) fds.push_back({root_.fd(), POLLRDHUP, 0});
    for (auto& s : peers_)
      if (s.valid()) fds.push_back({s.fd(), POLLRDHUP, 0});
    if (::poll(fds.data(), fds.size(), 0) <= 0) return true;
    for (const auto& p : fds)
      if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return false;
    return true;
  }

 private:
  Socket& peer(int r) { return peers_[static_cast<std::size_t>(r)]; }

  // Runs one exchange step, turning a socket failure into an error that names the
  // rank and says what probably happened.
  template <class F>
  auto guarded(Socket& s, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const Error& e) {
      throw Error(fmt::format("bootstrap (rank {} of {}, rendezvous {}): {} stopped answering: {}. It probably "
                              "failed or was killed; see its own output",
                              rank_, size_, where_, s.label(), e.what()));
    }
  }

  void accept_peers(const std::string& ip, std::uint16_t port) {
    // Loopback stays loopback; any other address: listen on all, so a name that
    // resolves to one of this host's NICs is reachable however it resolved.
    tcp::Listener listener({ip.rfind("127.", 0) == 0 ? ip : "0.0.0.0"}, port);
    peers_.resize(static_cast<std::size_t>(size_));
    const std::int64_t deadline = monotonic_ns() + static_cast<std::int64_t>(timeout_s_ * 1e9);
    int joined = 1;
    while (joined < size_) {
      const double left = static_cast<double>(deadline - monotonic_ns()) / 1e9;
      if (left <= 0)
        throw Error(fmt::format("bootstrap: rank 0 waited {:.0f} s at {} and {} of {} ranks came (missing: {}). Did "
                                "every process start, with the same rendezvous address?",
                                timeout_s_, where_, joined, size_, missing()));
      Socket s;
      try {
        s = listener.accept(left);
      } catch (const Error&) {
        continue;  // timed out: the loop reports who is missing
      }
      s.set_timeout(std::min(5.0, timeout_s_));
      if (const std::string why = check_hello(s); !why.empty()) {
        try {
          send_frame(s, why);
        } catch (const Error&) {
        }
        continue;  // a stranger or a misconfigured rank must not stop the others
      }
      ++joined;
    }
    for (int r = 1; r < size_; ++r) {
      send_frame(peer(r), std::string());  // "all here": an empty answer is the welcome
      peer(r).set_timeout(timeout_s_);
    }
  }

  // Empty when the hello is good (and the socket was kept), else the refusal text.
  std::string check_hello(Socket& s) {
    Hello h{};
    try {
      s.recv_all(&h, sizeof h);
    } catch (const Error& e) {
      return std::string("no hello: ") + e.what();
    }
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return "refused: not a p2pscope bootstrap hello";
    if (h.version != kVersion)
      return fmt::format("refused: bootstrap protocol version {} (rank 0 speaks {}): use the same p2pscope on every rank",
                         h.version, kVersion);
    if (static_cast<int>(h.size) != size_)
      return fmt::format("refused: this rank says the run has {} processes but rank 0 says {}", h.size, size_);
    if (h.rank == 0 || static_cast<int>(h.rank) >= size_) return fmt::format("refused: rank {} is not a peer rank of {}", h.rank, size_);
    if (peer(static_cast<int>(h.rank)).valid()) return fmt::format("refused: rank {} has already joined", h.rank);
    s.set_label(fmt::format("rank {} ({})", h.rank, s.peer_addr()));
    peer(static_cast<int>(h.rank)) = std::move(s);
    return {};
  }

  std::string missing() {
    std::string out;
    for (int r = 1; r < size_; ++r)
      if (!peer(r).valid()) out += (out.empty() ? "" : ",") + std::to_string(r);
    return out;
  }

  void join(const std::string& ip, std::uint16_t port) {
    const std::int64_t deadline = monotonic_ns() + static_cast<std::int64_t>(timeout_s_ * 1e9);
    std::string last;
    for (;;) {  // rank 0 may start after us: retry until the deadline
      const double left = static_cast<double>(deadline - monotonic_ns()) / 1e9;
      if (left <= 0)
        throw Error(fmt::format("bootstrap: rank {} could not reach rank 0 at {} within {:.0f} s (last error: {}). "
                                "Is rank 0 running, and is the address reachable from here?",
                                rank_, where_, timeout_s_, last));
      try {
        root_ = Socket::connect_to(ip, port, "", std::min(left, 2.0));
        break;
      } catch (const Error& e) {
        last = e.what();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    root_.set_label(fmt::format("rank 0 ({})", where_));
    root_.set_timeout(timeout_s_);
    Hello h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.version = kVersion;
    h.rank = static_cast<std::uint32_t>(rank_);
    h.size = static_cast<std::uint32_t>(size_);
    guarded(root_, [&] { root_.send_all(&h, sizeof h); });
    const std::string answer = guarded(root_, [&] { return recv_frame(root_); });
    if (!answer.empty()) throw Error(fmt::format("bootstrap: rank 0 at {} {}", where_, answer));
  }

  int rank_, size_;
  double timeout_s_;
  std::string where_;
  Socket root_;               // peers: the connection to rank 0
  std::vector<Socket> peers_;  // rank 0: one per peer rank (index 0 unused)
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
                                              double timeout_s) {
  return std::make_unique<TcpBootstrap>(rank, size, host, port, timeout_s);
}

std::unique_ptr<Bootstrap> make_bootstrap(const LaunchInfo& launch, double timeout_s) {
  if (!launch.multi_process()) return make_single_bootstrap();
  return make_tcp_bootstrap(launch.rank, launch.size, launch.rendezvous_host, launch.rendezvous_port, timeout_s);
}

}  // namespace p2pscope
