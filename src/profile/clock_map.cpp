#include "profile/clock_map.hpp"

#include <algorithm>
#include <cmath>

namespace p2pscope::profile {

std::size_t ClockMap::piece_index(std::int64_t host_ns) const {
  // The last piece whose start is at or before host_ns (the first for earlier times).
  const auto it = std::upper_bound(pieces.begin(), pieces.end(), host_ns,
                                   [](std::int64_t h, const Piece& p) { return h < p.from_host_ns; });
  return it == pieces.begin() ? 0 : static_cast<std::size_t>(it - pieces.begin() - 1);
}

double ClockMap::uncertainty_max_ns() const {
  double u = 0;
  for (const auto& p : pieces) u = std::max(u, p.uncertainty_ns());
  return u;
}

ClockMap ClockMap::one_line(const DriftFit& fit) {
  ClockMap m;
  if (fit.ok) m.pieces.push_back({INT64_MIN, fit.span_from_ns, fit.span_to_ns, fit});
  return m;
}

namespace {
struct Burst {
  std::size_t first = 0, last = 0;  // indices into the sorted points, inclusive
  std::int64_t from = 0, to = 0;    // host times
};
}  // namespace

ClockMap build_clock_map(std::vector<TimerPoint> pts, std::int64_t step_ns, std::int64_t reach_ns,
                         const std::vector<std::int64_t>* op_host_ns) {
  ClockMap m;
  if (pts.empty()) return m;
  std::sort(pts.begin(), pts.end(), [](const TimerPoint& a, const TimerPoint& b) { return a.host_ns < b.host_ns; });
  // A burst: readings less than 1 ms apart. Bursts with no op since the first's start are one:
  // a drift window pokes every 1/200 of its length (5 ms for 1 s), and with its 200
  // rounds as bursts of their own each got a piece fitted to every reading within a
  // second, 376 pieces that held no op: 1.2 s of a 7 s campaign on 4 x H200.
  std::vector<std::int64_t> ops;
  if (op_host_ns) ops = *op_host_ns;
  std::sort(ops.begin(), ops.end());
  const auto op_between = [&](std::int64_t from, std::int64_t to) {
    const auto it = std::upper_bound(ops.begin(), ops.end(), from);
    return it != ops.end() && *it < to;
  };
  std::vector<Burst> bursts;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const bool apart = !bursts.empty() && pts[i].host_ns - bursts.back().to > 1'000'000;
    if (bursts.empty() || (apart && (!op_host_ns || op_between(bursts.back().from, pts[i].host_ns))))
      bursts.push_back({i, i, pts[i].host_ns, pts[i].host_ns});
    bursts.back().last = i;
    bursts.back().to = pts[i].host_ns;
  }
  for (std::size_t k = 0; k < bursts.size(); ++k) {
    // The piece runs from burst k to burst k+1 (the last one to the end of time).
    const std::int64_t piece_from = bursts[k].from;
    const std::int64_t piece_to = k + 1 < bursts.size() ? bursts[k + 1].from : bursts[k].to;
    std::size_t lo = k, hi = std::min(k + 1, bursts.size() - 1);
    while (lo > 0 && bursts[lo - 1].to >= piece_from - reach_ns) --lo;
    while (hi + 1 < bursts.size() && bursts[hi + 1].from <= piece_to + reach_ns) ++hi;
    const std::vector<TimerPoint> window(pts.begin() + static_cast<long>(bursts[lo].first),
                                         pts.begin() + static_cast<long>(bursts[hi].last) + 1);
    const bool short_window = bursts[hi].to - bursts[lo].from < 10'000'000;
    ClockMap::Piece piece;
    piece.from_host_ns = k == 0 ? INT64_MIN : piece_from;
    piece.burst_ns = piece_from;
    piece.next_burst_ns = piece_to;
    piece.fit = fit_timer_points(window, short_window, step_ns);
    if (piece.fit.ok) m.pieces.push_back(piece);
  }
  return m;
}

}  // namespace p2pscope::profile
