// The host backend: memcpy between NUMA-placed host buffers. No GPU at all, so the
// whole engine (patterns, timing, stats, verification, output) runs in CI.
// Device d is a pair of buffers (send, recv) on NUMA node d % nodes; there are at
// least 2 devices so a one-node machine still has a pair (two buffers on node 0).
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstring>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "p2pscope/backend.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/pattern.hpp"
#include "p2pscope/units.hpp"
#include "transport/host/numa.hpp"
#include "bench/pair_support.hpp"
#include "bench/setup_pacer.hpp"

namespace p2pscope::bench {
namespace {

constexpr int kRoundTripsPerSample = 200;

// Spins on an atomic, yielding after a while so two spinners on a busy 2-core box
// still make progress.
// Returns the value seen: `value`, or `other` when that came first.
std::uint64_t wait_for(const std::atomic<std::uint64_t>& flag, std::uint64_t value, std::uint64_t other = 0) {
  int spins = 0;
  for (;;) {
    const std::uint64_t v = flag.load(std::memory_order_acquire);
    if (v == value || (other != 0 && v == other)) return v;
    if (++spins > 2000) std::this_thread::yield();
  }
}

bool stopped(const BatchSpec& s) { return s.stop != nullptr && s.stop->load(std::memory_order_relaxed); }

class HostBackend final : public Backend {
 public:
  explicit HostBackend(const BackendOptions& opts) : opts_(opts), nodes_(host::numa_nodes()) {}

  std::string name() const override { return "host"; }
  int device_count() const override { return std::max<int>(2, static_cast<int>(nodes_.size())); }
  std::string device_name(int d) const override {
    check_device(d);
    return fmt::format("host buffer on NUMA node {}", node_of(d).id);
  }
  PairSupport support(int src, int dst) const override {
    return distinct_pair(src, dst, [this](int d) { check_device(d); });
  }

  void prepare(const std::vector<int>& devices, std::uint64_t max_bytes) override {
    PrepareSpec spec;
    spec.devices = devices;
    spec.max_bytes = max_bytes;
    prepare_for(spec);
  }

  // A source buffer where a copy starts, a destination where one ends: a one-way pair
  // holds 2 buffers, not 4. Filled in 16 MiB slices by a thread on the buffer's node
  // (first touch places the pages even where mbind was refused), the stop flag read
  // between slices; stopped, every buffer is freed at once.
  bool prepare_for(const PrepareSpec& spec) override {
    const std::uint64_t max_bytes = spec.max_bytes;
    std::set<int> sources, dests;
    for (int d : spec.devices) check_device(d);
    if (spec.copies.empty()) {
      sources.insert(spec.devices.begin(), spec.devices.end());
      dests = sources;
    }
    for (const auto& [s, d] : spec.copies) {
      check_device(s);
      check_device(d);
      sources.insert(s);
      dests.insert(d);
    }
    const std::size_t count = sources.size() + dests.size();
    const std::size_t need = static_cast<std::size_t>(max_bytes) * count;
    const std::size_t avail = host::mem_available_bytes();
    if (avail && need > avail / 10 * 9)
      throw UsageError(fmt::format("host backend needs {} ({} buffers of {}: a source per sending device, a destination "
                                   "per receiving one) but only {} is available; choose smaller --sizes",
                                   format_size(need), count, format_size(max_bytes), format_size(avail)));
    bufs_.clear();  // the last set-up's memory goes before the next is touched
    max_bytes_ = 0;
    bufs_.resize(static_cast<std::size_t>(device_count()));
    std::set<int> node_ids;
    for (int d : sources) node_ids.insert(node_of(d).id);
    for (int d : dests) node_ids.insert(node_of(d).id);
    std::string nodes;
    for (int n : node_ids) nodes += (nodes.empty() ? "" : ", ") + std::to_string(n);
    SetupPacer pacer(spec, need,
                     fmt::format("{} x {} host buffers ({} on NUMA node{} {})", count, format_size(max_bytes),
                                 format_size(need), node_ids.size() > 1 ? "s" : "", nodes));
    std::set<int> all = sources;
    all.insert(dests.begin(), dests.end());
    for (int d : all) {
      Buffers b;
      const auto& node = node_of(d);
      // mmap here (it may throw; it touches nothing), every page touched by the thread.
      if ((b.has_send = sources.count(d) > 0)) b.send = host::NodeBuffer(max_bytes, node.id);
      if ((b.has_recv = dests.count(d) > 0)) b.recv = host::NodeBuffer(max_bytes, node.id);
      bool ok = true;
      std::thread t([&] {
        host::pin_thread(node.cpus);
        if (b.has_send)
          ok = pacer.run(max_bytes, [&](std::uint64_t off, std::uint64_t n) {
            pattern_fill(b.send.data() + off, n, pattern_seed(d), off);
          });
        if (ok && b.has_recv) {
          ok = pacer.run(max_bytes, [&](std::uint64_t off, std::uint64_t n) {
            std::memset(b.recv.data() + off, 0xA5, n);  // poison: not the pattern
          });
        }
      });
      t.join();
      if (!ok) {
        bufs_.clear();
        return false;
      }
      bufs_[static_cast<std::size_t>(d)] = std::move(b);
    }
    max_bytes_ = max_bytes;
    pacer.done();
    return !pacer.stopped();
  }

