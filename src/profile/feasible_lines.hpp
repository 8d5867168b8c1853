#pragma once
// Every line a set of clock readings allows, as a convex polygon. A line maps host time
// to device time: device = c + (1 + u) * host (both relative to a reference point; c in
// ns, u the rate error, ~1e-6). Each reading says the line passes below one point and
// above another (the device read lies after the host's poke and before its answer), a
// half-plane in (c, u); an op's stamps add two more. Intersecting them all leaves the
// lines that no reading contradicts, jointly over offset and rate: the bound on a
// mapped time then holds without assuming the fitted rate is right.
#include <array>
#include <vector>

namespace p2pscope::profile {

class FeasibleLines {
 public:
  FeasibleLines() = default;
  // Every line with c in [c_lo, c_hi] and u in [u_lo, u_hi].
  FeasibleLines(double c_lo, double c_hi, double u_lo, double u_hi);

  bool empty() const { return v_.size() < 3; }
  // Keeps the lines with device(host_x) <= device_y (below) or >= device_y (above).
  // Returns false, and keeps the set as it was, when none would be left.
  bool keep_below(double host_x, double device_y) { return clip(1, host_x, device_y - host_x); }
  bool keep_above(double host_x, double device_y) { return clip(-1, -host_x, host_x - device_y); }

  // The device times the lines give at host_x: [min, max].
  std::array<double, 2> device_range(double host_x) const;
  // The host times at which the lines reach device_y: [min, max].
  std::array<double, 2> host_range(double device_y) const;
  // How far below device_y the lowest line stays at host_x (> 0: every line passes
  // above the point, so keep_below would empty the set), and the mirror for above.
  double excess_below(double host_x, double device_y) const { return device_range(host_x)[0] - device_y; }
  double excess_above(double host_x, double device_y) const { return device_y - device_range(host_x)[1]; }
  void shift_c(double delta);  // every line moved by delta on the device axis
  const std::vector<std::array<double, 2>>& vertices() const { return v_; }

 private:
  bool clip(double a, double b, double rhs);  // keeps a*c + b*u <= rhs
  std::vector<std::array<double, 2>> v_;       // (c, u), counter-clockwise
};

}  // namespace p2pscope::profile
