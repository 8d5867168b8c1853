#include "p2pscope/units.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Parses leading decimal digits (and an optional fraction) of `s`; returns the
// number of characters consumed, 0 if none.
std::size_t parse_decimal(std::string_view s, double& value) {
  std::size_t i = 0;
  double v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) v = v * 10 + (s[i++] - '0');
  if (i == 0) return 0;
  if (i < s.size() && s[i] == '.') {
    std::size_t j = i + 1;
    double scale = 0.1;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
      v += (s[j++] - '0') * scale;
      scale /= 10;
    }
    if (j == i + 1) return 0;  // "1." is junk
    i = j;
  }
  value = v;
  return i;
}

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  const std::string_view t = trim(text);
  const std::string quoted = "'" + std::string(text) + "'";
  if (t.empty()) throw UsageError("empty size; expected a number such as 4096, 4K, 1M or 1G");
  if (t.front() == '-') throw UsageError("size " + quoted + " is negative; sizes are byte counts >= 0");
  double value = 0;
  const std::size_t used = parse_decimal(t, value);
  if (used == 0) throw UsageError("size " + quoted + " does not start with a number (examples: 1, 4K, 512KiB, 1M, 1G)");
  const std::string unit = lower(trim(t.substr(used)));
  double mult = 0;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") mult = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else
    throw UsageError("size " + quoted + " has an unknown unit '" + std::string(trim(t.substr(used))) +
                     "'; use B, K, M, G or T (1024 multiples)");
  const double bytes = value * mult;
  if (bytes >= 18446744073709551615.0) throw UsageError("size " + quoted + " is too large");
  if (bytes != std::floor(bytes)) throw UsageError("size " + quoted + " is not a whole number of bytes");
  return static_cast<std::uint64_t>(bytes);
}

std::vector<std::uint64_t> parse_size_list(std::string_view text) {
  std::set<std::uint64_t> out;
  std::string_view rest = text;
  if (trim(text).empty()) throw UsageError("empty size list; expected e.g. 1:1G or 1K,64K,1M");
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) throw UsageError("empty item in size list '" + std::string(text) + "'");
    const auto colon = item.find(':');
    const auto colon2 = colon == std::string_view::npos ? colon : item.find(':', colon + 1);
    if (colon == std::string_view::npos) {
      const std::uint64_t v = parse_size(item);
      if (v == 0) throw UsageError("size '" + std::string(item) + "' is 0 bytes: it measures nothing; give 1 or more");
      out.insert(v);
    } else if (colon2 != std::string_view::npos) {
      // LO:HI:F, nccl-tests' -b LO -e HI -f F: LO, LO*F, LO*F^2, ... up to HI.
      const std::uint64_t lo = parse_size(item.substr(0, colon));
      const std::uint64_t hi = parse_size(item.substr(colon + 1, colon2 - colon - 1));
      const std::string_view fs = trim(item.substr(colon2 + 1));
      std::uint64_t f = 0;
      for (char c : fs) {
        if (c < '0' || c > '9' || f > 1000000) {
          f = 0;
          break;
        }
        f = f * 10 + static_cast<std::uint64_t>(c - '0');
      }
      if (fs.empty() || f < 2)
        throw UsageError("size range '" + std::string(item) + "': the step after the second ':' must be a whole factor of 2 "
                         "or more (as nccl-tests' -f), e.g. 8:1G:4");
      if (lo == 0) throw UsageError("size range '" + std::string(item) + "' starts at 0; start at 1 or more");
      if (lo > hi) throw UsageError("size range '" + std::string(item) + "' goes down; write it as SMALL:LARGE:FACTOR");
      for (std::uint64_t p = lo; p <= hi; p *= f) {
        out.insert(p);
        if (p > hi / f) break;
      }
    } else {
      const std::uint64_t lo = parse_size(item.substr(0, colon));
      const std::uint64_t hi = parse_size(item.substr(colon + 1));
      if (lo == 0) throw UsageError("size range '" + std::string(item) + "' starts at 0; start at 1 or more");
      if (lo > hi) throw UsageError("size range '" + std::string(item) + "' goes down; write it as SMALL:LARGE");
      out.insert(lo);
      std::uint64_t p = 1;
      while (p <= lo && p < (std::uint64_t{1} << 62)) p <<= 1;
      for (; p <= hi; p <<= 1) {
        out.insert(p);
        if (p >= (std::uint64_t{1} << 62)) break;
      }
      out.insert(hi);
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return {out.begin(), out.end()};
}

