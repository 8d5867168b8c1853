#pragma once
// `profile --pattern`'s run as files: the spec from profile's options, then
// DIR/contention_log.csv (every flow of every repetition) and DIR/contention.json (the
// summary per size and flow, with the run's metadata), and the table the command prints.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "p2pscope/contention.hpp"
#include "p2pscope/table.hpp"

namespace p2pscope::profile {

// profile's options that --pattern takes ("" = not given).
struct PatternRequest {
  std::string pattern, gpus, sizes, backend;
  int root = -1, shift = 1, warmup = 5, reps = 10;
};
// Throws UsageError for a pattern, backend list or size list the run cannot take.
ContentionSpec contention_spec(const PatternRequest& q);

struct ContentionFiles {
  std::filesystem::path dir, log_csv, json;
  Table table{std::vector<std::string>{"size", "flow", "flows", "alone_GBps", "together_GBps", "together/alone",
                                       "aggregate_GBps"}};
  // Sizes where the flows barely overlapped (the aggregate below one flow's own rate):
  // the threads' start skew outlasted the transfer, so they measure the tool's barrier.
  std::vector<std::string> not_concurrent;
};
// `out` ("" = <out_root>/contention-<pattern>-<backend>-<time>) made and both files written
// there; `argv` goes into the JSON's metadata. Throws Error when a file cannot be written.
ContentionFiles write_contention(const PatternRequest& q, const ContentionSpec& spec, const ContentionResult& r,
                                 const std::string& out, const std::string& out_root,
                                 const std::vector<std::string>& argv);

}  // namespace p2pscope::profile
