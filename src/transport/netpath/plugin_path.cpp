// The net-plugin data path (bench net): each link of the session is one plugin comm,
// dealt over the plugin's devices as bench tcp deals sockets over NICs. Handles from
// listen() cross the control connection; each side connects the links it sends on and
// accepts the ones it receives on, in one agreed order. In a round, one progress
// thread per comm keeps up to --window isend/irecv requests posted and tests only the
// oldest (plugins accept nothing else). Chunks are dealt as they go, as bench tcp deals
// them, wherever the receiver can post a receive without knowing which chunk will land
// in it (dealt_as_they_go); elsewhere each comm carries a fixed share (chunks_of).
// Receives into CUDA memory are flushed where the plugin asks (iflush); on UNPACK
// devices (TCPX) the bytes land in the plugin's bounce buffers with a scatter list,
// which the unpack kernel (or, for host memory, a copy) applies before irecvConsumed.
#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <optional>
#include <map>
#include <mutex>
#include <thread>

#include "p2pscope/clock.hpp"
#include "p2pscope/enum_names.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/pattern.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/units.hpp"
#include "transport/net/handle_check.hpp"
#include "transport/session/channel.hpp"
#include "transport/session/datapath.hpp"
#include "transport/session/peer_watch.hpp"
#include "transport/session/protocol.hpp"
#include "transport/session/worker.hpp"

namespace p2pscope::tcp {
using namespace p2pscope::session;
namespace {

// What a plugin must take in flight per comm (NCCL_NET_MAX_REQUESTS; UNPACK queue depth).
constexpr auto kMaxRequestsPerComm = static_cast<std::uint32_t>(net::kMaxRequestsPerComm);
constexpr auto kUnpackQueueDepth = static_cast<std::uint32_t>(net::kUnpackQueueDepth);

struct PluginLink final : LinkState {
  std::shared_ptr<void> watch;  // first: the watchdog bounds the comms' closing too
  int dev = 0;
  net::ListenComm listen, listen_back;
  net::SendComm send;
  net::RecvComm recv;
  net::MemRegion mr;       // this side's buffer on the link's direction
  net::MemRegion mr_back;  // latency mode: the buffer on the reverse comm (the echo)
};

PluginLink& link_of(Conn& c) { return static_cast<PluginLink&>(*c.link); }

std::uint32_t per_comm_limit(const net::Plugin& plugin) {
  return static_cast<std::uint32_t>(net::max_requests_per_comm(plugin.version()));
}

std::string hex(const net::NetHandle& h) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char b : h) out += {d[b >> 4], d[b & 15]};
  return out;
}

net::NetHandle unhex(const std::string& text) {
  net::NetHandle h{};
  if (text.size() != 2 * h.size()) throw Error("a listen handle of " + std::to_string(text.size()) + " hex digits");
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error("a listen handle with a character that is not a hex digit");
  };
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<unsigned char>(nib(text[2 * i]) << 4 | nib(text[2 * i + 1]));
  return h;
}

// A peer's listen handle, checked before the plugin sees it (transport/net/handle_check.hpp).
net::NetHandle peer_handle(const nlohmann::json& v, const net::HandlePolicy& policy, const std::string& what) {
  if (!v.is_string()) throw Error("the peer sent no listen handle for " + what);
  const net::NetHandle h = unhex(v.get<std::string>());
  if (const std::string why = net::check_peer_handle(h, policy); !why.empty()) throw Error(what + ": " + why);
  return h;
}

std::uint64_t chunk_len(const Params& p, std::uint64_t i) {
  return std::min<std::uint64_t>(p.chunk_bytes, p.size_bytes - i * p.chunk_bytes);
}

// A receiver must post each receive's buffer and size before the bytes come. Where
// the destination is a ring slot that does not depend on the chunk (host memory,
// bandwidth modes, no --verify: the bytes are not looked at), it posts whole-chunk
// receives and any chunk may arrive: senders then claim chunks from their GPU slot's
// counter as they go (bench tcp's dealing; a comm that runs ahead takes more), and end
// each comm's round with end_marks() empty messages. --verify (each chunk is checked at
// its offset) and GPU or whole-message destinations keep the fixed deal, the bytes of
// each comm known to both sides ahead. Both sides decide from the agreed Params alone.
bool dealt_as_they_go(const Params& p) {
  return p.mem == MemKind::host && p.mode != Mode::latency && !p.verify && Layout::ring_if_smaller(p, p.window).ring;
}
// Empty messages closing a comm's round: as many as a receiver can have posted past
// the first one (its window is at most this), so every posted receive is matched and
// none is left over for the next round.
std::uint32_t end_marks(const Params& p) { return std::min(p.window, kMaxRequestsPerComm); }

// Gives up when nothing moved for the session's timeout (a plugin answering NULL or
// never completing must not hang the run).
class Watchdog {
 public:
  explicit Watchdog(double timeout_s) : timeout_s_(timeout_s), limit_ns_(static_cast<std::int64_t>(timeout_s * 1e9)) {}
  void moved() { last_ = monotonic_ns(); }
  void check(const char* what) const {
    if (monotonic_ns() - last_ > limit_ns_)
      throw IoError(std::string("no progress for ") + fixed_s() + " s while " + what +
                        " (plugin stalled, or the peer stopped)", IoCause::timeout);
  }

