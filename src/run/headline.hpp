#pragma once
// The answer of a `p2pscope run`, first: per-pair bandwidth and one-way latency
// (min / median / max over the pairs), the collective's busbw, TCP, the prediction's
// error and the finding that matters most, read from the steps' JSON files in the
// run's directory. index.html opens with it, run's text output ends with it, and
// headline.json holds the same numbers for tests and scripts.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2pscope::run {

struct HeadlineItem {
  std::string label;   // "per-pair bandwidth"
  std::string value;   // "min 12.1 / median 12.4 / max 12.9 GB/s"
  std::string detail;  // "host backend, 64 MiB, 2 pairs; unidirectional"
  std::string href;    // where the numbers come from (relative to the run directory)
};

struct Headline {
  std::vector<HeadlineItem> items;
  nlohmann::json numbers;  // the figures, unrounded, by item
};

// Reads what is there; a step that did not run gives no item (and no error). Files named
// in not_this_run (relative to run_dir: the outputs of steps this run skipped) are left
// out, though an earlier run's copy is there.
Headline read_headline(const std::filesystem::path& run_dir, const std::set<std::string>& not_this_run = {});
std::string headline_text(const Headline& h);  // lines for the terminal
std::string headline_html(const Headline& h);  // the box at the top of index.html

}  // namespace p2pscope::run