  BatchResult run_batch(const BatchSpec& s) override {
    BatchResult r;
    if (!start_batch(*this, s, r, [this](int a, int b, std::uint64_t n) { check_prepared(a, b, n); })) return r;
    if (s.pattern != Pattern::unidirectional) check_prepared(s.dst, s.src, s.bytes);  // the way back
    const std::size_t n = s.bytes;
    unsigned char* a_send = buf(s.src).send.data();
    unsigned char* b_recv = buf(s.dst).recv.data();
    if (s.pattern == Pattern::unidirectional) {
      std::thread t([&] {
        host::pin_thread(node_of(s.src).cpus);
        for (int i = 0; i < s.warmup + s.iters && !stopped(s); ++i) {
          const auto t0 = monotonic_ns();
          std::memcpy(b_recv, a_send, n);
          const auto t1 = monotonic_ns();
          if (i >= s.warmup) r.elapsed_ns.push_back(static_cast<double>(t1 - t0));
        }
      });
      t.join();
      r.note = "memcpy, thread on the source node";
    } else if (s.pattern == Pattern::bidirectional) {
      const int total = s.warmup + s.iters;
      std::vector<std::int64_t> start[2], end[2];
      for (auto* v : {&start[0], &start[1], &end[0], &end[1]}) v->resize(static_cast<std::size_t>(total));
      // The barrier's completion reads the stop flag once per round, so both sides
      // agree on the last one.
      bool quit = false;
      int rounds = 0;
      std::barrier sync(2, [&]() noexcept { quit = stopped(s); });
      auto side = [&](int k, int from, int to) {
        host::pin_thread(node_of(from).cpus);
        unsigned char* src = buf(from).send.data();
        unsigned char* dst = buf(to).recv.data();
        for (int i = 0; i < total; ++i) {
          sync.arrive_and_wait();
          if (quit) break;
          if (k == 0) rounds = i + 1;
          start[k][static_cast<std::size_t>(i)] = monotonic_ns();
          std::memcpy(dst, src, n);
          end[k][static_cast<std::size_t>(i)] = monotonic_ns();
        }
      };
      std::thread t0(side, 0, s.src, s.dst), t1(side, 1, s.dst, s.src);
      t0.join();
      t1.join();
      for (int i = s.warmup; i < rounds; ++i) {
        const auto u = static_cast<std::size_t>(i);
        r.elapsed_ns.push_back(static_cast<double>(end[0][u] - start[0][u]));
        r.reverse_elapsed_ns.push_back(static_cast<double>(end[1][u] - start[1][u]));
        r.total_elapsed_ns.push_back(static_cast<double>(std::max(end[0][u], end[1][u]) - std::min(start[0][u], start[1][u])));
      }
      r.note = "two memcpy threads, one per source node";
    } else {
      run_latency(s, r);
    }
    return r;
  }

  OpTiming run_blocking(int src, int dst, std::uint64_t bytes) override {
    const auto sup = support(src, dst);
    if (!sup.ok) throw UsageError(fmt::format("host backend cannot copy {} -> {}: {}", src, dst, sup.reason));
    check_prepared(src, dst, bytes);
    OpTiming t;
    t.host_start_ns = monotonic_ns();
    std::memcpy(buf(dst).recv.data(), buf(src).send.data(), bytes);
    t.host_end_ns = monotonic_ns();
    return t;
  }

  std::int64_t verify(int src, int dst, std::uint64_t bytes) override {
    check_device(src);  // only its pattern's seed is read: it needs no buffer here
    check_prepared(-1, dst, bytes);
    const std::uint64_t bad = pattern_first_mismatch(buf(dst).recv.data(), bytes, pattern_seed(src));
    return bad == bytes ? -1 : static_cast<std::int64_t>(bad);
  }