 private:
  std::string fixed_s() const { return fixed(timeout_s_, timeout_s_ < 10 ? 1 : 0); }
  double timeout_s_;
  std::int64_t limit_ns_, last_ = monotonic_ns();
};

void plugin_sender(WorkerArgs a) {
  run_guarded(a, [&] {
    const Params& p = a.s.p;
    PluginLink& l = link_of(a.c);
    const auto chunks = chunks_of(p, a.c.channel, a.c.socket);
    const Buffer& src = a.s.src[a.c.gpu_slot];
    const std::uint32_t window = std::min(p.window, per_comm_limit(*l.send.plugin()));
    std::deque<std::int64_t> posted_ns;
    std::size_t posted = 0, done = 0;
    Watchdog dog(p.timeout_s);
    while (done < chunks.size()) {
      if (a.ctl.failed.load(std::memory_order_relaxed)) break;
      check_stop(a);
      // The channel's window (its sockets share it) and the comm's request limit.
      while (posted < chunks.size() && posted - done < window && a.ch.permits.try_acquire()) {
        const std::uint64_t off = chunks[posted] * p.chunk_bytes, len = chunk_len(p, chunks[posted]);
        const char* data = src.data() + a.s.src_layout.offset(p, a.c.channel, a.c.socket, posted, off);
        const std::int64_t t = monotonic_ns();
        const auto req = l.send.isend(data, len, l.mr);
        ++a.rep.syscalls;
        if (!req) {  // the plugin is busy: test, then try again
          a.ch.permits.release();
          break;
        }
        const std::uint32_t occ = a.ch.in_flight.fetch_add(1) + 1;
        posted_ns.push_back(t);
        ++posted;
        dog.moved();
        a.ch.note_post(t, occ, a.timed);
      }
      if (done < posted) {
        ++a.rep.syscalls;
        if (l.send.test_oldest()) {
          const std::int64_t t = monotonic_ns();
          a.ch.in_flight.fetch_sub(1);
          a.ch.permits.release();
          std::lock_guard lk(a.ch.mu);
          if (a.timed) a.ch.lat_ns.push(static_cast<double>(t - posted_ns.front()));
          a.ch.round_last_ns = std::max(a.ch.round_last_ns, t);
          a.ch.round_bytes += chunk_len(p, chunks[done]);
          posted_ns.pop_front();
          ++done;
          dog.moved();
          continue;
        }
      }
      dog.check(done < posted ? "waiting for a send to complete" : "posting a send");
      std::this_thread::yield();  // nothing moved: let the peer's thread (or the plugin's) run
    }
    for (; done < posted; ++done) a.ch.permits.release();  // a failed round leaves the window whole
  });
}

// Dealt as they go: claims chunks from the GPU slot's counter while the channel's
// window and the comm's request limit allow, then sends end_marks() empty messages.
void plugin_sender_dealt(WorkerArgs a) {
  run_guarded(a, [&] {
    const Params& p = a.s.p;
    PluginLink& l = link_of(a.c);
    const std::uint64_t n = chunk_count(p);
    std::atomic<std::uint64_t>& next = a.s.next_chunk(a.c.c2s, a.c.gpu_slot);
    const Buffer& src = a.s.src[a.c.gpu_slot];
    const std::uint32_t window = std::min(p.window, per_comm_limit(*l.send.plugin()));
    struct Posted {
      std::int64_t t;
      std::uint64_t len;
      bool mark;
    };
    std::deque<Posted> posted;
    std::optional<std::uint64_t> held;  // claimed, not yet taken by the plugin (it answered NULL)
    std::uint64_t sent = 0;             // data messages posted on this comm this round
    std::uint32_t marks = 0;
    bool out_of_chunks = false;
    Watchdog dog(p.timeout_s);
    const std::uint32_t want_marks = end_marks(p);
    while (!(out_of_chunks && marks == want_marks && posted.empty())) {
      if (a.ctl.failed.load(std::memory_order_relaxed)) break;
      check_stop(a);
      while (!out_of_chunks && posted.size() < window && a.ch.permits.try_acquire()) {
        if (!held) {
          const std::uint64_t i = next.fetch_add(1, std::memory_order_relaxed);
          if (i >= n) {
            out_of_chunks = true;
            a.ch.permits.release();
            break;
          }
          held = i;
        }
        const std::uint64_t off = *held * p.chunk_bytes, len = chunk_len(p, *held);
        const char* data = src.data() + a.s.src_layout.offset(p, a.c.channel, a.c.socket, sent, off);
        const std::int64_t t = monotonic_ns();
        const auto req = l.send.isend(data, len, l.mr);
        ++a.rep.syscalls;
        if (!req) {
          a.ch.permits.release();
          break;
        }
        held.reset();
        ++sent;
        const std::uint32_t occ = a.ch.in_flight.fetch_add(1) + 1;
        posted.push_back({t, len, false});
        dog.moved();
        a.ch.note_post(t, occ, a.timed);
      }
      while (out_of_chunks && marks < want_marks && posted.size() < window) {
        ++a.rep.syscalls;
        if (!l.send.isend(src.data(), 0, l.mr)) break;
        ++marks;
        posted.push_back({monotonic_ns(), 0, true});
        dog.moved();
      }
      if (!posted.empty()) {
        ++a.rep.syscalls;
        if (l.send.test_oldest()) {
          const Posted done = posted.front();
          posted.pop_front();
          dog.moved();
          if (done.mark) continue;
          const std::int64_t t = monotonic_ns();
          a.ch.in_flight.fetch_sub(1);
          a.ch.permits.release();
          std::lock_guard lk(a.ch.mu);
          if (a.timed) a.ch.lat_ns.push(static_cast<double>(t - done.t));
          a.ch.round_last_ns = std::max(a.ch.round_last_ns, t);
          a.ch.round_bytes += done.len;
          continue;
        }
      }
      dog.check(!posted.empty() ? "waiting for a send to complete" : "posting a send");
      std::this_thread::yield();
    }
    for (const Posted& x : posted)
      if (!x.mark) a.ch.permits.release();  // a failed round leaves the window whole
  });
}

