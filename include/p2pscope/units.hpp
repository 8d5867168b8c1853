#pragma once
// Sizes, durations, rates and CPU lists: parsing user text and formatting results.
// Sizes use 1024 multiples (K = KiB); rates use GB/s = 1e9 bytes/s.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace p2pscope {

// "1", "4K", "512KiB", "1M", "1G", "2GB" -> bytes. K/M/G/T are 1024 multiples.
// Throws UsageError naming the bad text for junk ("1XB", "-5", "0x", "", overflow).
std::uint64_t parse_size(std::string_view text);

// A list of sizes: comma-separated items, each a size or a range "A:B" meaning every
// power of two from A to B inclusive (A and B need not be powers of two: A, then the
// next powers of two, up to B). Result sorted ascending, duplicates removed.
std::vector<std::uint64_t> parse_size_list(std::string_view text);

// 1048576 -> "1 MiB", 1536 -> "1.5 KiB", 7 -> "7 B".
std::string format_size(std::uint64_t bytes);
// Compact form for column heads and file names: 1048576 -> "1M", 1536 -> "1536".
std::string format_size_compact(std::uint64_t bytes);

// "30s", "500ms", "2m", "1h", "250us", plain number = seconds -> seconds.
double parse_duration_s(std::string_view text);

// bytes/s -> "123.45 GB/s" (1e9).
std::string format_rate(double bytes_per_s);
// ns -> "12.3 us" / "1.20 ms" / "850 ns".
std::string format_duration_ns(double ns);

// The most CPUs Linux supports (NR_CPUS is at most 8192): a CPU id at or beyond it
// is no CPU of any machine, and "0-999999" must not become a million-entry list.
inline constexpr int kMaxCpus = 8192;
// Linux CPU list "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Empty text -> {}.
// Throws UsageError pointing at the bad part for malformed text ("3-1", "a", "1,,2")
// and for a CPU id >= max_cpus (pass the machine's CPU count where it is known).
std::vector<int> parse_cpulist(std::string_view text, int max_cpus = kMaxCpus);
// {0,1,2,3,8} -> "0-3,8".
std::string format_cpulist(const std::vector<int>& cpus);

// Kernel affinity mask "ff,ffffffff" (hex, 32-bit words separated by commas, most
// significant first) <-> CPU ids. A mask longer than max_cpus needs (more than
// ceil(max_cpus / 32) words) or with a bit at or past max_cpus throws UsageError before
// anything is built: a 100 MB mask file is refused, not expanded.
std::vector<int> parse_cpumask(std::string_view text, int max_cpus = kMaxCpus);
std::string format_cpumask(const std::vector<int>& cpus);

// Plain non-negative integer with a clear error naming `what` ("--port").
long long parse_int(std::string_view text, std::string_view what);

}  // namespace p2pscope
