#pragma once
// Contention patterns (`profile --pattern`): k transfers at once, each flow timed on
// its own, next to the same links alone. Patterns over devices d0..d(p-1):
//   pairs       every directed pair, one flow at a time (the isolated reference)
//   fan-in      every other device -> root, all at once
//   fan-out     root -> every other device, all at once
//   ring-shift  every device i -> i + shift (mod p), all at once
//   all-to-all  every directed pair, all at once
// Each flow runs on its own backend instance (own buffers, own stream), in its own
// thread; the threads start together behind a barrier for every repetition. Before a
// contended round, each of its flows runs alone on the same setup: the isolated reference.
// Library code: never prints; returns samples. Units in names.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "p2pscope/backend.hpp"

namespace p2pscope::profile {

enum class FlowPattern { pairs, fan_in, fan_out, ring_shift, all_to_all };
inline constexpr std::array<EnumName<FlowPattern>, 5> kFlowPatternNames{{
    {FlowPattern::pairs, "pairs"},
    {FlowPattern::fan_in, "fan-in"},
    {FlowPattern::fan_out, "fan-out"},
    {FlowPattern::ring_shift, "ring-shift"},
    {FlowPattern::all_to_all, "all-to-all"},
}};
std::string to_string(FlowPattern p);
FlowPattern parse_flow_pattern(const std::string& text);  // throws UsageError listing them
std::vector<std::string> flow_pattern_names();

struct Flow {
  int src = 0, dst = 0;
};
// The flows of one round of `pattern` (for pairs: every pair, each its own round).
// Throws UsageError for fewer than 2 devices, a root not among them, or shift % p == 0.
std::vector<std::vector<Flow>> pattern_rounds(FlowPattern pattern, const std::vector<int>& devices, int root = -1,
                                              int shift = 1);

struct ContentionSpec {
  std::string backend = "host";
  FlowPattern pattern = FlowPattern::fan_in;
  std::vector<int> devices;         // empty: 0 .. device_count-1 of the backend
  int root = -1;                    // fan-in / fan-out; -1 = the first device
  int shift = 1;                    // ring-shift
  std::vector<std::uint64_t> sizes;
  int warmup = 2, reps = 5;
  // Builds one backend instance per flow; empty = bench::make_backend(backend).
  std::function<std::unique_ptr<bench::Backend>(const std::string&)> make_backend;
  // Read between repetitions (Ctrl-C): once set, the samples so far are returned with
  // ContentionResult::interrupted.
  const std::atomic<bool>* stop = nullptr;
  // Called after each measured repetition (progress on long runs); may be empty.
  std::function<void(std::size_t done, std::size_t total, const std::string& current)> on_rep;
};

// One flow of one repetition.
struct FlowSample {
  int round = 0;                    // index into pattern_rounds
  int repetition = 0;
  std::uint64_t size_bytes = 0;
  int flows = 0;                    // flows running at once in this round
  bool together = false;            // false: the flow alone (the isolated reference)
  int src = 0, dst = 0;
  std::int64_t ts_start_ns = 0, ts_end_ns = 0;  // CLOCK_MONOTONIC
  double duration_ns = 0;           // device-timed where the backend has it, else host
  bool device_timed = false;
  // The round's aggregate: all its flows' bytes over first start to last end.
  double aggregate_bytes_per_s = 0;
};

struct ContentionResult {
  std::vector<FlowSample> samples;
  std::vector<std::string> device_names;
  std::vector<std::string> notes;
  bool interrupted = false;  // ended early by ContentionSpec::stop
};

// Throws UsageError for a pair the backend cannot copy, Error on transfer failures.
ContentionResult run_contention(const ContentionSpec& spec);

// CSV, one row per flow and repetition (the execution log's units):
// pattern,mode (alone|together),round,repetition,size_bytes,flows,src,dst,ts_start_ns,ts_end_ns,duration_ns,
// time_source,bytes_per_s,aggregate_bytes_per_s
std::string contention_csv(const ContentionSpec& spec, const ContentionResult& r);

// Per size and flow: the median bandwidth alone and together (NAN where a mode has no
// samples: pattern pairs runs every flow alone only), and the round's median aggregate.
struct ContentionRow {
  std::uint64_t size_bytes = 0;
  int src = 0, dst = 0, flows = 1;
  double alone_bytes_per_s = 0, together_bytes_per_s = 0, aggregate_bytes_per_s = 0;
};
std::vector<ContentionRow> summarize_contention(const ContentionResult& r);

}  // namespace p2pscope::profile
