#pragma once
// A GPU timer mapped onto the host clock piece by piece. The timer's rate against the
// host's is not constant over minutes (on an H100 it went from -6.83 to -6.42 ppm over a
// two-minute campaign), so a single line over the whole campaign misses by microseconds
// in its middle even where every sync reading is tight. The campaign therefore takes a
// short burst of pokes every ~0.25 s while it measures; each stretch between two bursts
// gets its own set of lines, fitted to the readings within about a second of it, with
// its own bounds (drift.hpp). Over such a window the rate is constant to a few ppb, so
// a line holds to nanoseconds and the bound is set by the pokes' PCIe round trips.
#include <cstdint>
#include <vector>

#include "profile/drift.hpp"

namespace p2pscope::profile {

struct ClockMap {
  struct Piece {
    std::int64_t from_host_ns = 0;  // the piece covers host times from here to the next piece
    std::int64_t burst_ns = 0, next_burst_ns = 0;  // the sync bursts it lies between
    DriftFit fit;
    double uncertainty_ns() const { return fit.uncertainty_over(burst_ns, next_burst_ns); }
  };
  std::vector<Piece> pieces;  // sorted by from_host_ns; the first also covers earlier times
  // The largest bound over the pieces that hold logged ops (set by the alignment; 0:
  // not known, uncertainty_max_ns() then stands in).
  double ops_bound_ns = 0;

  bool ok() const { return !pieces.empty(); }
  std::size_t piece_index(std::int64_t host_ns) const;
  const Piece& at(std::int64_t host_ns) const { return pieces[piece_index(host_ns)]; }
  // Host time of a device stamp taken near host time `host_hint_ns` (the op's host issue).
  double host_of_device(std::int64_t host_hint_ns, std::int64_t device_ns) const {
    return at(host_hint_ns).fit.host_of_device(device_ns);
  }
  double uncertainty_max_ns() const;

  static ClockMap one_line(const DriftFit& fit);  // a single piece: the whole-campaign line
};

// Groups `pts` into bursts (readings less than 1 ms apart; with `op_host_ns`, the ops'
// host times, bursts with no op from the first's start to the next's count as one), makes one piece per gap
// between bursts, and fits each to the readings of the bursts within `reach_ns` of it.
// Windows shorter than 10 ms give no usable least-squares slope (fitted with slope 1);
// their bounds still allow any rate the readings do.
ClockMap build_clock_map(std::vector<TimerPoint> pts, std::int64_t step_ns, std::int64_t reach_ns = 1'000'000'000,
                         const std::vector<std::int64_t>* op_host_ns = nullptr);

}  // namespace p2pscope::profile