// Applies an UNPACK receive's scatter list: a kernel into GPU memory, a copy into host.
void unpack_into(const net::UnpackView& v, char* dst, bool on_gpu) {
  if (on_gpu) {
    if (!device_accessible(v.bounce) || !device_accessible(v.pieces))
      throw UsageError("the plugin's UNPACK bounce area or scatter list is host memory the GPU cannot read (the "
                       "reference plugin emulates UNPACK in host memory; TCPX's bounce buffers are GPU memory): use "
                       "--mem host with this plugin's UNPACK mode");
    net::launch_unpack(v.pieces, v.count, v.bounce, dst, nullptr);
    Staging::synchronize_device();
    return;
  }
  const char* bounce = static_cast<const char*>(v.bounce);
  for (std::size_t i = 0; i < v.count; ++i) std::memcpy(dst + v.pieces[i].dst_off, bounce + v.pieces[i].src_off, v.pieces[i].len);
}

void plugin_receiver(WorkerArgs a) {
  run_guarded(a, [&] {
    const Params& p = a.s.p;
    PluginLink& l = link_of(a.c);
    const auto chunks = chunks_of(p, a.c.channel, a.c.socket);
    Buffer& dst = a.s.dst[a.c.gpu_slot];
    const std::uint64_t seed = a.s.seed(a.c.c2s, a.c.gpu_slot, a.round);
    const net::DeviceProps& dev = l.recv.plugin()->device(l.dev);
    const bool unpack = l.recv.unpack();
    const std::uint32_t window =
        std::min({p.window, per_comm_limit(*l.recv.plugin()), unpack ? kUnpackQueueDepth : kMaxRequestsPerComm});
    std::size_t posted = 0, done = 0;
    Watchdog dog(p.timeout_s);
    auto where = [&](std::size_t j) {
      const std::uint64_t off = chunks[j] * p.chunk_bytes;
      return dst.data() + a.s.dst_layout.offset(p, a.c.channel, a.c.socket, j, off);
    };
    while (done < chunks.size()) {
      if (a.ctl.failed.load(std::memory_order_relaxed)) return;
      while (posted < chunks.size() && posted - done < window) {
        const auto req = l.recv.irecv(where(posted), chunk_len(p, chunks[posted]), l.mr);
        ++a.rep.syscalls;
        if (!req) break;
        const std::int64_t t = monotonic_ns();
        ++posted;
        dog.moved();
        std::lock_guard lk(a.ch.mu);
        if (a.ch.round_first_ns == 0 || t < a.ch.round_first_ns) a.ch.round_first_ns = t;
      }
      ++a.rep.syscalls;
      if (done < posted && l.recv.test_oldest()) {
        const std::uint64_t off = chunks[done] * p.chunk_bytes, len = chunk_len(p, chunks[done]);
        char* into = where(done);
        if (unpack) {
          unpack_into(l.recv.unpack_view(), into, dst.on_gpu());
          l.recv.irecv_consumed();
        }
        if (dst.on_gpu() && (dev.force_flush || dev.cuda_memory())) {
          if (l.recv.iflush(into, len, l.mr)) {
            while (!l.recv.test_flush()) dog.check("waiting for a flush (iflush) to complete");
          }
        }
        if (p.verify && !dst.on_gpu()) {
          const std::uint64_t bad = pattern_first_mismatch(into, len, seed, off);
          if (bad != len)
            throw Error("verify: byte at offset " + std::to_string(off + bad) + " of GPU slot " +
                        std::to_string(a.c.gpu_slot) + " differs from the sender's pattern");
        }
        const std::int64_t t = monotonic_ns();
        ++done;
        dog.moved();
        std::lock_guard lk(a.ch.mu);
        a.ch.round_last_ns = std::max(a.ch.round_last_ns, t);
        a.ch.round_bytes += len;
        continue;
      }
      dog.check(done < posted ? "waiting for a receive to complete" : "posting a receive");
      std::this_thread::yield();
    }
  });
}

