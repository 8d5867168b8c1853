#pragma once
// Internal model of a campaign directory as read by `analyze`, and of what the
// analysis derives from it. Units in names; times in ns, rates in bytes/s.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/analyze.hpp"
#include "p2pscope/stats.hpp"

namespace p2pscope::analyze {

struct Op {
  int config_id = -1;
  int src = 0, dst = 0;
  std::uint64_t size_bytes = 0;
  int repetition = 0;
  std::string backend;
  std::int64_t ts_start_ns = 0;
  double duration_ns = 0;      // one transfer's time: gpu_duration_ns when present, else host; / batch
  bool device_timed = false;
  int batch = 1;               // transfers the record timed back to back
  std::int64_t gpu_ts_start_ns = -1;  // src GPU's global timer at start; -1 when none
};

struct TempSample {
  std::int64_t time_ns = 0;
  int gpu = 0;
  double temperature_c = NAN, power_w = NAN, sm_clock_mhz = NAN, mem_clock_mhz = NAN;
  std::string throttle;  // "none", "power_cap|sw_thermal", a number, or ""
};

struct MonitorSample {
  double time_s = 0;
  std::string source, key;
  double value = 0;
};

struct Campaign {
  std::string dir;
  std::vector<Op> ops;
  std::size_t rows_skipped = 0;
  std::vector<std::string> skipped_examples;  // first few garbled lines, with line numbers
  // Rows repeating a (config, repetition) already read: the first is kept, these are
  // dropped and counted (two writers at once), never taken as extra samples.
  std::size_t rows_duplicate = 0;
  std::vector<std::string> duplicate_examples;
  // Backends a row may name: the plan's when metadata.json has one (set before parsing);
  // empty: any name of p2pscope's backends (host, ce, sm, staged, nccl and their variants).
  std::vector<std::string> plan_backends;
  bool last_line_whole = true;  // false: the log ends mid-line (a kill, a cut copy)
  // "complete" only when every planned (config, repetition) has a row and the last line
  // is whole; else "incomplete: ..." naming what is missing, or "unknown: ..." without a plan.
  std::string completeness;
  nlohmann::json metadata;                    // {} when absent
  nlohmann::json drift;                       // {} when absent
  std::vector<TempSample> temperatures;
  std::vector<MonitorSample> monitor;
  std::vector<std::string> notes;
  // device -> row of the gpu_gpu matrix; empty when metadata has no topology
  std::map<int, int> topo_row;
  std::vector<std::vector<std::string>> gpu_gpu;
};

// Reads DIR/execution_log.csv (required) and the optional files. Throws UsageError
// for no log or missing required columns; garbled rows are skipped and counted.
Campaign read_campaign(const std::string& dir);
// Parses a log from text (for tests); `where` names it in messages.
void parse_execution_log(const std::string& text, const std::string& where, Campaign* c);

// Link class of a pair from metadata ("NV18", "SYS", ...), "host" for the host
// backend, "unknown" without topology.
std::string link_class(const Campaign& c, const std::string& backend, int src, int dst);

enum class Regime { latency, transition, bandwidth };
Regime regime_of(std::uint64_t size_bytes);  // < 4 KiB, between, >= 1 MiB
const char* regime_name(Regime r);

// A distribution-free confidence interval of a median from order statistics: the
// narrowest [x(j), x(n+1-j)] whose coverage P(j <= Binomial(n, 1/2) <= n-j) is >= 95 %;
// with fewer than 6 samples none reaches 95 % and it is [min, max] with the coverage it has.
struct MedianInterval {
  double lo_ns = 0, hi_ns = 0;
  double level = 0;  // its coverage, e.g. 0.961; 0 for no samples
  // With the repetitions split over processes (profile --processes K): [lo, hi] is the
  // within-process interval above widened by between_ns, and these say how.
  int processes = 1;                        // processes whose samples the median holds
  double within_lo_ns = NAN, within_hi_ns = NAN;  // the order-statistics interval alone
  double between_ns = 0;                    // t(0.975, K-1) x SD(process medians) / sqrt(K)
  std::vector<double> process_medians_ns;   // per process, in share order
};
MedianInterval median_interval(std::vector<double> samples);
// The within-process interval `w` of `median` widened, in quadrature on each side, by the
// between-process term of the K >= 2 process medians: a one-way random-effects t-interval
// (the spread of the process medians, t with K-1 degrees of freedom). Fewer than 2
// medians: `w` unchanged.
MedianInterval widen_by_processes(MedianInterval w, double median_ns, const std::vector<double>& process_medians_ns);
// Student's t quantile at 0.975 for `df` degrees of freedom (>= 1): 12.71, 4.30, 3.18, ...
double t975(int df);
// The processes a campaign's repetitions were split over (metadata settings.processes, 1
// when absent) and its planned repetitions (0 when absent).
int campaign_processes(const Campaign& c, int* reps);

struct ConfigSummary {
  int config_id = -1;
  std::string backend;
  int src = 0, dst = 0;
  std::uint64_t size_bytes = 0;
  bool device_timed = false;
  Stats stats;                 // after outlier removal
  std::size_t n_raw = 0;       // before
  std::size_t outliers = 0;
  double bytes_per_s = 0;      // size / median
  std::vector<double> kept;    // samples kept (ns)
  MedianInterval median_ci;    // of stats.median, from the kept samples
};

std::vector<ConfigSummary> summarize_configs(const Campaign& c, OutlierRule rule);
// Indices of outliers in `samples` under `rule`; never removes more than half.
std::vector<bool> outlier_mask(const std::vector<double>& samples, OutlierRule rule);

// t(n) = alpha_ns + n / beta_bytes_per_s
struct AlphaBeta {
  bool ok = false;
  double alpha_ns = 0;
  double beta_bytes_per_s = 0;
  double r2_log = 0;             // R^2 of log(t) against log(model)
  double worst_rel_error = 0;    // max |model - t| / t over the fitted points
  double predict_ns(double n) const { return alpha_ns + n / beta_bytes_per_s * 1e9; }
};
// Robust fit: least squares on relative residuals (each size weighs the same,
// whatever its time), then Tukey-bisquare reweighting. Points: (size, median ns).
AlphaBeta fit_alpha_beta(const std::vector<double>& sizes, const std::vector<double>& times_ns);

struct TwoRegime {
  bool ok = false;
  double breakpoint_bytes = 0;  // the first size of the upper regime
  AlphaBeta below, above;
  double worst_rel_error = 0;
};
TwoRegime fit_two_regime(const std::vector<double>& sizes, const std::vector<double>& times_ns);

// Three consecutive regimes, each its own alpha-beta line: the latency regime, a middle
// one (a cache that holds the buffers, a pipeline filling), the bandwidth regime. The
// breakpoints minimise the worst relative error; each regime holds three sizes or more.
// A device-local copy on an H100 needs it: 16 MiB copies run from L2 at 1.70 TB/s,
// 64 MiB and up from HBM at 1.5 TB/s, and two lines miss the L2 regime by 17 %.
struct ThreeRegime {
  bool ok = false;
  double mid_from_bytes = 0, high_from_bytes = 0;  // first size of the middle and upper regimes
  AlphaBeta low, mid, high;
  double worst_rel_error = 0;
  double predict_ns(double n) const { return (n < mid_from_bytes ? low : n < high_from_bytes ? mid : high).predict_ns(n); }
};
ThreeRegime fit_three_regime(const std::vector<double>& sizes, const std::vector<double>& times_ns);

struct LinkModel {
  std::string backend, link_class;
  int src = 0, dst = 0;
  std::vector<double> sizes, median_ns, bytes_per_s;  // per size, ascending
  double latency_floor_ns = 0;       // median at the smallest size
  double smallest_size = 0;
  double asymptotic_bytes_per_s = 0; // median bandwidth over the three largest sizes
  double n_half_bytes = NAN;         // measured: size where bandwidth reaches half of it
  AlphaBeta fit;
  TwoRegime two;
  ThreeRegime three;
  // The recommended model: the simplest of alpha_beta, two_regime, three_regime whose
  // worst relative error over the sizes is <= kModelTolerance; where none is, the closest.
  std::string model = "alpha_beta";
  bool use_two_regime = false;       // model is two_regime
  // The recommended model's time for n bytes, and its relative error at size i
  // ((model - measured) / measured): what the report shows per size.
  double predict_ns(double n) const;
  double residual(std::size_t i) const { return (predict_ns(sizes[i]) - median_ns[i]) / median_ns[i]; }
};
inline constexpr double kModelTolerance = 0.10;
std::vector<LinkModel> build_link_models(const Campaign& c, const std::vector<ConfigSummary>& s);
// A link whose sizes, median_ns and bytes_per_s are set (ascending sizes): its latency
// floor, asymptote, n-half, the three fits and the recommended model, as
// build_link_models gives every campaign link (the survey's --sizes links too).
void finish_link_model(LinkModel& m);

// A measured anomaly of one config or link (subject, value), grouped by kind for the
// report. Not tune::Finding, which is a diagnosis with evidence lines and a fix: the two
// share only a severity word and are written to different JSON schemas.
struct Finding {
  std::string kind;      // high_cv, non_monotone, asymmetry, class_outlier, temperature, drift, clock, throttling, data
  std::string severity;  // warning, info
  std::string subject;   // "0->1 @ 4 KiB", "GPU 2", ...
  std::string message;
  double value = NAN;
};
std::vector<Finding> find_issues(const Campaign& c, const std::vector<ConfigSummary>& s,
                                 const std::vector<LinkModel>& links);

// What a reader is shown first: warnings before infos, every kind but high_cv one row
// each; high_cv (one per config, dozens on a short campaign) one row per link, naming
// its sizes and the worst. `members` counts the findings a row stands for.
struct FindingGroup {
  Finding head;
  std::size_t members = 1;
};
std::vector<FindingGroup> group_findings(const std::vector<Finding>& f);

// The report's view: one group per kind, with every config it names, and findings
// about the measurement (noise: high CV, order within the medians' errors; the log;
// the clocks) apart from findings about the hardware (asymmetry, outliers, throttling,
// temperature, a size really faster than a smaller one).
struct KindGroup {
  std::string kind;
  std::string description;          // what the kind means, in a line
  bool about_measurement = false;
  std::string severity;             // "warning" when any member is one
  std::vector<const Finding*> members;  // in the order found
};
bool about_measurement(const Finding& f);
std::vector<KindGroup> group_by_kind(const std::vector<Finding>& f);  // hardware first, then measurement

struct Comparison {
  struct Row {
    int config_id;
    std::string backend;
    int src, dst;
    std::uint64_t size_bytes;
    double measured_ns, predicted_ns, error_pct;  // (predicted - measured) / measured
  };
  std::vector<Row> rows;                 // matched configs, by config
  std::map<std::string, double> mape;    // regime name -> MAPE %, plus "all"
  std::map<std::string, std::size_t> count;
  std::size_t unmatched = 0, garbled = 0;
  std::vector<std::string> notes;
};
// Throws UsageError when the file cannot be read or has neither column set.
Comparison compare_predictions(const std::string& path, const std::vector<ConfigSummary>& s);
Comparison compare_predictions_text(const std::string& text, const std::string& where,
                                    const std::vector<ConfigSummary>& s);

// report.html contents (self-contained).
std::string render_report(const Campaign& c, const std::vector<ConfigSummary>& s,
                          const std::vector<LinkModel>& links, const std::vector<Finding>& findings,
                          const Comparison* cmp, OutlierRule rule);

// The `profile --pattern` runs saved beside a campaign: DIR/contention.json and
// DIR/*/contention.json, sorted (contention_report.cpp).
std::vector<std::string> contention_files(const std::string& dir);
// The contention section of report.html from those runs; "" when there are none.
std::string contention_section(const std::string& dir);

// The monitor.csv section of report.html (monitor_report.cpp).
std::string monitor_timelines(const Campaign& c);

nlohmann::json link_model_json(const LinkModel& m);

}  // namespace p2pscope::analyze
