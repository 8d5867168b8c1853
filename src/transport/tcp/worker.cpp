#include "transport/tcp/worker.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>

#include "p2pscope/affinity.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"
#include "transport/tcp/protocol.hpp"

namespace p2pscope::tcp {
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
template <class F>
void guarded(WorkerArgs& a, F&& body) {
  const double cpu0 = thread_cpu_s();
  try {
    pin_self(a.cpus, a.s.allowed_cpus, a.rep);
    if (a.s.p.mem == MemKind::gpu) Staging::set_device(a.s.p.gpus[a.c.gpu_slot]);
    body();
  } catch (const std::exception& e) {
    a.ctl.fail(where(a) + ": " + e.what());
  }
  a.rep.cpu_time_s += thread_cpu_s() - cpu0;
}

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

void RoundCtl::fail(const std::string& msg) noexcept {
  std::lock_guard lk(mu);
  if (failed.exchange(true)) return;  // keep the first (root) cause
  error = msg;
  for (Socket* s : socks) s->shutdown();
}

std::vector<std::uint64_t> chunks_of(const Params& p, std::uint32_t channel, std::uint32_t socket) {
  std::vector<std::uint64_t> out;
  const std::uint64_t n = (p.size_bytes + p.chunk_bytes - 1) / p.chunk_bytes;
  std::uint64_t j = 0;  // index within the channel
  for (std::uint64_t i = channel; i < n; i += p.channels, ++j)
    if (j % p.sockets_per_channel == socket) out.push_back(i);
  return out;
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

void tx_worker(WorkerArgs a) {
  guarded(a, [&] {
    const Params& p = a.s.p;
    const auto chunks = chunks_of(p, a.c.channel, a.c.socket);
    const Buffer& src = a.s.src[a.c.gpu_slot];
    std::unique_ptr<Staging> st;
    const int slots = static_cast<int>(std::min<std::size_t>(4, chunks.size()));
    if (src.on_gpu() && slots > 0) {
      st = std::make_unique<Staging>(src.gpu(), p.chunk_bytes, slots);
      for (int k = 0; k < slots; ++k)
        st->d2h(k, src.data() + chunks[static_cast<std::size_t>(k)] * p.chunk_bytes, chunk_len(p, chunks[static_cast<std::size_t>(k)]));
    }
    for (std::size_t j = 0; j < chunks.size(); ++j) {
      if (!acquire_slot(a)) return;
      const std::uint64_t off = chunks[j] * p.chunk_bytes, len = chunk_len(p, chunks[j]);
      const char* data = src.data() + a.s.src_layout.offset(p, a.c.channel, a.c.socket, j, off);
      const int slot = static_cast<int>(j % static_cast<std::size_t>(std::max(slots, 1)));
      if (st) {
        st->wait(slot);
        data = st->slot(slot);
      }
      const std::uint32_t occ = a.ch.in_flight.fetch_add(1) + 1;
      const std::int64_t t = monotonic_ns();
      a.c.send_ns[j].store(t, std::memory_order_relaxed);  // read by ack_worker (acks are FIFO per socket)
      {
        std::lock_guard lk(a.ch.mu);
        if (a.timed) {
          a.ch.occ_sum += occ;
          ++a.ch.occ_n;
          a.ch.occ_max = std::max(a.ch.occ_max, occ);
        }
        if (a.ch.round_first_ns == 0 || t < a.ch.round_first_ns) a.ch.round_first_ns = t;
      }
      ChunkHeader h{off, static_cast<std::uint32_t>(len), a.round};
      a.c.sock.send_two(&h, sizeof h, data, len);
      if (st && j + static_cast<std::size_t>(slots) < chunks.size()) {
        const std::uint64_t nx = chunks[j + static_cast<std::size_t>(slots)];
        st->d2h(slot, src.data() + nx * p.chunk_bytes, chunk_len(p, nx));
      }
    }
  });
}

void ack_worker(WorkerArgs a) {
  guarded(a, [&] {
    const auto n = chunks_of(a.s.p, a.c.channel, a.c.socket).size();
    for (std::size_t j = 0; j < n; ++j) {
      Ack ack;
      a.c.sock.recv_all(&ack, sizeof ack);
      const std::int64_t t = monotonic_ns();
      if (ack.status != 0) throw Error("receiver reports a verify mismatch (see the peer's message)");
      if (ack.round != a.round) throw Error("ack for round " + std::to_string(ack.round) + " in round " + std::to_string(a.round));
      a.ch.in_flight.fetch_sub(1);
      a.ch.permits.release();
      const std::int64_t sent = a.c.send_ns[j].load(std::memory_order_relaxed);
      std::lock_guard lk(a.ch.mu);
      if (a.timed) a.ch.lat_ns.push_back(static_cast<double>(t - sent));
      a.ch.round_last_ns = std::max(a.ch.round_last_ns, t);
    }
  });
}

void rx_worker(WorkerArgs a) {
  guarded(a, [&] {
    const Params& p = a.s.p;
    const auto chunks = chunks_of(p, a.c.channel, a.c.socket);
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
    };
    for (std::size_t j = 0; j < chunks.size(); ++j) {
      const std::uint64_t off = chunks[j] * p.chunk_bytes, len = chunk_len(p, chunks[j]);
      ChunkHeader h;
      a.c.sock.recv_all(&h, sizeof h);
      const std::int64_t t0 = monotonic_ns();
      if (h.offset != off || h.length != len || h.round != a.round)
        throw Error("malformed or out-of-order chunk header (offset " + std::to_string(h.offset) + " length " +
                    std::to_string(h.length) + " round " + std::to_string(h.round) + "; expected offset " +
                    std::to_string(off) + " length " + std::to_string(len) + " round " + std::to_string(a.round) + ")");
      const int slot = static_cast<int>(j % 2);
      char* into = st ? st->slot(slot) : dst.data() + a.s.dst_layout.offset(p, a.c.channel, a.c.socket, j, off);
      a.c.sock.recv_all(into, len);
      std::uint32_t status = 0;
      if (p.verify) {
        const std::uint64_t bad = check_pattern(into, off, len, seed);
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
    }
    if (st && lag && !chunks.empty()) {
      st->wait(static_cast<int>((chunks.size() - 1) % 2));
      send_ack(0);
      std::lock_guard lk(a.ch.mu);
      a.ch.round_last_ns = std::max(a.ch.round_last_ns, monotonic_ns());
    }
  });
}

void ping_worker(WorkerArgs a) {
  guarded(a, [&] {
    const Params& p = a.s.p;
    const std::size_t n = p.size_bytes;
    const std::uint32_t total = p.warmup + p.iters;
    std::vector<double> samples;
    samples.reserve(p.iters);
    const std::uint64_t seed = a.s.seed(true, a.c.gpu_slot, 0);
    for (std::uint32_t i = 0; i < total; ++i) {
      const std::int64_t t0 = monotonic_ns();
      a.c.sock.send_all(a.s.src[a.c.gpu_slot].data(), n);
      a.c.sock.recv_all(a.s.dst[a.c.gpu_slot].data(), n);
      const std::int64_t t1 = monotonic_ns();
      if (i >= p.warmup) samples.push_back(static_cast<double>(t1 - t0) / 2);
      if (p.verify && check_pattern(a.s.dst[a.c.gpu_slot].data(), 0, n, seed) != n)
        throw Error("verify: echoed message differs from the pattern sent");
    }
    std::lock_guard lk(a.ch.mu);
    a.ch.lat_ns.insert(a.ch.lat_ns.end(), samples.begin(), samples.end());
  });
}

void pong_worker(WorkerArgs a) {
  guarded(a, [&] {
    const Params& p = a.s.p;
    const std::size_t n = p.size_bytes;
    char* buf = a.s.dst[a.c.gpu_slot].data();
    const std::uint64_t seed = a.s.seed(true, a.c.gpu_slot, 0);
    for (std::uint32_t i = 0; i < p.warmup + p.iters; ++i) {
      a.c.sock.recv_all(buf, n);
      if (p.verify && check_pattern(buf, 0, n, seed) != n)
        throw Error("verify: ping message differs from the client's pattern");
      a.c.sock.send_all(buf, n);
    }
  });
}

}  // namespace p2pscope::tcp
