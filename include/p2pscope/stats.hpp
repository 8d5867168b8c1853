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

// q in [0, 1] over an already sorted vector; 0 when empty.
double percentile_sorted(std::span<const double> sorted, double q);

// The one median and percentile of unsorted samples (a sorted copy is made): an even
// count averages the two middle values, like Stats::median; empty input gives NaN
// (no value, shown as n/a), never a 0 that reads as a measurement.
double median(std::span<const double> samples);
double percentile(std::span<const double> samples, double q);

}  // namespace p2pscope
