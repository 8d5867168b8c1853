#pragma once
// `sweep tcp` / `sweep net` as data, the shape of bench/sweep.hpp: a spec in (the
// engine's parameters, a grid of channels x chunk x window x sockets, repetitions, a
// stop flag, a progress callback), every run out in order, the best point by median.
// Nothing here prints or writes files: the CLI renders sweep.csv, heatmap.svg and
// best.json from the result.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "p2pscope/stats.hpp"
#include "p2pscope/tcp.hpp"

namespace p2pscope::tcp {

struct SweepPoint {
  std::uint32_t channels = 1;
  std::uint64_t chunk_bytes = 1;
  std::uint32_t window = 1, sockets_per_channel = 1;
  auto operator<=>(const SweepPoint&) const = default;
};

// One measurement of one point. Rates in bytes per second.
struct SweepRun {
  SweepPoint point;
  int rep = 0;
  double bytes_per_s = 0;  // what arrived: the receivers' rates summed (both directions for bidir)
  double client_tx_bytes_per_s = 0, server_rx_bytes_per_s = 0, client_rx_bytes_per_s = 0, server_tx_bytes_per_s = 0;
};

struct SweepSpec {
  Params base;                       // every other engine parameter (mode, memory, size, iterations...)
  LocalOptions local;                // this side: NICs, bindings, data path (sockets or a net plugin)
  std::vector<std::string> servers;  // empty: client and server in this process over loopback
  std::uint16_t port = 18515;
  std::optional<std::string> token;  // the shared secret for servers (auth::load_token())
  std::vector<std::uint32_t> channels, windows, sockets_per_channel;
  std::vector<std::uint64_t> chunks;
  int reps = 3;  // runs per point, 1-1000
  // Polled before each run: once set, the sweep ends there with the runs measured.
  const std::atomic<bool>* stop = nullptr;
  // After each run (progress, a file rewritten as it grows); may be empty.
  std::function<void(std::size_t done, std::size_t planned, const SweepRun& run)> on_run;
};

struct SweepResult {
  std::vector<SweepPoint> grid;  // every point planned, in the order run
  int reps = 0;
  std::vector<SweepRun> runs;  // in the order measured
  // Why the sweep ended early ("" when it ran to the end): a run that fails after the
  // first keeps the runs measured, and the caller reports them and then fails.
  std::string stopped;
  bool interrupted = false;                                   // ended by SweepSpec::stop (stopped says where)
  std::map<SweepPoint, std::vector<double>> samples() const;  // bytes_per_s per point measured
  // The point with the highest median and its Stats; nullopt when nothing was measured.
  std::optional<std::pair<SweepPoint, Stats>> best() const;
  // The point with the next highest median; nullopt with fewer than two points.
  std::optional<std::pair<SweepPoint, Stats>> runner_up() const;
};

// Whether `best` beats `next` beyond the noise: its slowest repetition is faster than
// the other's fastest. With the few repetitions a sweep takes (2-5) the ranges are the
// distribution-free 95 % intervals of the medians, so overlapping ranges mean the order
// of the two could be the jitter's; one repetition each gives no interval (false).
bool separable(const Stats& best, const Stats& next);

// channels x chunks x windows x sockets, in that nesting order.
std::vector<SweepPoint> sweep_grid(const SweepSpec& spec);
// One measurement: as the client of `servers`, or over loopback in this process when
// there are none (both sides then use `local`).
Results run_point(const std::vector<std::string>& servers, std::uint16_t port, const LocalOptions& local,
                  const std::optional<std::string>& token, const Params& p);
// Checks every point's parameters first (UsageError naming the bad one), then runs
// each point reps times. The first run's error is thrown as it is; a later one ends
// the sweep with `stopped`.
SweepResult run_sweep(const SweepSpec& spec);

}  // namespace p2pscope::tcp
