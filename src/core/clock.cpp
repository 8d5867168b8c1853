#include "p2pscope/clock.hpp"

#include <ctime>

namespace p2pscope {
namespace {
std::int64_t read_clock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
std::string format_utc(std::int64_t ns, const char* fmt) {
  const std::time_t secs = static_cast<std::time_t>(ns / 1000000000LL);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}
}  // namespace

std::int64_t monotonic_ns() { return read_clock(CLOCK_MONOTONIC); }
std::int64_t realtime_ns() { return read_clock(CLOCK_REALTIME); }
std::string iso8601_utc(std::int64_t ns) { return format_utc(ns, "%Y-%m-%dT%H:%M:%SZ"); }
std::string compact_timestamp(std::int64_t ns) { return format_utc(ns, "%Y%m%d-%H%M%S"); }

}  // namespace p2pscope