// Dealt as they go: keeps whole-chunk receives posted into the comm's ring slots and
// takes each message's size from test(), until the sender's end marks; a size that
// cannot be a chunk of this session fails the round, and the round's bytes are checked
// against the message after every worker stopped (run_workers).
void plugin_receiver_dealt(WorkerArgs a) {
  run_guarded(a, [&] {
    const Params& p = a.s.p;
    PluginLink& l = link_of(a.c);
    Buffer& dst = a.s.dst[a.c.gpu_slot];
    const bool unpack = l.recv.unpack();
    // Posted receives hold distinct ring slots: at most `slots` at once.
    const std::uint32_t window = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        {p.window, per_comm_limit(*l.recv.plugin()), unpack ? kUnpackQueueDepth : kMaxRequestsPerComm,
         a.s.dst_layout.slots}));
    const std::uint32_t want_marks = end_marks(p);
    std::uint64_t posted = 0, done = 0;
    std::optional<std::uint64_t> total;  // messages this round, known at the first end mark
    Watchdog dog(p.timeout_s);
    auto where = [&](std::uint64_t j) { return dst.data() + a.s.dst_layout.offset(p, a.c.channel, a.c.socket, j, 0); };
    while (!total || done < *total) {
      if (a.ctl.failed.load(std::memory_order_relaxed)) return;
      check_stop(a);
      while (posted - done < window && (!total || posted < *total)) {
        const auto req = l.recv.irecv(where(posted), p.chunk_bytes, l.mr);
        ++a.rep.syscalls;
        if (!req) break;
        const std::int64_t t = monotonic_ns();
        ++posted;
        dog.moved();
        if (total) continue;
        std::lock_guard lk(a.ch.mu);
        if (a.ch.round_first_ns == 0 || t < a.ch.round_first_ns) a.ch.round_first_ns = t;
      }
      ++a.rep.syscalls;
      if (done < posted && l.recv.test_oldest()) {
        const std::int64_t got = l.recv.last_reported_bytes();
        if (got == net::kSizeNotReported)
          throw UsageError(l.recv.plugin()->describe() +
                           ": its test() does not report a receive's size, and bench net deals chunks as they go only "
                           "where the receiver learns each size from test(); run with --verify (each comm's share "
                           "fixed ahead, every byte checked) to drive this plugin");
        char* into = where(done);
        ++done;
        dog.moved();
        if (unpack) {
          unpack_into(l.recv.unpack_view(), into, false);
          l.recv.irecv_consumed();
        }
        if (got == 0) {
          if (!total) total = done - 1 + want_marks;
          continue;
        }
        if (total || got < 0 || static_cast<std::uint64_t>(got) > p.chunk_bytes)
          throw Error("the plugin reported a receive of " + std::to_string(got) + " bytes " +
                      (total ? "after the sender's end of round" : "for chunks of " + std::to_string(p.chunk_bytes) +
                                                                        " bytes") +
                      " (its test() sizes do not match what was sent)");
        const std::int64_t t = monotonic_ns();
        std::lock_guard lk(a.ch.mu);
        a.ch.round_last_ns = std::max(a.ch.round_last_ns, t);
        a.ch.round_bytes += static_cast<std::uint64_t>(got);
        continue;
      }
      dog.check(done < posted ? "waiting for a receive to complete" : "posting a receive");
      std::this_thread::yield();
    }
  });
}

// Spins on a comm's oldest request (latency: no sleep between tests), yielding now and
// then so a shared core still runs the peer's thread.
void wait_oldest(net::CommBase& c, Watchdog& dog, const char* what) {
  for (unsigned spins = 0; !c.test_oldest(); ++spins) {
    dog.check(what);
    if (spins % 64 == 63) std::this_thread::yield();
  }
  dog.moved();
}

template <class Post>
void post_until_taken(Post&& post, Watchdog& dog, const char* what) {
  for (unsigned spins = 0; !post(); ++spins) {
    dog.check(what);
    if (spins % 64 == 63) std::this_thread::yield();
  }
  dog.moved();
}

// Latency mode: the client sends a message on the link's comm and the server echoes it
// on the reverse comm; half the round trip is the sample (as bench tcp's ping-pong).
// What both ends use: the link, one message of size_bytes carrying the pattern of the
// client's GPU slot, and one watchdog.
struct Echo {
  explicit Echo(WorkerArgs& a)
      : p(a.s.p), l(link_of(a.c)), n(p.size_bytes), seed(a.s.seed(true, a.c.gpu_slot, 0)), dog(p.timeout_s) {}
  const Params& p;
  PluginLink& l;
  std::size_t n;
  std::uint64_t seed;
  Watchdog dog;

