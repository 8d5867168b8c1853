#pragma once
// Summary statistics over a set of samples. Runners return raw samples; Stats is
// computed once from them; reporters only format.
#include <cstddef>
#include <span>
#include <vector>

namespace p2pscope {

struct Stats {
  std::size_t n = 0;
  double min = 0, max = 0, mean = 0, median = 0;
  double p5 = 0, p95 = 0, p99 = 0;
  double stddev = 0;  // sample standard deviation (n-1); 0 for n < 2
  double cv = 0;      // stddev / mean; 0 when mean is 0
};

// Percentiles use linear interpolation between closest ranks (numpy's default).
// Empty input gives a Stats with n = 0 and all fields 0.
Stats compute_stats(std::span<const double> samples);

// q in [0, 1] over an already sorted vector (non-empty).
double percentile_sorted(std::span<const double> sorted, double q);

}  // namespace p2pscope
