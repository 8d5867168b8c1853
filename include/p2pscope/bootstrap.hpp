#pragma once
// How the processes of one run find each other (DESIGN.md: "the bootstrap (barrier,
// exchange) is an interface with MPI and socket versions").
//
// A run is one process driving every GPU (the default) or N processes launched by
// mpirun, srun or torchrun, one per GPU. The launcher is recognised from the
// environment it sets (detect_launch); the processes then meet over TCP at a
// rendezvous address (rank 0 listens, the others connect), so no MPI library is
// needed at build or run time: `mpirun -np 2 p2pscope bench gpu --backend nccl`
// works with any binary. Every collective call is bounded by a timeout and a peer
// that vanishes turns into an Error naming its rank, never a hang.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "p2pscope/launcher.hpp"

namespace p2pscope {

struct LaunchInfo {
  int rank = 0, size = 1;              // this process among all of the run's processes
  int local_rank = 0, local_size = 1;  // among those on this host (GPU choice)
  std::string launcher = "single";     // "single", "openmpi", "pmi", "slurm", "torchrun"
  std::string rendezvous_host;         // where rank 0 listens; empty: not set
  std::uint16_t rendezvous_port = 0;   // 0: not set
  // Names the job, the same on all of its ranks ("slurm:4242.0", "openmpi:1234",
  // "torchrun:<run id>@host:port"); the rendezvous refuses ranks of another job.
  // Empty: the launcher set nothing that names the job.
  std::string job_id;
  bool multi_process() const { return size > 1; }
};

// Reads the launcher's variables through `getenv` (a test double can replace it): rank
// and size from the launcher table (p2pscope/launcher.hpp: Open MPI, MVAPICH, MPICH/Intel
// MPI, srun, torchrun), and MASTER_ADDR/MASTER_PORT (torchrun).
// The job id is the first of P2PSCOPE_JOB_ID, OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE,
// PMI_KVSNAME, SLURM_JOB_ID(.SLURM_STEP_ID), TORCHELASTIC_RUN_ID(@MASTER_ADDR:MASTER_PORT),
// MASTER_ADDR:MASTER_PORT that is set.
// P2PSCOPE_RENDEZVOUS=HOST:PORT sets the address; else the host is MASTER_ADDR
// (torchrun; its own store holds MASTER_PORT) or, without it, 127.0.0.1 (one host
// assumed), and the port is derived from the job's id, so that two jobs on one host
// do not meet each other. Throws UsageError for
// inconsistent values (rank >= size, junk numbers, several hosts and no address).
LaunchInfo detect_launch(const EnvLookup& getenv_fn);
LaunchInfo detect_launch();  // the real environment

// What crossed this rank's bootstrap sockets so far: the launcher path's cost per op
// (a torchrun campaign ran at 5.5 ops/s when each op took 5 frames per peer and the
// sockets waited on Nagle + delayed ACK). Rank 0 relays, so it counts every peer's frames.
struct BootstrapCounters {
  std::uint64_t collectives = 0;       // allgather + broadcast calls (a barrier is one allgather)
  std::uint64_t frames_sent = 0, frames_received = 0;
  std::uint64_t bytes_sent = 0, bytes_received = 0;  // payload, without the 4-byte length
  std::int64_t collective_ns = 0;      // wall time inside collective calls (waits included)
};

// The exchange primitives every multi-process component needs. All calls are
// collective: every rank makes the same calls in the same order.
class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `mine`, indexed by rank.
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  // allgather where every part is at most max_part_bytes: a larger one is refused with a
  // UsageError naming the rank, its size and `what` belongs there, before it is read
  // whole. For parts of a known bound (bring-up records): without P2PSCOPE_TOKEN a
  // stranger may hold a rank, and its frame then costs no more than a rank's would.
  virtual std::vector<std::string> allgather_bounded(const std::string& mine, std::uint32_t max_part_bytes,
                                                     const std::string& what);
  // Every rank's `mine` on rank 0, indexed by rank; the other ranks get an empty vector.
  // Half an allgather's frames: for results only rank 0 reads (a served op's timing).
  virtual std::vector<std::string> gather(const std::string& mine) {
    auto all = allgather(mine);
    if (rank() != 0) all.clear();
    return all;
  }
  // `data` of rank `root`, returned on every rank (others' `data` is ignored).
  virtual std::string broadcast(int root, const std::string& data) = 0;
  virtual void barrier() { allgather(std::string()); }
  // False once a peer is known to be gone (for watchdogs around long device waits).
  virtual bool peers_alive() { return dead_peer() < 0; }
  // A rank known to be gone (rank 0 sees each peer; a peer sees only rank 0), or -1.
  virtual int dead_peer() { return -1; }
  virtual BootstrapCounters counters() const { return {}; }

