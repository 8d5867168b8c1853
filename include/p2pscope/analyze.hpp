#pragma once
// `p2pscope analyze DIR`: reads a campaign directory written by `p2pscope profile`
// and writes, into the same directory (or Options::out_dir), summary.csv/summary.json (per-config stats),
// links.json (the per-link model a simulator takes as input; fields in
// docs/link-model.md), findings.json, comparison.csv (with predictions) and
// report.html (self-contained, inline SVG). Library code: never prints; notes
// (skipped rows, missing optional files, unmatched predictions) come back in Result.
#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "p2pscope/enum_names.hpp"

namespace p2pscope::analyze {

enum class OutlierRule { tukey, mad, none };
inline constexpr std::array<EnumName<OutlierRule>, 3> kOutlierRuleNames{{
    {OutlierRule::tukey, "tukey", {"iqr"}, "1.5 IQR fences"},
    {OutlierRule::mad, "mad", {}, "3.5 scaled MAD"},
    {OutlierRule::none, "none"},
}};
// "tukey" (1.5 IQR fences), "mad" (|x - median| > 3.5 * 1.4826 * MAD), "none".
// Throws UsageError for anything else.
OutlierRule parse_outlier_rule(const std::string& text);
std::string outlier_rule_text(OutlierRule r);  // human text, e.g. "Tukey 1.5 IQR fences"

struct Options {
  std::string predictions_path;  // "" = no comparison
  OutlierRule outliers = OutlierRule::tukey;
  bool write_report = true;      // report.html
  std::string out_dir;           // "" = the campaign directory; created when missing
};

struct Result {
  std::string dir;
  std::string report_path;       // "" when not written
  std::vector<std::string> written;  // paths of every file written
  std::size_t rows_read = 0;     // valid execution-log rows
  std::size_t rows_skipped = 0;  // garbled rows, skipped and counted
  std::size_t configs = 0;
  std::size_t links = 0;
  std::size_t findings = 0;
  std::vector<std::string> top_findings;  // up to 5 hardware warnings, then one line per noise kind
  std::size_t predictions_matched = 0, predictions_unmatched = 0;
  bool predictions_failed = false;  // a predictions file was given but nothing matched / unreadable
  // Mean absolute percentage error per regime ("latency", "transition", "bandwidth",
  // "all"), in percent, for the regimes that had matched configs.
  std::vector<std::pair<std::string, double>> mape_pct;
  std::vector<std::string> worst_predictions;  // up to 5 lines, worst |error| first
  std::vector<std::string> notes;   // one line each, for the CLI to print
};

// Throws UsageError when `dir` is not a campaign (no execution_log.csv), the log
// lacks a required column (src, dst, size_bytes, duration_ns) or out_dir cannot be
// created; Error on I/O failure.
// A bad predictions file is not fatal: it is reported in notes and predictions_failed.
Result analyze(const std::string& dir, const Options& options = {});

}  // namespace p2pscope::analyze
