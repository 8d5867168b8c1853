#pragma once
// `bench gpu` as data: one backend, one mode, a list of directed pairs and sizes.
// run_sweep() returns raw samples reduced to Stats once; the report functions turn a
// SweepResult into tables (matrix for one size, nccl-tests-like rows for a sweep) and
// JSON. Nothing here prints.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "p2pscope/backend.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"

namespace p2pscope::bench {

// The three batch patterns plus `blocking`: one blocking operation after another as a
// host program waits for it (Backend::run_blocking), host-timed.
enum class Mode { unidirectional, bidirectional, latency, blocking };
// The batch patterns' rows (kPatternNames) and blocking.
inline constexpr std::array<EnumName<Mode>, 4> kModeNames{{
    {Mode::unidirectional, kPatternNames[0].name, kPatternNames[0].aliases},
    {Mode::bidirectional, kPatternNames[1].name, kPatternNames[1].aliases},
    {Mode::latency, kPatternNames[2].name, kPatternNames[2].aliases},
    {Mode::blocking, "blocking", {"block"}, "one blocking copy after another, host-timed"},
}};
Mode parse_mode(const std::string& text);  // throws UsageError
std::string to_string(Mode m);

struct SweepRow;

struct SweepSpec {
  Mode mode = Mode::unidirectional;
  std::vector<std::pair<int, int>> pairs;  // directed (src, dst); empty: every directed pair
  std::vector<std::uint64_t> sizes;        // ascending
  int warmup = 5, iters = 20;
  bool verify = true;
  // Polled before each (pair, size): once set, the sweep ends there and returns the rows
  // measured so far with `stopped` saying so (Ctrl-C loses nothing already measured).
  const std::atomic<bool>* stop = nullptr;
  // Called after each row is measured (progress on long sweeps); may be empty.
  std::function<void(std::size_t done, std::size_t planned, const SweepRow& row)> on_row;
  // What buffer set-up says when it lasts longer than setup_note_after_s (PrepareSpec).
  std::function<void(const std::string&)> on_setup;
  double setup_note_after_s = 1.0;
};

struct SweepRow {
  int src = 0, dst = 0;
  std::uint64_t bytes = 0;
  PairSupport support;
  Stats time_ns;          // src->dst; latency: one-way; blocking: host-observed
  Stats reverse_time_ns;  // bidirectional: dst->src
  Stats total_time_ns;    // bidirectional: both done; blocking: device-timed (events)
  std::vector<double> samples_ns;  // time_ns's samples, in order
  std::string note;
  std::int64_t first_bad = -1, first_bad_reverse = -1;  // -1: checked and right (or not checked)
  bool checked = false;
};

struct SweepResult {
  std::string backend;
  Mode mode = Mode::unidirectional;
  int warmup = 0, iters = 0;
  std::vector<std::string> device_names;  // by device number
  std::vector<SweepRow> rows;
  // Why the sweep ended early ("" when it ran to the end): a failure after the first
  // row keeps the rows measured so far, and the caller reports them and then fails.
  std::string stopped;
  bool interrupted = false;  // ended by SweepSpec::stop (stopped says where)
  bool data_ok() const;
  std::string first_failure() const;  // "" when every check passed
};

// "0:1,1:0" -> pairs; "host" or "h" names device `host_index` (staged), when >= 0.
std::vector<std::pair<int, int>> parse_pairs(const std::string& text, int host_index = -1);
// Every directed pair of distinct devices among the first `n`.
std::vector<std::pair<int, int>> all_pairs(int n);

// Checks pairs against the backend (UsageError listing its devices), prepares the
// devices for the largest size, runs every (pair, size) and checks the data.
SweepResult run_sweep(Backend& b, const SweepSpec& spec);

// bytes / seconds in GB/s (1e9), 0 when t is 0.
inline double gbps(double bytes, double ns) { return ns > 0 ? bytes / ns : 0.0; }

// nvbandwidth-like matrix for one size: row = source, column = destination, cells the
// median bandwidth in GB/s (latency / blocking: microseconds), "n/a (reason)" where the
// pair cannot run, "-" where it was not measured. Typed: the printers convert.
out::ResultTable matrix_table(const SweepResult& r, std::uint64_t bytes);
// nccl-tests-like rows: src, dst, size, time_us, algbw_GBps, p5/p50/p95_us, cv_pct, check
// (+ reverse/total for bidirectional, device_us for blocking). Times stored in ns, rates
// in bytes/s, cv as a fraction; each column names the unit it is shown in.
out::ResultTable rows_table(const SweepResult& r);
// A sentence on what the numbers are (units, what is timed, median first).
std::string describe(const SweepResult& r);
// rows with full Stats, the matrix (one size), units; the caller adds metadata.
nlohmann::json to_json(const SweepResult& r);

}  // namespace p2pscope::bench
