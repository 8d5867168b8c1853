// How long N ranks take to meet at the rendezvous and make their first allgather, as
// the survey's start does: ranks as threads of one process over 127.0.0.1, each with its
// own socket, rank 0 admitting all of them with the shared secret (bench/rendezvous_scale.sh).
// Prints one line: ranks, meet seconds (last rank admitted), allgather seconds, total.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "p2pscope/bootstrap.hpp"
#include "p2pscope/clock.hpp"

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int port = argc > 2 ? std::atoi(argv[2]) : 29911;
  // Every rank's socket, and rank 0's one per peer, in this one process.
  rlimit fds{};
  getrlimit(RLIMIT_NOFILE, &fds);
  fds.rlim_cur = std::min<rlim_t>(fds.rlim_max, static_cast<rlim_t>(4 * n + 256));
  setrlimit(RLIMIT_NOFILE, &fds);
  p2pscope::RendezvousOptions o;
  o.job_id = "bench-rendezvous";
  o.token = "bench-secret";
  std::atomic<std::int64_t> met_last{0}, gathered_last{0};
  std::atomic<int> failed{0};
  const std::int64_t t0 = p2pscope::monotonic_ns();
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      try {
        auto boot = p2pscope::make_tcp_bootstrap(r, n, "127.0.0.1", static_cast<std::uint16_t>(port), 120, o);
        const std::int64_t met = p2pscope::monotonic_ns() - t0;
        for (std::int64_t v = met_last.load(); met > v && !met_last.compare_exchange_weak(v, met);) {}
        const auto all = boot->allgather(std::string(100, 'x'));  // a host description's size
        const std::int64_t g = p2pscope::monotonic_ns() - t0;
        for (std::int64_t v = gathered_last.load(); g > v && !gathered_last.compare_exchange_weak(v, g);) {}
        if (static_cast<int>(all.size()) != n) failed.fetch_add(1);
      } catch (const std::exception& e) {
        if (failed.fetch_add(1) < 3) std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
    });
  for (auto& t : ranks) t.join();
  std::printf("ranks %d  met %.2f s  first allgather done %.2f s  failed %d\n", n, met_last.load() / 1e9,
              gathered_last.load() / 1e9, failed.load());
  return failed.load() == 0 ? 0 : 1;
}
