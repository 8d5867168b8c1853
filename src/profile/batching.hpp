#pragma once
// Batch timing for the campaign: a sample times `batch` transfers back to back,
// enough that it spans a minimum time (--min-sample-time), so a transfer of a few
// microseconds is not timed by one event pair whose resolution (0.5 us) and launch
// jitter are as large as it. The batch is sized during warmup from the transfer's
// own time (campaign.cpp: first alone, then from the batch). Seed 004's
// one-blocking-op-per-record method stays as timing "single".
#include <string>

#include "p2pscope/profile.hpp"

namespace p2pscope::profile {

std::string to_string(Timing t);
Timing parse_timing(const std::string& text);  // "batch" | "single"; UsageError otherwise

inline constexpr int kMaxBatch = 512;  // what a launch queue holds behind a blocking start

// "50us", "0.2ms", "1e-4" (seconds) -> ns. UsageError for 0, negative, or over 1 s.
double parse_min_sample_time(const std::string& text);

// Transfers per sample so that batch x per_transfer_ns >= min_sample_ns, within
// [1, max_batch]. A per-transfer time that is not positive or finite gives 1.
int batch_size_for(double per_transfer_ns, double min_sample_ns, int max_batch = kMaxBatch);

}  // namespace p2pscope::profile