 private:
  struct Buffers {
    host::NodeBuffer send, recv;
    bool has_send = false, has_recv = false;  // (a 0-byte buffer has no address to test)
  };

  // Ping-pong: the source thread copies the message into the destination's buffer
  // and raises a flag; the destination thread waits, copies its answer back and
  // raises the other flag. One sample = kRoundTripsPerSample round trips / 2.
  // The stop flag is read between round trips (a 64 MiB sample is 200 of them, seconds
  // long); the initiator then sends kQuit instead of the next ping and the sample in
  // progress is dropped.
  void run_latency(const BatchSpec& s, BatchResult& r) {
    constexpr std::uint64_t kQuit = ~std::uint64_t{0};
    alignas(64) std::atomic<std::uint64_t> ping{0};
    alignas(64) std::atomic<std::uint64_t> pong{0};
    const std::size_t n = s.bytes;
    const int total = s.warmup + s.iters;
    std::thread responder([&] {
      host::pin_thread(node_of(s.dst).cpus);
      unsigned char* from = buf(s.dst).send.data();
      unsigned char* to = buf(s.src).recv.data();
      for (std::uint64_t k = 1; k <= static_cast<std::uint64_t>(total) * kRoundTripsPerSample; ++k) {
        if (wait_for(ping, k, kQuit) == kQuit) break;
        std::memcpy(to, from, n);
        pong.store(k, std::memory_order_release);
      }
    });
    std::thread initiator([&] {
      host::pin_thread(node_of(s.src).cpus);
      unsigned char* from = buf(s.src).send.data();
      unsigned char* to = buf(s.dst).recv.data();
      std::uint64_t k = 0;
      for (int i = 0; i < total; ++i) {
        const auto t0 = monotonic_ns();
        for (int j = 0; j < kRoundTripsPerSample; ++j) {
          if (stopped(s)) {
            ping.store(kQuit, std::memory_order_release);
            return;
          }
          ++k;
          std::memcpy(to, from, n);
          ping.store(k, std::memory_order_release);
          wait_for(pong, k);
        }
        const auto t1 = monotonic_ns();
        if (i >= s.warmup) r.elapsed_ns.push_back(static_cast<double>(t1 - t0) / kRoundTripsPerSample / 2.0);
      }
    });
    initiator.join();
    responder.join();
    r.note = fmt::format("ping-pong of two threads on atomic flags, {} round trips per sample, one-way = rtt/2",
                         kRoundTripsPerSample);
    // Each thread is bound to its NUMA node's CPUs, one CPU each only where a node has one:
    // else the two may share a core and the time holds the scheduler's (the headline says so).
    const auto& a = node_of(s.src).cpus;
    const auto& b = node_of(s.dst).cpus;
    if (!(a.size() == 1 && b.size() == 1 && a != b)) r.note += "; " + std::string(kHostThreadsNotPinned);
  }

  void check_device(int d) const {
    if (d < 0 || d >= device_count())
      throw UsageError(fmt::format("host device {} does not exist: there are {} (0-{}), one per NUMA node, at least 2",
                                   d, device_count(), device_count() - 1));
  }
  const host::NumaNode& node_of(int d) const { return nodes_[static_cast<std::size_t>(d) % nodes_.size()]; }
  Buffers& buf(int d) { return bufs_[static_cast<std::size_t>(d)]; }
  // src -1: only the destination's buffer is needed (verify).
  void check_prepared(int src, int dst, std::uint64_t bytes) {
    if (src >= 0) check_device(src);
    check_device(dst);
    const auto missing = [this](int d, bool send) {
      return static_cast<std::size_t>(d) >= bufs_.size() || !(send ? buf(d).has_send : buf(d).has_recv);
    };
    if ((src >= 0 && missing(src, true)) || missing(dst, false))
      throw UsageError(src < 0 ? fmt::format("host device {} has no destination buffer: call prepare() with it first", dst)
                               : fmt::format("host copy {} -> {} was not prepared: call prepare() with both devices (or "
                                             "prepare_for() with this copy) first", src, dst));
    if (bytes > max_bytes_)
      throw UsageError(fmt::format("{} is more than the {} prepared", format_size(bytes), format_size(max_bytes_)));
  }

  BackendOptions opts_;
  std::vector<host::NumaNode> nodes_;
  std::vector<Buffers> bufs_;
  std::uint64_t max_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const BackendOptions& opts) { return std::make_unique<HostBackend>(opts); }

}  // namespace p2pscope::bench
