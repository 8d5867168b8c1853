// P2PSCOPE_TRACE_PHASES (phase_trace.hpp).
#include "p2pscope/phase_trace.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace p2pscope {
namespace {

// The process's start in CLOCK_BOOTTIME seconds: /proc/self/stat's field 22, in clock
// ticks since boot (10 ms on most kernels). Negative when it cannot be read.
double process_start_s() {
  std::ifstream f("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return std::strtod(field.c_str(), nullptr) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return -1;
}

double boottime_s() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

void trace_phase(std::string_view what) {
  static const bool on = std::getenv("P2PSCOPE_TRACE_PHASES") != nullptr;
  if (!on) return;
  static const double start = process_start_s();
  std::fprintf(stderr, "[p2pscope +%.3f s] %.*s\n", start >= 0 ? boottime_s() - start : 0.0, static_cast<int>(what.size()),
               what.data());
}

}  // namespace p2pscope
