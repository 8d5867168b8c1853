// run_sweep: the engine over a grid of points, each repeated (sweep.hpp). The loop used
// to live in the CLI, where a bad point was only found when the sweep reached it.
#include "transport/tcp/sweep.hpp"

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tcp {
namespace {

Params params_at(const Params& base, const SweepPoint& pt) {
  Params p = base;
  p.channels = pt.channels;
  p.chunk_bytes = pt.chunk_bytes;
  p.window = pt.window;
  p.sockets_per_channel = pt.sockets_per_channel;
  return p;
}

std::string point_text(const SweepPoint& pt, int rep) {
  return fmt::format("channels {} chunk {} window {} sockets {} rep {}", pt.channels,
                     format_size_compact(pt.chunk_bytes), pt.window, pt.sockets_per_channel, rep);
}

SweepRun run_of(const SweepPoint& pt, int rep, const Results& r) {
  SweepRun run;
  run.point = pt;
  run.rep = rep;
  run.bytes_per_s = r.client.rx_bytes_per_s + r.server.rx_bytes_per_s;
  run.client_tx_bytes_per_s = r.client.tx_bytes_per_s;
  run.server_rx_bytes_per_s = r.server.rx_bytes_per_s;
  run.client_rx_bytes_per_s = r.client.rx_bytes_per_s;
  run.server_tx_bytes_per_s = r.server.tx_bytes_per_s;
  return run;
}

void check_spec(const SweepSpec& s) {
  if (s.reps < 1 || s.reps > 1000) throw UsageError("--reps must be in 1-1000");
  if (s.channels.empty() || s.chunks.empty() || s.windows.empty() || s.sockets_per_channel.empty())
    throw UsageError("sweep: every list (channels, chunks, windows, sockets) needs at least one value");
}

}  // namespace

std::map<SweepPoint, std::vector<double>> SweepResult::samples() const {
  std::map<SweepPoint, std::vector<double>> out;
  for (const auto& r : runs) out[r.point].push_back(r.bytes_per_s);
  return out;
}

std::optional<std::pair<SweepPoint, Stats>> SweepResult::best() const {
  std::optional<std::pair<SweepPoint, Stats>> best;
  for (const auto& [pt, v] : samples())
    if (const Stats s = compute_stats(v); !best || s.median > best->second.median) best.emplace(pt, s);
  return best;
}

std::optional<std::pair<SweepPoint, Stats>> SweepResult::runner_up() const {
  const auto top = best();
  std::optional<std::pair<SweepPoint, Stats>> next;
  for (const auto& [pt, v] : samples())
    if (const Stats s = compute_stats(v); !(pt == top->first) && (!next || s.median > next->second.median))
      next.emplace(pt, s);
  return next;
}

bool separable(const Stats& best, const Stats& next) { return best.n > 1 && next.n > 1 && best.min > next.max; }

std::vector<SweepPoint> sweep_grid(const SweepSpec& s) {
  std::vector<SweepPoint> grid;
  for (std::uint32_t c : s.channels)
    for (std::uint64_t chunk : s.chunks)
      for (std::uint32_t w : s.windows)
        for (std::uint32_t k : s.sockets_per_channel) grid.push_back({c, chunk, w, k});
  return grid;
}

Results run_point(const std::vector<std::string>& servers, std::uint16_t port, const LocalOptions& local,
                  const std::optional<std::string>& token, const Params& p) {
  if (servers.empty()) return run_loopback(p, local, local);
  ClientOptions co;
  co.hosts = servers;
  co.port = port;
  co.local = local;
  co.token = token;
  return run_client(co, p);
}

SweepResult run_sweep(const SweepSpec& spec) {
  check_spec(spec);
  SweepResult res;
  res.grid = sweep_grid(spec);
  res.reps = spec.reps;
  for (const auto& pt : res.grid) validate(params_at(spec.base, pt));  // a bad point is said before any run
  const std::size_t planned = res.grid.size() * static_cast<std::size_t>(spec.reps);
  for (const auto& pt : res.grid)
    for (int rep = 0; rep < spec.reps; ++rep) {
      if (spec.stop && spec.stop->load()) {
        res.interrupted = true;
        res.stopped = "interrupted before " + point_text(pt, rep);
        return res;
      }
      Results r;
      try {
        r = run_point(spec.servers, spec.port, spec.local, spec.token, params_at(spec.base, pt));
        if (!r.failure.empty()) throw Error(r.failure);  // a failed point measured nothing whole
      } catch (const std::exception& e) {
        if (res.runs.empty()) throw;  // nothing measured yet: the plain error says it all
        res.stopped = "stopped at " + point_text(pt, rep) + ": " + e.what();
        return res;
      }
      res.runs.push_back(run_of(pt, rep, r));
      if (spec.on_run) spec.on_run(res.runs.size(), planned, res.runs.back());
    }
  return res;
}

}  // namespace p2pscope::tcp