  // The oldest receive completed and, for an UNPACK plugin, its pieces copied to `into`.
  void receive(char* into, const char* what) {
    wait_oldest(l.recv, dog, what);
    if (l.recv.unpack()) {
      unpack_into(l.recv.unpack_view(), into, false);
      l.recv.irecv_consumed();
    }
  }
};

void plugin_ping(WorkerArgs a) {
  run_guarded(a, [&] {
    Echo e(a);
    const Params& p = e.p;
    PluginLink& l = e.l;
    char* src = a.s.src[a.c.gpu_slot].data();
    char* dst = a.s.dst[a.c.gpu_slot].data();
    LatencySamples samples(sample_cap(p));  // not a vector of --iters: 10M pings were 80 MB
    for (std::uint32_t i = 0; i < p.warmup + p.iters; ++i) {
      check_stop(a);
      const std::int64_t t0 = monotonic_ns();
      // The echo's receive is posted first: the peer's send never waits for it.
      post_until_taken([&] { return l.recv.irecv(dst, e.n, l.mr_back).has_value(); }, e.dog,
                       "posting the echo's receive");
      post_until_taken([&] { return l.send.isend(src, e.n, l.mr).has_value(); }, e.dog, "posting a ping");
      wait_oldest(l.send, e.dog, "waiting for a ping to leave");
      e.receive(dst, "waiting for the echo");
      const std::int64_t t1 = monotonic_ns();
      a.rep.syscalls += 4;
      if (i >= p.warmup) samples.push(static_cast<double>(t1 - t0) / 2);
      if (p.verify && pattern_first_mismatch(dst, e.n, e.seed) != e.n)
        throw Error("verify: echoed message differs from the pattern sent");
    }
    std::lock_guard lk(a.ch.mu);
    a.ch.lat_ns.append(samples);
  });
}

void plugin_pong(WorkerArgs a) {
  run_guarded(a, [&] {
    Echo e(a);
    PluginLink& l = e.l;
    char* buf = a.s.dst[a.c.gpu_slot].data();
    for (std::uint32_t i = 0; i < e.p.warmup + e.p.iters; ++i) {
      post_until_taken([&] { return l.recv.irecv(buf, e.n, l.mr).has_value(); }, e.dog, "posting a ping's receive");
      e.receive(buf, "waiting for a ping");
      if (e.p.verify && pattern_first_mismatch(buf, e.n, e.seed) != e.n)
        throw Error("verify: ping message differs from the client's pattern");
      post_until_taken([&] { return l.send.isend(buf, e.n, l.mr_back).has_value(); }, e.dog, "posting the echo");
      wait_oldest(l.send, e.dog, "waiting for the echo to leave");
      a.rep.syscalls += 4;
    }
  });
}

// The plugin device of link (gpu g, channel c): the (g x C + c)-th of `only` in turn, or
// of every device of the plugin when `only` is empty.
int link_device(const Params& p, std::size_t g, std::uint32_t c, std::size_t ndev, const std::vector<int>& only) {
  const std::size_t i = g * p.channels + c;
  return only.empty() ? static_cast<int>(i % ndev) : only[i % only.size()];
}

// The plugin devices a session's links use.
std::vector<int> devices_used(const Params& p, std::size_t ndev, const std::vector<int>& only) {
  std::vector<int> used;
  for (std::size_t g = 0; g < p.gpus.size(); ++g)
    for (std::uint32_t c = 0; c < p.channels; ++c) {
      const int d = link_device(p, g, c, ndev, only);
      if (std::find(used.begin(), used.end(), d) == used.end()) used.push_back(d);
    }
  return used;
}

// Why a device cannot take a dma-buf registration ("" when it can).
std::string device_no_dmabuf(const net::Plugin& plugin, int dev) {
  const net::DeviceProps& d = plugin.device(dev);
  if (d.dmabuf()) return "";
  return plugin.describe() + " device " + std::to_string(dev) + " (" + d.name + ") offers " +
         net::ptr_support_text(d.ptr_support) + " memory, not DMA-BUF (NCCL_PTR_DMABUF)";
}

class PluginPath final : public DataPath {
 public:
  PluginPath(std::shared_ptr<net::Plugin> plugin, DmabufMode dmabuf, std::vector<int> devices)
      : plugin_(std::move(plugin)), dmabuf_(dmabuf), only_(std::move(devices)) {
    for (int d : only_)
      if (d < 0 || d >= static_cast<int>(plugin_->devices().size()))
        throw UsageError(plugin_->describe() + " has no device " + std::to_string(d) + " (it offers " +
                         std::to_string(plugin_->devices().size()) + ")");
  }

  std::string name() const override {
    return "net plugin " + plugin_->name() + " v" + std::to_string(plugin_->version());
  }

