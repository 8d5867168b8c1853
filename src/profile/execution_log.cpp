#include "profile/execution_log.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "p2pscope/error.hpp"

namespace p2pscope::profile {

double LogRow::per_transfer_ns() const {
  const double whole = std::isnan(gpu_duration_ns) ? static_cast<double>(duration_ns) : gpu_duration_ns;
  return whole / std::max(batch, 1);
}

std::string format_log_row(const LogRow& r) {
  std::string gpu_dur = std::isnan(r.gpu_duration_ns) ? "" : fmt::format("{:.1f}", r.gpu_duration_ns);
  std::string gs = r.gpu_ts_start_ns < 0 ? "" : std::to_string(r.gpu_ts_start_ns);
  std::string ge = r.gpu_ts_end_ns < 0 ? "" : std::to_string(r.gpu_ts_end_ns);
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.2f}", r.config_id, r.src, r.dst, r.size_bytes,
                     r.repetition, r.backend, r.ts_start_ns, r.ts_end_ns, r.duration_ns, gpu_dur, gs, ge, r.batch,
                     r.timing, r.per_transfer_ns());
}

namespace {

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto c = line.find(',', start);
    out.push_back(line.substr(start, c == std::string_view::npos ? std::string_view::npos : c - start));
    if (c == std::string_view::npos) break;
    start = c + 1;
  }
  return out;
}

template <typename T>
bool parse_num(std::string_view s, T& out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_row(std::string_view line, LogRow& r, bool legacy) {
  const auto f = split_commas(line);
  if (f.size() != (legacy ? 12u : 15u)) return false;
  if (!parse_num(f[0], r.config_id) || !parse_num(f[1], r.src) || !parse_num(f[2], r.dst) ||
      !parse_num(f[3], r.size_bytes) || !parse_num(f[4], r.repetition) || f[5].empty() ||
      !parse_num(f[6], r.ts_start_ns) || !parse_num(f[7], r.ts_end_ns) || !parse_num(f[8], r.duration_ns))
    return false;
  r.backend = std::string(f[5]);
  r.gpu_duration_ns = NAN;
  if (!f[9].empty()) {
    // from_chars for double is in GCC 11+; fine for our g++ 12.
    if (!parse_num(f[9], r.gpu_duration_ns)) return false;
  }
  r.gpu_ts_start_ns = -1;
  r.gpu_ts_end_ns = -1;
  if (!f[10].empty() && !parse_num(f[10], r.gpu_ts_start_ns)) return false;
  if (!f[11].empty() && !parse_num(f[11], r.gpu_ts_end_ns)) return false;
  if (legacy) return true;
  if (!parse_num(f[12], r.batch) || r.batch < 1 || (f[13] != "batch" && f[13] != "single")) return false;
  r.timing = std::string(f[13]);
  return true;
}

}  // namespace

LogContents read_log(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path + ": " + errno_text(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  LogContents out;
  std::size_t pos = text.find('\n');
  const std::string_view header = pos == std::string::npos ? std::string_view() : std::string_view(text).substr(0, pos);
  out.legacy = header == kLogHeaderV1;
  if (header != kLogHeader && !out.legacy)
    throw Error(path + " is not a p2pscope execution log (its first line is not the expected header)");
  out.good_bytes = pos + 1;
  std::size_t start = pos + 1;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string::npos) break;  // unterminated: torn by a kill
    LogRow r;
    if (!parse_row(std::string_view(text).substr(start, nl - start), r, out.legacy)) break;
    out.rows.push_back(std::move(r));
    start = nl + 1;
    out.good_bytes = start;
  }
  out.torn_tail = out.good_bytes < text.size();
  return out;
}

LogWriter::LogWriter(const std::string& path, std::uint64_t keep_bytes) : path_(path) {
  if (keep_bytes == 0) {
    f_ = std::fopen(path.c_str(), "w");
    if (!f_) throw Error("cannot create " + path + ": " + errno_text(errno));
    std::fprintf(f_, "%s\n", kLogHeader);
    std::fflush(f_);
    return;
  }
  // Cut a torn last line away so that appended rows start on a line of their own.
  if (truncate(path.c_str(), static_cast<off_t>(keep_bytes)) != 0)
    throw Error("cannot trim " + path + ": " + errno_text(errno));
  f_ = std::fopen(path.c_str(), "a");
  if (!f_) throw Error("cannot append to " + path + ": " + errno_text(errno));
}

LogWriter::~LogWriter() {
  if (f_) std::fclose(f_);
}

void LogWriter::append(const LogRow& r) {
  const std::string line = format_log_row(r) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    throw Error("writing " + path_ + " failed: " + errno_text(errno));
}

}  // namespace p2pscope::profile