std::string format_size(std::uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  if (u == 0 || v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  else std::snprintf(buf, sizeof buf, "%.3g %s", v, units[u]);
  return buf;
}

std::string format_size_compact(std::uint64_t bytes) {
  static const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (bytes >= 1024 && bytes % 1024 == 0 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + units[u];
}

double parse_duration_s(std::string_view text) {
  const std::string_view t = trim(text);
  const std::string quoted = "'" + std::string(text) + "'";
  double value = 0;
  const std::size_t used = parse_decimal(t, value);
  if (used == 0) throw UsageError("duration " + quoted + " does not start with a number (examples: 30s, 500ms, 2m)");
  const std::string unit = lower(trim(t.substr(used)));
  if (unit.empty() || unit == "s") return value;
  if (unit == "ms") return value / 1e3;
  if (unit == "us") return value / 1e6;
  if (unit == "ns") return value / 1e9;
  if (unit == "m" || unit == "min") return value * 60;
  if (unit == "h") return value * 3600;
  throw UsageError("duration " + quoted + " has an unknown unit; use ns, us, ms, s, m or h");
}

std::string format_rate(double bytes_per_s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB/s", bytes_per_s / 1e9);
  return buf;
}

std::string format_duration_ns(double ns) {
  char buf[64];
  if (ns < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else if (ns < 1e9) std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  return buf;
}

long long parse_int(std::string_view text, std::string_view what) {
  const std::string_view t = trim(text);
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    throw UsageError(std::string(what) + ": '" + std::string(text) + "' is not a non-negative whole number");
  if (t.size() > 18) throw UsageError(std::string(what) + ": '" + std::string(text) + "' is too large");
  return std::stoll(std::string(t));
}

std::vector<int> parse_cpulist(std::string_view text, int max_cpus) {
  std::set<int> out;
  const std::string_view t = trim(text);
  if (t.empty()) return {};
  std::string_view rest = t;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    const std::string where = "'" + std::string(item) + "' in CPU list '" + std::string(t) + "'";
    if (item.empty()) throw UsageError("empty item in CPU list '" + std::string(t) + "'");
    const auto dash = item.find('-');
    auto num = [&](std::string_view s) {
      s = trim(s);
      if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) || s.size() > 6)
        throw UsageError("bad CPU number " + where);
      const int cpu = std::stoi(std::string(s));
      if (cpu >= max_cpus)
        throw UsageError("CPU " + std::to_string(cpu) + " in CPU list '" + std::string(t) + "' is beyond the " +
                         std::to_string(max_cpus) + (max_cpus == kMaxCpus ? " CPUs Linux supports" : " CPUs of this machine"));
      return cpu;
    };
    if (dash == std::string_view::npos) {
      out.insert(num(item));
    } else {
      const int lo = num(item.substr(0, dash)), hi = num(item.substr(dash + 1));
      if (lo > hi) throw UsageError("range goes down " + where);
      for (int c = lo; c <= hi; ++c) out.insert(c);
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return {out.begin(), out.end()};
}

std::string format_cpulist(const std::vector<int>& cpus_in) {
  std::vector<int> cpus(cpus_in);
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> parse_cpumask(std::string_view text, int max_cpus) {
  max_cpus = std::clamp(max_cpus, 1, kMaxCpus);
  const std::string_view tv = trim(text);
  // The kernel prints nr_cpu_ids bits: at most one word of 8 digits and a comma per 32 CPUs.
  const std::size_t max_words = static_cast<std::size_t>((max_cpus + 31) / 32);
  if (tv.size() > 9 * max_words + 9)
    throw UsageError("CPU mask of " + std::to_string(tv.size()) + " characters is longer than " +
                     std::to_string(max_cpus) + " CPUs need");
  const std::string t(tv);
  if (t.empty()) throw UsageError("empty CPU mask");
  std::vector<std::string> words;
  std::size_t start = 0;
  while (true) {
    const auto comma = t.find(',', start);
    words.push_back(t.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<int> cpus;
  int base = 0;
  for (auto it = words.rbegin(); it != words.rend(); ++it, base += 32) {
    const std::string& w = *it;
    if (w.empty() || w.size() > 8 || !std::all_of(w.begin(), w.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
      throw UsageError("bad word '" + w + "' in CPU mask '" + t + "' (expected hex words of at most 8 digits separated by commas)");
    const unsigned long v = std::stoul(w, nullptr, 16);
    for (int b = 0; b < 32; ++b)
      if (v & (1UL << b)) {
        if (base + b >= max_cpus)
          throw UsageError("CPU " + std::to_string(base + b) + " in CPU mask '" + t.substr(0, 100) +
                           (t.size() > 100 ? "...'" : "'") + " is beyond the " + std::to_string(max_cpus) +
                           (max_cpus == kMaxCpus ? " CPUs Linux supports" : " CPUs of this machine"));
        cpus.push_back(base + b);
      }
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

std::string format_cpumask(const std::vector<int>& cpus) {
  int max_cpu = 0;
  for (int c : cpus) max_cpu = std::max(max_cpu, c);
  const int nwords = max_cpu / 32 + 1;
  std::vector<std::uint32_t> words(static_cast<std::size_t>(nwords), 0);
  for (int c : cpus)
    if (c >= 0) words[static_cast<std::size_t>(c / 32)] |= (1u << (c % 32));
  std::string out;
  for (int i = nwords - 1; i >= 0; --i) {
    char buf[16];
    // The kernel writes the top word without padding and the others as 8 digits.
    std::snprintf(buf, sizeof buf, i == nwords - 1 ? "%x" : "%08x", words[static_cast<std::size_t>(i)]);
    if (!out.empty()) out += ',';
    out += buf;
  }
  return out;
}

}  // namespace p2pscope
