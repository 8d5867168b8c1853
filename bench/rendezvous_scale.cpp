// How long N ranks take to meet at the rendezvous and make their first allgather, as
// the survey's start does, over 127.0.0.1, each rank with its own socket, rank 0 admitting
// all of them with the shared secret (bench/rendezvous_scale.sh). The ranks are threads of
// one process, or with "processes" real processes (forked from this one, before any thread
// is made: what a launcher's start costs on top is the launcher's).
// Prints one line: ranks, how, meet seconds (last rank admitted), allgather seconds, failures.
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "p2pscope/bootstrap.hpp"
#include "p2pscope/clock.hpp"

namespace {

// The figures every rank writes: in memory the forked processes share with this one.
struct Shared {
  std::atomic<std::int64_t> met_last{0}, gathered_last{0};
  std::atomic<int> failed{0};
};

void raise_to(std::int64_t v, std::atomic<std::int64_t>& last) {
  for (std::int64_t cur = last.load(); v > cur && !last.compare_exchange_weak(cur, v);) {
  }
}

void one_rank(int r, int n, int port, std::int64_t t0, Shared& s) {
  p2pscope::RendezvousOptions o;
  o.job_id = "bench-rendezvous";
  o.token = "bench-secret";
  try {
    auto boot = p2pscope::make_tcp_bootstrap(r, n, "127.0.0.1", static_cast<std::uint16_t>(port), 120, o);
    raise_to(p2pscope::monotonic_ns() - t0, s.met_last);
    const auto all = boot->allgather(std::string(100, 'x'));  // a host description's size
    raise_to(p2pscope::monotonic_ns() - t0, s.gathered_last);
    if (static_cast<int>(all.size()) != n) s.failed.fetch_add(1);
  } catch (const std::exception& e) {
    if (s.failed.fetch_add(1) < 3) std::fprintf(stderr, "rank %d: %s\n", r, e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int port = argc > 2 ? std::atoi(argv[2]) : 29911;
  const bool processes = argc > 3 && std::string(argv[3]) == "processes";
  // Every rank's socket, and rank 0's one per peer, in this one process.
  rlimit fds{};
  getrlimit(RLIMIT_NOFILE, &fds);
  fds.rlim_cur = std::min<rlim_t>(fds.rlim_max, static_cast<rlim_t>(4 * n + 256));
  setrlimit(RLIMIT_NOFILE, &fds);
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 2;
  Shared& s = *new (mem) Shared;
  const std::int64_t t0 = p2pscope::monotonic_ns();
  if (processes) {
    std::vector<pid_t> pids;
    for (int r = 0; r < n; ++r) {
      const pid_t pid = fork();
      if (pid == 0) {
        one_rank(r, n, port, t0, s);
        std::fflush(nullptr);
        _exit(0);
      }
      if (pid < 0) {
        s.failed.fetch_add(n - r);
        std::perror("fork");
        break;
      }
      pids.push_back(pid);
    }
    for (pid_t p : pids) {
      int status = 0;
      waitpid(p, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) s.failed.fetch_add(1);
    }
  } else {
    std::vector<std::thread> ranks;
    for (int r = 0; r < n; ++r) ranks.emplace_back([&, r] { one_rank(r, n, port, t0, s); });
    for (auto& t : ranks) t.join();
  }
  std::printf("ranks %d (%s)  met %.2f s  first allgather done %.2f s  failed %d\n", n,
              processes ? "processes" : "threads", s.met_last.load() / 1e9, s.gathered_last.load() / 1e9,
              s.failed.load());
  return s.failed.load() == 0 ? 0 : 1;
}