  void check(const Params& p) const override {
    if (dmabuf_ == DmabufMode::on) check_dmabuf_on(p);
    bool cuda = false, host = false;
    std::uint64_t max_bytes = ~std::uint64_t{0};
    for (const auto& d : plugin_->devices()) {
      cuda = cuda || d.cuda_memory();
      host = host || d.host_memory();
      max_bytes = std::min(max_bytes, d.max_p2p_bytes);
    }
    if (p.mem == MemKind::gpu && !cuda)
      throw UsageError(plugin_->describe() + " offers " + net::ptr_support_text(plugin_->device(0).ptr_support) +
                       " memory, not CUDA: use --mem host");
    if (p.mem == MemKind::host && !host)
      throw UsageError(plugin_->describe() + " cannot move host memory (ptrSupport " +
                       net::ptr_support_text(plugin_->device(0).ptr_support) + "): use --mem gpu");
    if (p.chunk_bytes > max_bytes)
      throw UsageError("--chunk " + format_size(p.chunk_bytes) + " is over what " + plugin_->describe() +
                       " carries in one request (" + format_size(max_bytes) + "); pick a smaller --chunk");
  }

  std::uint32_t threads_per_link(const Params&, bool) const override { return 1; }

  // Socket plugins that read until EAGAIN fail a receive whose peer already closed,
  // last bytes in or not (fastsocket's last echo in latency mode, ~1 run in 6); NCCL
  // closes comms only after a barrier, and so does the session.
  bool linger_until_client_closes() const override { return true; }
  bool sends_complete_locally() const override { return true; }
  std::vector<std::string> own_addresses() const override {  // of the devices links may use
    std::vector<std::string> names;
    const auto& devs = plugin_->devices();
    for (std::size_t i = 0; i < devs.size(); ++i)
      if (only_.empty() || std::find(only_.begin(), only_.end(), static_cast<int>(i)) != only_.end())
        names.push_back(devs[i].name);
    return net::ipv4_of(names);
  }
  // An isend reads its buffer until it completes, and a read leaves it as it was: without
  // --verify (the only case with a source ring) the window's sends read one slot per link,
  // as bench tcp's sender does, which stays in the core's cache (1 MiB against 4 MiB per
  // channel at the default window, with the sender's thread copying every byte into the
  // kernel). Receives keep a slot each: a posted receive must not land on another's bytes.
  std::uint64_t src_ring_slots(const Params&) const override { return 1; }

  void open_client(Session& s, Socket& ctrl, const ClientOptions&, const std::string&) override { open(s, ctrl); }
  void open_server(Session& s, Socket& ctrl, Gate&, const std::string&) override { open(s, ctrl); }

  void prepare(Session& s) override {
    Exported exported;
    const std::uint32_t limit = per_comm_limit(*plugin_);
    if (s.p.mode != Mode::latency && s.p.window > limit)
      s.warnings.push_back("--window " + std::to_string(s.p.window) + " is over the " + std::to_string(limit) +
                           " requests per comm an ABI v" + std::to_string(plugin_->version()) +
                           " plugin must take (NCCL_NET_MAX_REQUESTS of its headers): each comm keeps at most " +
                           std::to_string(limit) + " in flight");
    for (auto& c : s.conns) {
      PluginLink& l = link_of(*c);
      if (s.p.mode == Mode::latency) {  // client: ping from src, echo into dst; server: both in dst
        const Buffer& in = s.dst[c->gpu_slot];
        const Buffer& out = s.is_client ? s.src[c->gpu_slot] : in;
        l.mr = s.is_client ? l.send.reg_mr(out.data(), out.size(), net::MemType::host)
                           : l.recv.reg_mr(in.data(), in.size(), net::MemType::host);
        l.mr_back = s.is_client ? l.recv.reg_mr(in.data(), in.size(), net::MemType::host)
                                : l.send.reg_mr(in.data(), in.size(), net::MemType::host);
        c->registration = "host";
        continue;
      }
      const bool sends = s.sends(c->c2s);
      Buffer& b = sends ? s.src[c->gpu_slot] : s.dst[c->gpu_slot];
      if (b.size() == 0) continue;
      net::CommBase& comm = sends ? static_cast<net::CommBase&>(l.send) : l.recv;
      l.mr = register_buffer(s, comm, b, exported, *c);
    }
    // The plugin holds its own reference to each dma-buf now (as NCCL, close after regMrDmaBuf).
    exported.clear();
  }

  void run_workers(Session& s, std::uint32_t round, bool timed) override {
    RoundCtl ctl;  // no sockets to shut: the workers poll ctl.failed between plugin calls
    // A peer that failed the round is heard at once, not after --timeout on a link whose
    // plugin does not fail when the peer closes (Fast Socket).
    const PeerWatch watch(s.ctrl, ctl, s.is_client ? "server" : "client");
    const bool latency = s.p.mode == Mode::latency, dealt = dealt_as_they_go(s.p);
    run_worker_threads(s, round, timed, ctl, [latency, dealt](const WorkerReport& w) -> WorkerFn {
      if (latency) return w.role == "tx" ? plugin_ping : plugin_pong;
      if (dealt) return w.role == "tx" ? plugin_sender_dealt : plugin_receiver_dealt;
      return w.role == "tx" ? plugin_sender : plugin_receiver;
    });
    if (dealt) check_received(s);
  }

