// Progress lines (progress.hpp).
#include "progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "p2pscope/clock.hpp"

namespace p2pscope::app {

std::string clock_text(double s) {
  if (s < 0) return "?";
  const long long t = static_cast<long long>(s + 0.5);
  return t >= 3600 ? fmt::format("{}h{:02d}m", t / 3600, (t / 60) % 60) : fmt::format("{}m{:02d}s", t / 60, t % 60);
}

// P2PSCOPE_PROGRESS_AFTER_S=SECONDS overrides when the first line may appear (0: from the
// first row on). Scripts that wait for a run to reach a row read it, as the interrupt
// tests do: they signal only once the first row has ended, on a machine of any speed.
double progress_after_s(double fallback) {
  const char* v = std::getenv("P2PSCOPE_PROGRESS_AFTER_S");
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return (end != nullptr && *end == '\0' && s >= 0) ? s : fallback;
}

std::function<void(const std::string&)> setup_printer(const std::string& command) {
  return [command](const std::string& what) {
    std::fprintf(stderr, "%s: %s\n", command.c_str(), what.c_str());
    std::fflush(stderr);
  };
}

ProgressPrinter::ProgressPrinter(double quiet_s)
    : tty_(isatty(STDERR_FILENO) == 1),
      start_ns_(monotonic_ns()),
      quiet_ns_(static_cast<std::int64_t>(progress_after_s(quiet_s) * 1e9)) {}

void ProgressPrinter::operator()(const profile::Progress& p) {
  if (monotonic_ns() - start_ns_ < quiet_ns_) return;
  std::string line;
  if (p.total == 0)
    line = fmt::format("[{}] up to {}", p.phase, clock_text(p.eta_s));
  else
    line = fmt::format("[{}] {}/{} ({:.0f}%)  {:.{}f} {}/s  ETA {}  {}", p.phase, p.done, p.total,
                       100.0 * static_cast<double>(p.done) / static_cast<double>(p.total), p.ops_per_s,
                       p.ops_per_s < 10 ? 1 : 0, p.unit, clock_text(p.eta_s), p.current);
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    open_ = true;
  } else {
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    if (p.phase != last_phase_ || now - last_ >= 5 || (p.total > 0 && p.done == p.total)) {
      std::fprintf(stderr, "%s\n", line.c_str());
      last_ = now;
      last_phase_ = p.phase;
    }
  }
  std::fflush(stderr);
}

void ProgressPrinter::finish() {
  if (open_) std::fprintf(stderr, "\n");
  open_ = false;
}

RowProgress::RowProgress(std::string phase, double quiet_s, std::string unit)
    : phase_(std::move(phase)), unit_(std::move(unit)), printer_(quiet_s) {}

// The rate counts from the first row's end, so buffer set-up before it does not skew
// the ETA; the first row itself gives none.
void RowProgress::operator()(std::size_t done, std::size_t total, const std::string& current) {
  if (done <= 1 || first_row_ns_ == 0) first_row_ns_ = monotonic_ns(), first_done_ = done;
  const double elapsed_s = static_cast<double>(monotonic_ns() - first_row_ns_) * 1e-9;
  const double rows = static_cast<double>(done - first_done_);
  profile::Progress p;
  p.phase = phase_;
  p.done = done;
  p.total = total;
  p.unit = unit_.c_str();  // read before this call returns
  p.ops_per_s = elapsed_s > 0 ? rows / elapsed_s : 0;
  p.eta_s = rows > 0 ? elapsed_s * static_cast<double>(total - done) / rows : -1;
  p.current = current;
  printer_(p);
  if (done == total) printer_.finish();
}

}  // namespace p2pscope::app
