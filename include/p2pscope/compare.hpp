#pragma once
// `p2pscope compare A B`: two results of the same kind, point by point (a pair at a size,
// or a sweep point): the change of the median, whether it lies beyond both runs'
// intervals of that median, and one verdict line. The kinds:
//   bench gpu JSON            rows of (src, dst, size) with their samples
//   bench nccl JSON           rows of (op, size) with their samples
//   profile campaign          a directory with execution_log.csv (as `analyze` reads it)
//   sweep tcp CSV             sweep.csv (or its directory): repetitions per point
//   survey JSON               survey.json (or its --out directory): each link direction's
//                             rounds (bandwidth); both surveys must be of the same hosts
// Intervals are the same everywhere: the distribution-free 95 % interval of the median
// from order statistics (docs/link-model.md), the one `analyze` shows; a campaign whose
// repetitions were split over processes gets analyze's widened interval.
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
};

struct Loaded {
  Kind kind = Kind::bench_gpu;
  std::string path;         // as given
  std::string description;  // "bench gpu, backend host, unidirectional, 20 iterations"
  std::string mode;         // bench gpu's pattern, bench nccl's op ("" for the others): both sides must match
  std::string unit;         // "ns" (time: lower is better) or "GB/s" (higher is better)
  bool higher_is_better = false;
  std::string started;      // the run's start time from its metadata, "" when unknown
  std::vector<Point> points;
};

// Reads PATH as whichever kind it is. UsageError naming what it found instead: a missing
// path, a directory of neither kind, a file that is none of them (compressed, binary,
// another command's JSON), a result with no measured point.
Loaded load(const std::string& path);

struct Row {
  std::string backend_a, backend_b, subject;
  std::uint64_t size_bytes = 0;
  Point a, b;
  double delta_pct = 0;   // (B - A) / A of the median, in the result's unit
  bool beyond_noise = false;      // the two intervals do not overlap
  bool beyond_threshold = false;  // |delta| >= the threshold
  bool worse = false;             // B slower (longer time, lower bandwidth)
  // "slower", "faster", "within noise", "below threshold" (beyond the noise, under it)
  std::string verdict;
};

// Per subject (a pair, a sweep point): how many of its sizes changed which way.
struct SubjectSummary {
  std::string backend, subject;
  std::size_t sizes = 0, slower = 0, faster = 0;
  double min_delta_pct = 0, max_delta_pct = 0;  // over the sizes that changed
};

struct Comparison {
  Loaded a, b;
  double threshold_pct = 5;
  std::vector<Row> rows;                 // matched points, by subject then size
  std::vector<std::string> only_a, only_b;  // points one side lacks ("0->1 @ 4 KiB")
  std::vector<SubjectSummary> subjects;
  std::vector<std::string> notes;
  std::string verdict;  // one line
  std::size_t changed() const;  // rows slower or faster
};

// UsageError when the kinds differ, when bench gpu patterns differ, or when no point
// is in both. Backends that differ while each side has one are matched and noted.
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