  // For runs that go on without a rank that died or hangs (the survey). Rank 0 gets each
  // live rank's `mine` within timeout_s in all, nullopt for a rank that is gone or still
  // silent then; such a rank is dropped, and later calls skip it. The others send
  // `mine` and get an empty vector. Unlike allgather, no rank waits on a dead one.
  virtual std::vector<std::optional<std::string>> gather_live(const std::string& mine, double timeout_s) {
    (void)timeout_s;
    std::vector<std::optional<std::string>> out;
    for (auto& part : gather(mine)) out.emplace_back(std::move(part));
    return out;
  }
  // Rank 0's `data` on every live rank (a rank that cannot be sent to is dropped); the
  // others wait at most timeout_s for it.
  virtual std::string broadcast_live(const std::string& data, double timeout_s) {
    (void)timeout_s;
    return broadcast(0, data);
  }
  // Rank 0: the ranks dropped by gather_live / broadcast_live, each with why.
  virtual std::vector<std::pair<int, std::string>> dropped() const { return {}; }
};

// The one-process bootstrap: rank 0 of 1.
std::unique_ptr<Bootstrap> make_single_bootstrap();

// How rank 0 admits the others (include/p2pscope/auth.hpp says how a secret is proven).
// Rank 0 listens on 0.0.0.0 for runs across hosts, so anyone who can reach the port may
// knock: without a token, a process that knows the protocol and the job id can take a
// rank's place; with one, only holders of the secret are let in.
struct RendezvousOptions {
  std::string job_id;               // every rank must present the same (LaunchInfo::job_id)
  std::optional<std::string> token;  // the shared secret (auth::load_token()); nullopt: none
  // Rank 0: a connection's whole hello must arrive within this (floor 0.1 s), however it
  // trickles; others are served meanwhile.
  double hello_timeout_s = 5;
  // Rank 0: connections mid-hello at once; past it the oldest is closed. 0: max(64, 4*size).
  std::size_t max_pending = 0;
  // Rank 0: one line per refused or dropped connection, on the constructing thread.
  // The library never prints: the CLI passes a writer to stderr.
  std::function<void(const std::string&)> log;
};

// Rank 0 listens on host:port (all of this host's addresses when host is not a loopback
// one) and waits for size-1 peers, serving every pending connection at once (a stalled or
// silent one cannot hold up the others); the others connect, retrying until rank 0 is up.
// Each call waits at most timeout_s for its peers. Throws Error naming the address,
// the rank that failed and why (refused handshake: another program, another
// version, another job, another world size, a duplicate rank, a wrong secret).
std::unique_ptr<Bootstrap> make_tcp_bootstrap(int rank, int size, const std::string& host, std::uint16_t port,
                                              double timeout_s, const RendezvousOptions& options);
// No secret, no job id.
std::unique_ptr<Bootstrap> make_tcp_bootstrap(int rank, int size, const std::string& host, std::uint16_t port,
                                              double timeout_s);

// From detect_launch(): single process, or the TCP rendezvous with the launch's job id
// and the secret of auth::load_token() (P2PSCOPE_TOKEN / P2PSCOPE_TOKEN_FILE; a bad
// token file is a UsageError). timeout_s bounds every collective call (and the meeting
// itself); `log` receives rank 0's refusals (see RendezvousOptions::log).
std::unique_ptr<Bootstrap> make_bootstrap(const LaunchInfo& launch, double timeout_s = 120,
                                          const std::function<void(const std::string&)>& log = {});

}  // namespace p2pscope
