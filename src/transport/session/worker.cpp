#include "transport/session/worker.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <deque>
#include <optional>
#include <tuple>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <system_error>
#include <thread>

#include "p2pscope/affinity.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/pattern.hpp"
#include "p2pscope/units.hpp"
#include "transport/session/datapath.hpp"
#include "transport/session/protocol.hpp"

namespace p2pscope::session {
namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string where(const WorkerArgs& a) {
  return "gpu " + std::to_string(a.s.p.gpus[a.c.gpu_slot]) + " channel " + std::to_string(a.c.channel) + " socket " +
         std::to_string(a.c.socket) + " (" + (a.c.c2s ? "c2s" : "s2c") + ", " + a.c.nic.name + ")";
}

std::uint64_t chunk_len(const Params& p, std::uint64_t i) {
  return std::min<std::uint64_t>(p.chunk_bytes, p.size_bytes - i * p.chunk_bytes);
}

// Runs body with pinning, CPU time and failure reporting around it.
// Time this thread waited runnable for a CPU (/proc/thread-self/schedstat, second field,
// ns): other load on the machine shows here, not in CPU time.
double runqueue_wait_s() {
  FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return 0;
  unsigned long long run = 0, wait = 0;
  const int n = std::fscanf(f, "%llu %llu", &run, &wait);
  std::fclose(f);
  return n == 2 ? static_cast<double>(wait) * 1e-9 : 0;
}

struct ThreadSwitches {
  std::int64_t voluntary = 0, involuntary = 0;
  static ThreadSwitches now() {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    return {ru.ru_nvcsw, ru.ru_nivcsw};
  }
};


// Stagger-free wait for a window slot that gives up when the round failed.
bool acquire_slot(WorkerArgs& a) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.s.p.timeout_s);
  while (!a.ctl.failed.load(std::memory_order_relaxed)) {
    if (a.ch.permits.try_acquire_for(std::chrono::milliseconds(50))) return true;
    if (std::chrono::steady_clock::now() > deadline)
      throw Error("window full and no ack for " + std::to_string(a.s.p.timeout_s) + " s (peer stalled?)");
  }
  return false;
}

}  // namespace

void RoundCtl::fail(const std::string& msg, IoCause why, const std::string& nic_name) noexcept {
  std::lock_guard lk(mu);
  if (failed.exchange(true)) return;  // keep the first (root) cause
  error = msg;
  cause = why;
  nic = nic_name;
  for (Socket* s : socks) s->shutdown();
}

void run_guarded(WorkerArgs& a, const std::function<void()>& body) {
  const double cpu0 = thread_cpu_s();
  const double wall0 = static_cast<double>(monotonic_ns()) * 1e-9;
  const ThreadSwitches sw0 = ThreadSwitches::now();
  const double wait0 = runqueue_wait_s();
  try {
    pin_self(a.cpus, a.s.allowed_cpus, a.rep);
    if (a.s.p.mem == MemKind::gpu) Staging::set_device(a.s.p.gpus[a.c.gpu_slot]);
    body();
  } catch (const IoError& e) {
    a.ctl.fail(where(a) + ": " + e.what(), e.cause(), a.c.nic.name);
  } catch (const std::exception& e) {
    a.ctl.fail(where(a) + ": " + e.what(), IoCause::other, a.c.nic.name);
  }
  a.rep.cpu_time_s += thread_cpu_s() - cpu0;
  a.rep.wall_time_s += static_cast<double>(monotonic_ns()) * 1e-9 - wall0;
  a.rep.runqueue_wait_s += runqueue_wait_s() - wait0;
  const ThreadSwitches sw1 = ThreadSwitches::now();
  a.rep.voluntary_switches += static_cast<std::uint64_t>(sw1.voluntary - sw0.voluntary);
  a.rep.involuntary_switches += static_cast<std::uint64_t>(sw1.involuntary - sw0.involuntary);
}

namespace {
constexpr const char* kInterruptedBySignal = "interrupted by a signal (Ctrl-C / SIGTERM); the rounds before it are kept";
}  // namespace

void check_stop(const WorkerArgs& a) {
  if (a.s.local.stop && a.s.local.stop->load(std::memory_order_relaxed)) throw Error(kInterruptedBySignal);
}

