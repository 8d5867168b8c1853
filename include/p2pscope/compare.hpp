#pragma once
// `p2pscope compare A B`: two results of the same kind, point by point (a pair at a size,
// or a sweep point): the change of the median, whether it lies beyond both runs'
// intervals of that median, and one verdict line. The kinds:
//   bench gpu JSON            rows of (src, dst, size) with their samples
//   bench nccl JSON           rows of (op, size): the time its table prints (nccl-tests'
//                             span) and busbw beside it; one file or several a side
//                             (repeated runs: their figures are the samples)
//   profile campaign          a directory with execution_log.csv (as `analyze` reads it)
//   sweep tcp CSV             sweep.csv (or its directory): repetitions per point
//   survey JSON               survey.json (or its --out directory): each link direction's
//                             rounds (bandwidth); both surveys must be of the same hosts
// Intervals are the same everywhere: the distribution-free interval of the median from
// order statistics (docs/link-model.md), the one `analyze` shows, at the level its n
// allows (95 % or more from 6 samples; 3 give [min, max] at 75 %), and that level is
// what is printed; a campaign whose repetitions were split over processes gets
// analyze's widened interval.
// Library code: never prints; throws UsageError for what the user must change.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace p2pscope::compare {

enum class Kind { bench_gpu, bench_nccl, campaign, sweep_tcp, survey };
std::string kind_text(Kind k);  // "a bench gpu JSON", "a profile campaign directory", ...
const char* subject_noun(Kind k);  // what a subject is: "pair", "op" (bench nccl), "point" (sweep tcp)

// One measured point: its median and the median's interval, in the result's unit.
struct Point {
  std::string backend;           // "" where the kind has none (sweep tcp)
  std::string subject;           // "0->1", or "4 ch, 1 MiB chunks, window 8, 1 socket"
  std::uint64_t size_bytes = 0;  // 0 where the kind has no sizes (sweep points)
  double median = 0, lo = 0, hi = 0;
  double level = 0;              // the interval's coverage (0.96); 0 when it has none (1 sample)
  std::size_t n = 0;             // samples
  // bench nccl: busbw as the table prints it (GB/s), of the median time and of the
  // interval's ends; 0 where the kind has no rate beside its time.
  double rate = 0, rate_lo = 0, rate_hi = 0;
  // bench nccl: the run's per-iteration event pass at this size (its median's interval),
  // the noise a single figure a side is judged against; ev_level 0 when absent.
  double ev_lo = 0, ev_hi = 0, ev_level = 0;
  std::size_t ev_n = 0;
};

// What a bench nccl op was run as: two sides must agree on it.
struct OpSetup {
  std::string op, dtype;
  int ranks = 0;
};

struct Loaded {
  Kind kind = Kind::bench_gpu;
  std::string path;         // as given
  std::string description;  // "bench gpu, backend host, unidirectional, 20 iterations"
  std::string mode;         // bench gpu's pattern, the survey's hosts ("" for the others): both sides must match
  std::string unit;         // "ns" (time: lower is better) or "GB/s" (higher is better)
  bool higher_is_better = false;
  std::string started;      // the run's start time from its metadata, "" when unknown
  std::vector<Point> points;
  // bench nccl: the files of this side (one, or repeated runs), each op's setup, the
  // machine ("host vm, NVIDIA H200 x 2, NCCL 2.28.3"), and what loading noted.
  std::vector<std::string> files;
  std::vector<OpSetup> setups;
  std::string machine;
  std::vector<std::string> notes;
};

// Reads PATH as whichever kind it is. UsageError naming what it found instead: a missing
// path, a directory of neither kind, a file that is none of them (compressed, binary,
// another command's JSON, malformed JSON, NaN or negative figures), a result with no
// measured point.
Loaded load(const std::string& path);
// One side of several files: repeated bench nccl runs, whose figures per op and size
// become that point's samples. One path: load(path). UsageError when a file is not
// bench nccl JSON or the files differ in op setup (ranks, dtype).
Loaded load_side(const std::vector<std::string>& paths);

struct Row {
  std::string backend_a, backend_b, subject;
  std::uint64_t size_bytes = 0;
  Point a, b;
  double delta_pct = 0;   // (B - A) / A of the median, in the result's unit
  bool beyond_noise = false;      // the two intervals do not overlap
  bool beyond_threshold = false;  // |delta| >= the threshold
  bool worse = false;             // B slower (longer time, lower bandwidth)
  // The noise was judged on the runs' event passes (bench nccl, one figure a side), not
  // on the figures' own intervals.
  bool by_events = false;
  bool has_rate = false;          // both sides have a rate beside the time (bench nccl's busbw)
  double rate_delta_pct = 0;      // (B - A) / A of that rate
  // "slower", "faster", "within noise", "below threshold" (beyond the noise, under it)
  std::string verdict;
};

// Per subject (a pair, a sweep point): how many of its sizes changed which way.
struct SubjectSummary {
  std::string backend, subject;
  std::size_t sizes = 0, slower = 0, faster = 0;
  double min_delta_pct = 0, max_delta_pct = 0;  // over the sizes that changed
  std::vector<std::uint64_t> slower_sizes, faster_sizes;  // which sizes changed which way
};

struct Comparison {
  Loaded a, b;
  std::string noise;   // what the intervals are of: "the 3 runs' figures", "each run's event pass"
  std::string levels;  // the levels they have, as printed: "75 %", "50-75 %"
  double threshold_pct = 5;
  std::vector<Row> rows;                 // matched points, by subject then size
  std::vector<std::string> only_a, only_b;  // points one side lacks ("0->1 @ 4 KiB")
  std::vector<SubjectSummary> subjects;
  std::vector<std::string> notes;
  std::string verdict;  // one line: how many subjects changed, under which rule
  std::vector<std::string> patterns;  // one line per pattern of change ("all 12 pairs slower, +7.1 to +7.2 %")
  std::size_t changed() const;  // rows slower or faster
};

// UsageError when the kinds differ, when bench gpu patterns differ, when bench nccl ops
// common to both differ in rank count or dtype, or when no point is in both; a
// different size set or machine is a note. Backends that differ while each side has one are matched and noted.
Comparison compare(const Loaded& a, const Loaded& b, double threshold_pct = 5);

// A median in the result's unit: "1.94 us", "12.301 GB/s".
std::string value_text(const Loaded& l, double v);
// A subject as shown: "0->1", or "ce 0->1" where the comparison holds several backends.
std::string subject_text(const Comparison& c, const SubjectSummary& s);

std::string to_text(const Comparison& c);
// {"kind": "p2pscope_compare", a, b, threshold_pct, verdict, subjects, rows, ...};
// the caller adds schema_version and metadata.
nlohmann::json to_json(const Comparison& c);
std::string to_html(const Comparison& c);  // a self-contained page, verdict first

}  // namespace p2pscope::compare