 private:
  // One dma-buf per GPU buffer, shared by the links registering it, closed after prepare.
  struct Exported {
    std::vector<std::pair<const Buffer*, DmabufFd>> fds;
    void clear() { fds.clear(); }
  };

  // Dealt as they go, a receiver adds the sizes test() reported: over a GPU slot's
  // comms they must make the message (a plugin misreporting sizes shows here).
  static void check_received(Session& s) {
    for (bool c2s : {true, false}) {
      if (!s.dir_used(c2s) || s.sends(c2s)) continue;
      for (std::uint32_t g = 0; g < s.p.gpus.size(); ++g) {
        std::uint64_t got = 0;
        for (std::uint32_t c = 0; c < s.p.channels; ++c) got += s.chans[s.chan_index(c2s, g, c)]->round_bytes;
        if (got != s.p.size_bytes)
          throw RoundFailure("the plugin's receives of GPU slot " + std::to_string(g) + " reported " +
                                 std::to_string(got) + " bytes in all, and the message is " +
                                 std::to_string(s.p.size_bytes) + " bytes (its test() sizes do not add up)",
                             IoCause::other, "");
      }
    }
  }

  // --dmabuf on: what must hold, said before any data moves (and on the server, before
  // it accepts the session, so the client hears why).
  void check_dmabuf_on(const Params& p) const {
    if (p.mem != MemKind::gpu)
      throw UsageError("--dmabuf on registers CUDA memory through a dma-buf, and this run moves host memory: add "
                       "--mem gpu, or drop --dmabuf on");
    for (int d : devices_used(p, plugin_->devices().size(), only_))
      if (const std::string why = device_no_dmabuf(*plugin_, d); !why.empty())
        throw UsageError("--dmabuf on: " + why + ": use --dmabuf auto (regMr where DMA-BUF is not offered) or off");
    for (int g : p.gpus)
      if (const std::string why = dmabuf_unsupported(g); !why.empty())
        throw UsageError("--dmabuf on: " + why + ": use --dmabuf auto or off");
  }

  // regMrDmaBuf or regMr, as --dmabuf and what the device and the GPU offer decide;
  // notes on the link which one it was (the reports say it per channel).
  net::MemRegion register_buffer(Session& s, net::CommBase& comm, const Buffer& b, Exported& exported, Conn& c) {
    if (!b.on_gpu()) {
      c.registration = "host";
      return comm.reg_mr(b.data(), b.size(), net::MemType::host);
    }
    std::string why_not;
    if (dmabuf_ == DmabufMode::off) why_not = "--dmabuf off";
    if (why_not.empty()) why_not = device_no_dmabuf(*plugin_, comm.device());
    if (why_not.empty()) {
      why_not = gpu_no_dmabuf(b.gpu());
      // auto: the plugin would take a dma-buf but the GPU cannot give one; say so once.
      const std::string note = "the plugin offers DMA-BUF but " + why_not + ": registered with regMr";
      if (!why_not.empty() && std::find(s.warnings.begin(), s.warnings.end(), note) == s.warnings.end())
        s.warnings.push_back(note);
    }
    if (!why_not.empty() && dmabuf_ == DmabufMode::on) throw UsageError("--dmabuf on: " + why_not);
    const DmabufFd* fd = nullptr;
    if (why_not.empty()) {
      for (const auto& [buf, f] : exported.fds)
        if (buf == &b) fd = &f;
      if (!fd) {
        try {
          exported.fds.emplace_back(&b, export_dmabuf(b));
          fd = &exported.fds.back().second;
        } catch (const Error& e) {
          if (dmabuf_ == DmabufMode::on) throw;
          why_not = e.what();
          s.warnings.push_back("dma-buf export of GPU " + std::to_string(b.gpu()) + " memory failed (" + why_not +
                               "): registered with regMr instead");
        }
      }
    }
    if (!fd) {
      c.registration = "cuda";
      return comm.reg_mr(b.data(), b.size(), net::MemType::cuda);
    }
    c.registration = "dmabuf";
    return comm.reg_mr_dmabuf(b.data(), b.size(), net::MemType::cuda, fd->offset(), fd->fd());
  }

  // Cached per GPU: the attribute does not change while the process runs.
  std::string gpu_no_dmabuf(int gpu) {
    std::lock_guard lk(gpu_mu_);
    auto it = gpu_dmabuf_.find(gpu);
    if (it == gpu_dmabuf_.end()) it = gpu_dmabuf_.emplace(gpu, dmabuf_unsupported(gpu)).first;
    return it->second;
  }