namespace {
// The round's thread waits for its workers here, looking at the stop flag every 50 ms:
// a receiver blocked on its link (or a plugin's test) never reached a check_stop, and a
// SIGTERM'd receiving side ran to the end of its session (35-41 s, issue 43 item 7). A
// stop fails the round as any failure does: its sockets are shut, its workers return.
class WorkersRunning {
 public:
  void started() {
    std::lock_guard lk(mu_);
    ++running_;
  }
  void ended() {
    {
      std::lock_guard lk(mu_);
      --running_;
    }
    cv_.notify_one();
  }
  void wait(const std::atomic<bool>* stop, RoundCtl& ctl) {
    std::unique_lock lk(mu_);
    while (running_ > 0) {
      if (!stop) {
        cv_.wait(lk, [&] { return running_ == 0; });
        break;
      }
      cv_.wait_for(lk, std::chrono::milliseconds(50));
      if (stop->load(std::memory_order_relaxed) && !ctl.failed.load()) {
        lk.unlock();
        ctl.fail(kInterruptedBySignal, IoCause::other, "");
        lk.lock();
      }
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t running_ = 0;
};
}  // namespace

void run_worker_threads(Session& s, std::uint32_t round, bool timed, RoundCtl& ctl,
                        const std::function<WorkerFn(const WorkerReport&)>& pick) {
  WorkersRunning running;
  {
    std::vector<std::jthread> threads;
    threads.reserve(s.workers.size());
    try {
      for (std::size_t w = 0; w < s.workers.size(); ++w) {
        Conn& c = *s.conns[s.worker_conn[w]];
        ChannelState& ch = *s.chans[s.chan_index(c.c2s, c.gpu_slot, c.channel)];
        WorkerArgs a{s, c, ch, round, timed, ctl, s.workers[w],
                     cpus_for(s.workers[w].role == "rx" ? s.local.rx_bind : s.local.tx_bind, c.nic)};
        running.started();
        try {
          threads.emplace_back([fn = pick(s.workers[w]), a, &running] {
            fn(a);
            running.ended();
          });
        } catch (...) {
          running.ended();
          throw;
        }
      }
    } catch (const std::system_error& e) {  // out of threads: the ones started stop on the failure
      ctl.fail(std::string("could not start a worker thread: ") + e.what(), IoCause::other, "");
    }
    running.wait(s.local.stop, ctl);
  }  // jthreads join here
  if (ctl.failed) throw RoundFailure(ctl.error, ctl.cause, ctl.nic);
}

void pin_self(const std::vector<int>& cpus, const std::vector<int>& allowed, WorkerReport& rep) {
  rep.expected_cpus = cpus;
  if (!cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    int n = 0;
    for (int c : cpus)
      if (c >= 0 && c < CPU_SETSIZE && std::find(allowed.begin(), allowed.end(), c) != allowed.end()) {
        CPU_SET(c, &set);
        ++n;
      }
    // Not-allowed CPUs are reported (session warning + mismatch mark), never fatal.
    if (n > 0) pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  rep.actual_cpus = allowed_cpus();
  rep.mismatch = !cpus.empty() && rep.actual_cpus != cpus;
}

// Acks of one socket, read by its TX thread (no thread of their own: at 4-8 channels a
// third thread per channel cost more in wakeups and scheduling than reading 8 bytes
// between sends). An ack's time is when the TX thread saw it: at most one chunk's send
// call late, so chunk latency is an upper bound (said in the report).
class AckReader {
 public:
  explicit AckReader(WorkerArgs& a) : a_(a), ring_(a.s.p.window) {}
  std::size_t outstanding() const { return sent_ - acked_; }
  bool all_acked() const { return acked_ == sent_; }
  // A chunk went out at t (at most `window` are unacked: a ring of send times suffices).
  void sent(std::int64_t t) { a_.c.send_ns[sent_++ % ring_].store(t, std::memory_order_relaxed); }
  // Reads what has arrived without waiting (wait = false), or waits for one ack first.
  void read(bool wait) {
    while (acked_ + have_ / sizeof(Ack) < sent_) {  // never past the acks due: the peer may close after them
      std::size_t got = 0;
      if (wait) {
        got = sizeof(Ack) - have_ % sizeof(Ack);
        a_.c.sock.recv_all(buf_ + have_, got);
        wait = false;  // one whole ack is in: drain the rest without waiting
      } else {
        got = a_.c.sock.recv_now(buf_ + have_, sizeof buf_ - have_);
        if (got == 0) return;
      }
      ++a_.rep.syscalls;
      have_ += got;
      const std::int64_t t = monotonic_ns();
      std::size_t used = 0;
      for (; have_ - used >= sizeof(Ack); used += sizeof(Ack)) {
        Ack ack;
        std::memcpy(&ack, buf_ + used, sizeof ack);
        on_ack(ack, t);
      }
      std::memmove(buf_, buf_ + used, have_ - used);
      have_ -= used;
    }
  }

 private:
  void on_ack(const Ack& ack, std::int64_t t) {
    if (ack.status != 0) throw Error("receiver reports a verify mismatch (see the peer's message)");
    if (ack.round != a_.round)
      throw Error("ack for round " + std::to_string(ack.round) + " in round " + std::to_string(a_.round));
    if (acked_ >= sent_) throw Error("more acks than chunks sent (peer out of step)");
    a_.ch.in_flight.fetch_sub(1);
    a_.ch.permits.release();
    const std::int64_t sent = a_.c.send_ns[acked_++ % ring_].load(std::memory_order_relaxed);
    std::lock_guard lk(a_.ch.mu);
    if (a_.timed) a_.ch.lat_ns.push(static_cast<double>(t - sent));
    a_.ch.round_last_ns = std::max(a_.ch.round_last_ns, t);
  }

  WorkerArgs& a_;
  std::size_t ring_, sent_ = 0, acked_ = 0, have_ = 0;
  char buf_[64 * sizeof(Ack)];
};

// Chunks are dealt to a GPU slot's sockets as they go (one shared counter): a socket that
// runs ahead takes the next chunk, so the channels end together instead of every one
// waiting for the slowest (static dealing cost about a fifth at 8 channels on one host,
// bench/results/tcp.md). Each socket ends its round with an end-of-round header.
void tx_worker(WorkerArgs a) {
  run_guarded(a, [&] {
    const Params& p = a.s.p;
    const std::uint64_t n = chunk_count(p);
    std::atomic<std::uint64_t>& next = a.s.next_chunk(a.c.c2s, a.c.gpu_slot);
    auto claim = [&]() -> std::optional<std::uint64_t> {
      const std::uint64_t i = next.fetch_add(1, std::memory_order_relaxed);
      return i < n ? std::optional<std::uint64_t>(i) : std::nullopt;
    };
    const Buffer& src = a.s.src[a.c.gpu_slot];
    AckReader acks(a);
    // GPU memory: up to `slots` claimed chunks copied ahead into pinned slots, in order.
    std::unique_ptr<Staging> st;
    constexpr int slots = 4;
    std::deque<std::pair<std::uint64_t, int>> staged;  // (chunk, slot)
    int next_slot = 0;
    auto stage_ahead = [&] {
      while (st && staged.size() < static_cast<std::size_t>(slots)) {
        const auto i = claim();
        if (!i) break;
        const int sl = next_slot++ % slots;
        st->d2h(sl, src.data() + *i * p.chunk_bytes, chunk_len(p, *i));
        staged.emplace_back(*i, sl);
      }
    };
    if (src.on_gpu()) st = std::make_unique<Staging>(src.gpu(), p.chunk_bytes, slots);
    stage_ahead();
    for (std::size_t j = 0;; ++j) {
      // A full window frees up through acks: this socket's, read here, or (several
      // sockets per channel) another socket's, read by that socket's TX thread.
      while (!a.ch.permits.try_acquire()) {
        if (a.ctl.failed.load(std::memory_order_relaxed)) return;
        if (acks.outstanding() > 0) {
          acks.read(true);
        } else {
          if (!acquire_slot(a)) return;
          break;
        }
      }
      check_stop(a);
      std::optional<std::uint64_t> i;
      int sl = 0;
      if (st) {
        if (!staged.empty()) std::tie(i, sl) = std::pair<std::optional<std::uint64_t>, int>(staged.front());
        if (i) staged.pop_front();
      } else {
        i = claim();
      }
      if (!i) {
        a.ch.permits.release();
        break;
      }
      const std::uint64_t off = *i * p.chunk_bytes, len = chunk_len(p, *i);
      const char* data = src.data() + a.s.src_layout.offset(p, a.c.channel, a.c.socket, j, off);
      if (st) {
        st->wait(sl);
        data = st->slot(sl);
      }
      const std::uint32_t occ = a.ch.in_flight.fetch_add(1) + 1;
      const std::int64_t t = monotonic_ns();
      acks.sent(t);
      a.ch.note_post(t, occ, a.timed, len);
      ChunkHeader h{off, static_cast<std::uint32_t>(len), a.round};
      a.c.sock.send_two(&h, sizeof h, data, len);
      ++a.rep.syscalls;
      stage_ahead();  // the slot just sent is free again (send copies before it returns)
      acks.read(false);
    }
    ChunkHeader end{kEndOfRound, 0, a.round};
    a.c.sock.send_all(&end, sizeof end);
    ++a.rep.syscalls;
    while (!acks.all_acked()) acks.read(true);
  });
}

void rx_worker(WorkerArgs a) {
  run_guarded(a, [&] {
    const Params& p = a.s.p;
    Buffer& dst = a.s.dst[a.c.gpu_slot];
    const std::uint64_t seed = a.s.seed(a.c.c2s, a.c.gpu_slot, a.round);
    std::unique_ptr<Staging> st;
    // Ack one chunk late (so its H2D overlaps the next recv) only when the window
    // leaves room for it: the lagging acks of K sockets must not fill the window.
    const bool lag = p.window > p.sockets_per_channel;
    if (dst.on_gpu()) st = std::make_unique<Staging>(dst.gpu(), p.chunk_bytes, 2);
    auto send_ack = [&](std::uint32_t status) {
      Ack ack{a.round, status};
      a.c.sock.send_all(&ack, sizeof ack);
      ++a.rep.syscalls;
    };
    const std::uint64_t n = chunk_count(p);
    std::size_t j = 0;
    for (;; ++j) {
      ChunkHeader h;
      a.rep.syscalls += a.c.sock.recv_all(&h, sizeof h);
      const std::int64_t t0 = monotonic_ns();
      if (h.round != a.round)
        throw Error("chunk header of round " + std::to_string(h.round) + " in round " + std::to_string(a.round));
      if (h.offset == kEndOfRound && h.length == 0) break;
      const std::uint64_t i = h.offset / p.chunk_bytes;
      if (h.offset % p.chunk_bytes != 0 || i >= n || h.length != chunk_len(p, i))
        throw Error("malformed chunk header (offset " + std::to_string(h.offset) + " length " +
                    std::to_string(h.length) + " for a " + std::to_string(p.size_bytes) + "-byte message in " +
                    std::to_string(p.chunk_bytes) + "-byte chunks)");
      const std::uint64_t off = h.offset, len = h.length;
      const int slot = static_cast<int>(j % 2);
      char* into = st ? st->slot(slot) : dst.data() + a.s.dst_layout.offset(p, a.c.channel, a.c.socket, j, off);
      a.rep.syscalls += a.c.sock.recv_all(into, len);  // with its SO_RCVLOWAT and poll calls
      std::uint32_t status = 0;
      if (p.verify) {
        const std::uint64_t bad = pattern_first_mismatch(into, len, seed, off);
        if (bad != len) {
          send_ack(1);
          throw Error("verify: byte at offset " + std::to_string(off + bad) + " of GPU slot " +
                      std::to_string(a.c.gpu_slot) + " differs from the sender's pattern");
        }
      }
      if (st) {
        st->h2d(slot, dst.data() + off, len);
        if (lag && j > 0) {
          st->wait((slot + 1) % 2);
          send_ack(status);
        } else if (!lag) {
          st->wait(slot);
          send_ack(status);
        }
      } else {
        send_ack(status);
      }
      const std::int64_t t1 = monotonic_ns();
      std::lock_guard lk(a.ch.mu);
      if (a.ch.round_first_ns == 0 || t0 < a.ch.round_first_ns) a.ch.round_first_ns = t0;
      a.ch.round_last_ns = std::max(a.ch.round_last_ns, t1);
      a.ch.round_bytes += len;
    }
    if (st && lag && j > 0) {
      st->wait(static_cast<int>((j - 1) % 2));
      send_ack(0);
      std::lock_guard lk(a.ch.mu);
      a.ch.round_last_ns = std::max(a.ch.round_last_ns, monotonic_ns());
    }
  });
}

void ping_worker(WorkerArgs a) {
  run_guarded(a, [&] {
    const Params& p = a.s.p;
    const std::size_t n = p.size_bytes;
    const std::uint32_t total = p.warmup + p.iters;
    LatencySamples samples(sample_cap(p));  // not a vector of --iters: 10M pings were 80 MB
    const std::uint64_t seed = a.s.seed(true, a.c.gpu_slot, 0);
    for (std::uint32_t i = 0; i < total; ++i) {
      check_stop(a);
      const std::int64_t t0 = monotonic_ns();
      a.c.sock.send_all(a.s.src[a.c.gpu_slot].data(), n);
      a.c.sock.recv_all(a.s.dst[a.c.gpu_slot].data(), n);
      const std::int64_t t1 = monotonic_ns();
      if (i >= p.warmup) samples.push(static_cast<double>(t1 - t0) / 2);
      if (p.verify && pattern_first_mismatch(a.s.dst[a.c.gpu_slot].data(), n, seed) != n)
        throw Error("verify: echoed message differs from the pattern sent");
    }
    std::lock_guard lk(a.ch.mu);
    a.ch.lat_ns.append(samples);
  });
}

void pong_worker(WorkerArgs a) {
  run_guarded(a, [&] {
    const Params& p = a.s.p;
    const std::size_t n = p.size_bytes;
    char* buf = a.s.dst[a.c.gpu_slot].data();
    const std::uint64_t seed = a.s.seed(true, a.c.gpu_slot, 0);
    for (std::uint32_t i = 0; i < p.warmup + p.iters; ++i) {
      a.c.sock.recv_all(buf, n);
      if (p.verify && pattern_first_mismatch(buf, n, seed) != n)
        throw Error("verify: ping message differs from the client's pattern");
      a.c.sock.send_all(buf, n);
    }
  });
}

}  // namespace p2pscope::session
