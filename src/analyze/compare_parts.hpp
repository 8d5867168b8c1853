#pragma once
// compare's pieces shared between its files (not an interface): the JSON reader every
// kind goes through, and bench nccl's runs (compare_nccl.cpp), which a side may hold
// several of.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/compare.hpp"
#include "p2pscope/tune.hpp"

namespace p2pscope::compare {

// The JSON of file `shown`, from its text: under limits (depth, values), NCCL's own
// lines before it skipped (NCCL_DEBUG=WARN prints "NCCL version ..." to stdout, so a
// `--format json > file` holds it first; each skip is noted). UsageError naming the
// file and the line and column where malformed text stops, never the library's words.
nlohmann::json parse_result_json(const std::string& shown, const std::string& text, std::vector<std::string>* notes);

// Whether j is a bench nccl document: one op (op, rows) or several (ops: [...]).
bool is_bench_nccl(const nlohmann::json& j);

// One bench nccl file as read: per (op, size) the figures its table printed.
struct NcclFigures {
  std::vector<double> times_ns;   // the time column: one per span taken (--spans K), else the one figure
  double rate_k = 0;              // busbw x time (GB/s x ns): busbw of a time t is rate_k / t; 0 when absent
  std::vector<double> events_ns;  // the event pass (per iteration), for a single figure's noise
};
struct NcclRun {
  std::string tool = "bench nccl";  // or "nccl-tests"
  std::string path, started, machine;
  std::vector<OpSetup> setups;
  std::map<std::pair<std::string, std::uint64_t>, NcclFigures> figures;  // (op, size)
  std::vector<std::string> notes;
};

// UsageError naming the file, the op and the row for what is not a figure (a negative
// or fractional size, a time that is not a positive finite number, a repeated size).
NcclRun read_nccl_run(const std::string& shown, const nlohmann::json& j);
// nccl-tests' output (its text or its -J JSON), read by the doctor's and predict's table
// reader, as one run: per (op, size) the out-of-place time and busbw its table printed,
// and with -I's JSON each iteration's time for the point's noise. UsageError for CPU-time
// tables (-C 1), an op twice, or no table.
NcclRun nccl_tests_run(const std::string& shown, const std::vector<tune::PerfRun>& runs);
// One side from one run or several (repeated runs: a point's samples are the figures of
// them all). UsageError when the runs differ in rank count or dtype of an op.
Loaded nccl_side(const std::vector<NcclRun>& runs);

// "allreduce of float over 2 ranks"
std::string setup_text(const OpSetup& s);

// The point at the median of `samples` with its order-statistics interval.
Point point_from_samples(std::string backend, std::string subject, std::uint64_t size,
                         const std::vector<double>& samples);

}  // namespace p2pscope::compare
