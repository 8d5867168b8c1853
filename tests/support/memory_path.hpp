#pragma once
// A third data path, in process memory: what adding a transport costs (this file and
// one row of the contract suite's table, issue 33). Both sides of a loopback session
// share a Hub; each link is a queue of chunks, bounded by the window, that the TX
// worker fills (chunks dealt as they go, as bench tcp deals them) and the RX worker
// drains, checking the pattern when verifying. Bandwidth modes and host memory only.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/pattern.hpp"
#include "transport/session/channel.hpp"
#include "transport/session/datapath.hpp"
#include "transport/session/worker.hpp"

namespace p2pscope::test {

class MemoryPath final : public session::DataPath {
 public:
  struct Chunk {
    std::uint64_t offset = 0;
    std::vector<char> bytes;
    bool end = false;
  };
  struct Pipe {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Chunk> q;
  };
  // What the two sides of a session share: their links, by session id and index.
  struct Hub {
    std::mutex mu;
    std::map<std::string, std::vector<std::shared_ptr<Pipe>>> sessions;
    std::vector<std::shared_ptr<Pipe>> links(const std::string& id, std::size_t n) {
      std::lock_guard lk(mu);
      auto& v = sessions[id];
      while (v.size() < n) v.push_back(std::make_shared<Pipe>());
      return v;
    }
  };
  explicit MemoryPath(std::shared_ptr<Hub> hub) : hub_(std::move(hub)) {}

  std::string name() const override { return "memory"; }
  void check(const tcp::Params& p) const override {
    if (p.mem != tcp::MemKind::host) throw UsageError("the memory path moves host memory only: use --mem host");
    if (p.mode == tcp::Mode::latency) throw UsageError("the memory path has no latency mode");
  }
  std::uint64_t ring_slots(const tcp::Params&) const override { return 1; }  // chunks are copied when queued
  std::uint32_t threads_per_link(const tcp::Params&, bool) const override { return 1; }
  void open_client(session::Session& s, tcp::Socket&, const tcp::ClientOptions&, const std::string& id) override {
    open(s, id);
  }
  void open_server(session::Session& s, tcp::Socket&, session::Gate&, const std::string& id) override { open(s, id); }
  void prepare(session::Session&) override {}
  void run_workers(session::Session& s, std::uint32_t round, bool timed) override {
    session::RoundCtl ctl;
    session::run_worker_threads(s, round, timed, ctl, [](const tcp::WorkerReport& w) -> session::WorkerFn {
      return w.role == "tx" ? sender : receiver;
    });
  }

 private:
  struct Link final : session::LinkState {
    std::shared_ptr<Pipe> pipe;
  };

  void open(session::Session& s, const std::string& id) {
    const tcp::Params& p = s.p;
    std::size_t n = 0;
    for (bool c2s : {true, false})
      if (s.dir_used(c2s)) n += p.gpus.size() * p.channels * p.sockets_per_channel;
    const auto pipes = hub_->links(id, n);
    std::size_t i = 0;
    for (bool c2s : {true, false}) {
      if (!s.dir_used(c2s)) continue;
      for (std::uint32_t g = 0; g < p.gpus.size(); ++g)
        for (std::uint32_t c = 0; c < p.channels; ++c)
          for (std::uint32_t k = 0; k < p.sockets_per_channel; ++k) {
            auto conn = std::make_unique<session::Conn>();
            conn->c2s = c2s;
            conn->gpu_slot = g;
            conn->channel = c;
            conn->socket = k;
            conn->nic = {"memory", ""};
            conn->local_desc = conn->peer_desc = "queue " + std::to_string(i);
            auto link = std::make_unique<Link>();
            link->pipe = pipes[i++];
            conn->link = std::move(link);
            s.conns.push_back(std::move(conn));
          }
    }
  }

  static Pipe& pipe_of(session::WorkerArgs& a) { return *static_cast<Link&>(*a.c.link).pipe; }

  // Waits for `ready` under the pipe's lock; false when the round failed elsewhere.
  template <class Ready>
  static bool wait(session::WorkerArgs& a, std::unique_lock<std::mutex>& lk, Ready ready) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.s.p.timeout_s);
    while (!ready()) {
      if (a.ctl.failed.load()) return false;
      if (std::chrono::steady_clock::now() > deadline) throw Error("memory path: the peer stalled");
      pipe_of(a).cv.wait_for(lk, std::chrono::milliseconds(20));
    }
    return true;
  }

  static void sender(session::WorkerArgs a) {
    session::run_guarded(a, [&] {
      const tcp::Params& p = a.s.p;
      Pipe& pipe = pipe_of(a);
      const std::uint64_t n = session::chunk_count(p);
      auto& next = a.s.next_chunk(a.c.c2s, a.c.gpu_slot);
      for (std::uint64_t j = 0;; ++j) {
        session::check_stop(a);
        const std::uint64_t i = next.fetch_add(1);
        Chunk ch;
        ch.end = i >= n;
        if (!ch.end) {
          ch.offset = i * p.chunk_bytes;
          const std::uint64_t len = std::min(p.chunk_bytes, p.size_bytes - ch.offset);
          const char* src = a.s.src[a.c.gpu_slot].data() + a.s.src_layout.offset(p, a.c.channel, a.c.socket, j, ch.offset);
          ch.bytes.assign(src, src + len);
          a.ch.note_post(monotonic_ns(), 1, a.timed, len);
        }
        {
          std::unique_lock lk(pipe.mu);
          if (!wait(a, lk, [&] { return pipe.q.size() < p.window; })) return;
          pipe.q.push_back(std::move(ch));
          pipe.cv.notify_all();
        }
        if (i >= n) return;
        const std::int64_t t = monotonic_ns();
        a.ch.mark(t, t);  // queued: this side's part of the chunk is done
      }
    });
  }

  static void receiver(session::WorkerArgs a) {
    session::run_guarded(a, [&] {
      const tcp::Params& p = a.s.p;
      Pipe& pipe = pipe_of(a);
      const std::uint64_t seed = a.s.seed(a.c.c2s, a.c.gpu_slot, a.round);
      for (std::uint64_t j = 0;; ++j) {
        Chunk ch;
        {
          std::unique_lock lk(pipe.mu);
          if (!wait(a, lk, [&] { return !pipe.q.empty(); })) return;
          ch = std::move(pipe.q.front());
          pipe.q.pop_front();
          pipe.cv.notify_all();
        }
        if (ch.end) return;
        const std::int64_t t0 = monotonic_ns();
        char* into = a.s.dst[a.c.gpu_slot].data() + a.s.dst_layout.offset(p, a.c.channel, a.c.socket, j, ch.offset);
        std::memcpy(into, ch.bytes.data(), ch.bytes.size());
        if (p.verify && pattern_first_mismatch(into, ch.bytes.size(), seed, ch.offset) != ch.bytes.size())
          throw Error("verify: a chunk at offset " + std::to_string(ch.offset) + " differs from the sender's pattern");
        a.ch.mark(t0, monotonic_ns());
        std::lock_guard lk(a.ch.mu);
        a.ch.round_bytes += ch.bytes.size();
      }
    });
  }

  std::shared_ptr<Hub> hub_;
};

}  // namespace p2pscope::test
