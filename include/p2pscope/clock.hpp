#pragma once
// Host clocks in nanoseconds.
#include <cstdint>
#include <string>

namespace p2pscope {
std::int64_t monotonic_ns();  // CLOCK_MONOTONIC
std::int64_t realtime_ns();   // CLOCK_REALTIME
// UTC ISO-8601 "2026-11-23T07:49:00Z" of a realtime ns value; and a file-name-safe
// form "20261123-074900".
std::string iso8601_utc(std::int64_t realtime_ns);
std::string compact_timestamp(std::int64_t realtime_ns);
}  // namespace p2pscope
