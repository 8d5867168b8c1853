#pragma once
// Progress of long runs on stderr: one rewritten line on a terminal, a plain line every
// 5 s otherwise (logs, CI). stdout stays the result's alone (JSON, CSV pipe cleanly).
#include <cstdint>
#include <functional>
#include <string>

#include "p2pscope/profile.hpp"

namespace p2pscope::app {

std::string clock_text(double seconds);  // "3m07s", "1h02m", "?" when negative

// When progress may first be said: P2PSCOPE_PROGRESS_AFTER_S when set (0: at once),
// else `fallback`. Also how long a buffer set-up must promise to last before it is named.
double progress_after_s(double fallback);

// Prints buffer set-up notes (PrepareSpec::announce) as "COMMAND: setting up ...".
std::function<void(const std::string&)> setup_printer(const std::string& command);

class ProgressPrinter {
 public:
  // Nothing is printed before the run has lasted `quiet_s`: short runs stay silent.
  explicit ProgressPrinter(double quiet_s = 0);
  ~ProgressPrinter() { finish(); }
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;
  void operator()(const profile::Progress& p);
  void finish();  // ends a terminal's open line

 private:
  bool tty_;
  bool open_ = false;
  std::int64_t start_ns_, quiet_ns_;
  std::int64_t last_ = 0;
  std::string last_phase_;
};

// The rows of a sweep (bench gpu, bench nccl), with their rate and the time left.
class RowProgress {
 public:
  RowProgress(std::string phase, double quiet_s, std::string unit = "rows");
  void operator()(std::size_t done, std::size_t total, const std::string& current);

 private:
  std::string phase_, unit_;
  std::int64_t first_row_ns_ = 0;
  std::size_t first_done_ = 0;
  ProgressPrinter printer_;
};

}  // namespace p2pscope::app