  // Links in one order on both sides (direction, GPU, channel, socket); each side
  // listens where it receives, sends those handles, then connects or accepts in order.
  void open(Session& s, Socket& ctrl) {
    const Params& p = s.p;
    const auto& devs = plugin_->devices();
    // Every plugin call of the session, its comms' closing included, is bounded.
    const auto watch = plugin_->watch_calls({p.timeout_s, s.local.stop, s.local.on_hung_call});
    nlohmann::json mine = nlohmann::json::array();
    for (bool c2s : {true, false}) {
      if (!s.dir_used(c2s)) continue;
      for (std::uint32_t g = 0; g < p.gpus.size(); ++g)
        for (std::uint32_t c = 0; c < p.channels; ++c)
          for (std::uint32_t k = 0; k < p.sockets_per_channel; ++k) {
            auto conn = std::make_unique<Conn>();
            auto link = std::make_unique<PluginLink>();
            link->watch = watch;
            conn->c2s = c2s;
            conn->gpu_slot = g;
            conn->channel = c;
            conn->socket = k;
            link->dev = link_device(p, g, c, devs.size(), only_);
            const auto& d = devs[static_cast<std::size_t>(link->dev)];
            conn->nic = {d.name, ""};
            conn->local_desc = "dev " + std::to_string(d.index) + " " + d.name;
            conn->peer_desc = "comm " + std::to_string(s.conns.size());
            if (!s.sends(c2s)) {
              link->listen = plugin_->listen(link->dev);
              mine.push_back(hex(link->listen.handle()));
            } else {
              mine.push_back(nullptr);
            }
            conn->link = std::move(link);
            s.conns.push_back(std::move(conn));
          }
    }
    // Latency mode echoes on a second comm per link, the other way: the client listens.
    const bool latency = p.mode == Mode::latency;
    if (latency)
      for (auto& conn : s.conns) {
        PluginLink& l = link_of(*conn);
        if (s.is_client) {
          l.listen_back = plugin_->listen(l.dev);
          mine.push_back(hex(l.listen_back.handle()));
        } else {
          mine.push_back(nullptr);
        }
      }
    send_frame(ctrl, FrameType::net_handles, {{"handles", mine}});
    const auto theirs = expect_frame(ctrl, FrameType::net_handles, "exchanging plugin listen handles");
    const auto it = theirs.find("handles");
    const std::size_t want = s.conns.size() * (latency ? 2 : 1);
    if (it == theirs.end() || !it->is_array() || it->size() != want)
      throw Error("the peer's plugin handles do not match this session's " + std::to_string(want) + " comms");
    // Only where the peer is, or said it is in a frame the token authenticated. The peer
    // still chooses the port and whether it answers: connect and accept run bounded, so a
    // call it hangs fails this session, and a server lives on (issue 43 item 3).
    net::HandlePolicy policy;
    policy.peer_ip = ctrl.peer_addr().substr(0, ctrl.peer_addr().rfind(':'));
    policy.vouched = s.peer_addrs;
    policy.plugin = plugin_->name();
    policy.authenticated = s.authenticated;
    const auto deadline = net::Clock::now() + std::chrono::duration_cast<net::Clock::duration>(
                                                  std::chrono::duration<double>(p.timeout_s));
    for (std::size_t i = 0; i < s.conns.size(); ++i) {
      Conn& c = *s.conns[i];
      PluginLink& l = link_of(c);
      if (s.sends(c.c2s)) {
        l.send = plugin_->connect_bounded(l.dev, peer_handle((*it)[i], policy, "link " + std::to_string(i)), deadline,
                                          s.local.stop);
      } else {
        l.recv = plugin_->accept_bounded(l.listen, deadline, s.local.stop);
      }
    }
    for (std::size_t i = 0; latency && i < s.conns.size(); ++i) {
      PluginLink& l = link_of(*s.conns[i]);
      const auto& h = (*it)[s.conns.size() + i];
      if (s.is_client) {
        l.recv = plugin_->accept_bounded(l.listen_back, deadline, s.local.stop);
      } else {
        l.send = plugin_->connect_bounded(l.dev, peer_handle(h, policy, "the echo of link " + std::to_string(i)),
                                          deadline, s.local.stop);
      }
    }
  }

  std::shared_ptr<net::Plugin> plugin_;
  DmabufMode dmabuf_;
  std::vector<int> only_;  // the devices links go over in turn; empty: every device
  std::mutex gpu_mu_;  // the client and server sessions of --loopback prepare at once
  std::map<int, std::string> gpu_dmabuf_;
};

constexpr std::array<EnumName<DmabufMode>, 3> kDmabufModeNames{{
    {DmabufMode::auto_, "auto"},
    {DmabufMode::on, "on"},
    {DmabufMode::off, "off"},
}};

}  // namespace

DmabufMode parse_dmabuf_mode(const std::string& text) {
  if (const auto m = find_enum(kDmabufModeNames, text)) return *m;
  throw UsageError("--dmabuf '" + text + "': expected " + enum_choices(kDmabufModeNames));
}

std::string to_string(DmabufMode m) { return enum_name(kDmabufModeNames, m); }

std::shared_ptr<DataPath> make_plugin_path(std::shared_ptr<net::Plugin> plugin, DmabufMode dmabuf,
                                           std::vector<int> devices) {
  return std::make_shared<PluginPath>(std::move(plugin), dmabuf, std::move(devices));
}

}  // namespace p2pscope::tcp
