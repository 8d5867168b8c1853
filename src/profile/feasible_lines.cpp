#include "profile/feasible_lines.hpp"

#include <algorithm>
#include <cmath>

namespace p2pscope::profile {

FeasibleLines::FeasibleLines(double c_lo, double c_hi, double u_lo, double u_hi)
    : v_{{c_lo, u_lo}, {c_hi, u_lo}, {c_hi, u_hi}, {c_lo, u_hi}} {}

bool FeasibleLines::clip(double a, double b, double rhs) {
  if (empty()) return false;
  // Sutherland-Hodgman against one half-plane. The rate axis is ~1e-6 and the offset
  // axis ~1e3, but b (a host time) carries the scale: f is in ns either way.
  std::vector<std::array<double, 2>> out;
  out.reserve(v_.size() + 1);
  const auto f = [&](const std::array<double, 2>& p) { return a * p[0] + b * p[1] - rhs; };
  for (std::size_t i = 0; i < v_.size(); ++i) {
    const auto& p = v_[i];
    const auto& q = v_[(i + 1) % v_.size()];
    const double fp = f(p), fq = f(q);
    if (fp <= 0) out.push_back(p);
    if ((fp < 0 && fq > 0) || (fp > 0 && fq < 0)) {
      const double t = fp / (fp - fq);
      out.push_back({p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])});
    }
  }
  if (out.size() < 3) return false;
  v_ = std::move(out);
  return true;
}

std::array<double, 2> FeasibleLines::device_range(double host_x) const {
  std::array<double, 2> r{INFINITY, -INFINITY};
  for (const auto& p : v_) {
    const double y = p[0] + host_x + p[1] * host_x;
    r[0] = std::min(r[0], y);
    r[1] = std::max(r[1], y);
  }
  return r;
}

std::array<double, 2> FeasibleLines::host_range(double device_y) const {
  std::array<double, 2> r{INFINITY, -INFINITY};
  for (const auto& p : v_) {
    const double x = (device_y - p[0]) / (1 + p[1]);
    r[0] = std::min(r[0], x);
    r[1] = std::max(r[1], x);
  }
  return r;
}

void FeasibleLines::shift_c(double delta) {
  for (auto& p : v_) p[0] += delta;
}

}  // namespace p2pscope::profile
