#include "profile/execution_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::profile {

double LogRow::per_transfer_ns() const {
  const double whole = std::isnan(gpu_duration_ns) ? static_cast<double>(duration_ns) : gpu_duration_ns;
  return whole / std::max(batch, 1);
}

std::uint32_t log_row_crc(std::string_view fields) {
  // Bitwise: rows are ~100 bytes, written one per op; a table would buy nothing here.
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : fields) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

bool log_row_checks(std::string_view line) {
  const auto comma = line.rfind(',');
  if (comma == std::string_view::npos || line.size() - comma - 1 != 8) return false;
  std::uint32_t want = 0;
  const char* b = line.data() + comma + 1;
  const auto [p, ec] = std::from_chars(b, b + 8, want, 16);
  return ec == std::errc() && p == b + 8 && log_row_crc(line.substr(0, comma)) == want;
}

std::string format_log_row(const LogRow& r) {
  std::string gpu_dur = std::isnan(r.gpu_duration_ns) ? "" : fmt::format("{:.1f}", r.gpu_duration_ns);
  std::string gs = r.gpu_ts_start_ns < 0 ? "" : std::to_string(r.gpu_ts_start_ns);
  std::string ge = r.gpu_ts_end_ns < 0 ? "" : std::to_string(r.gpu_ts_end_ns);
  std::string row = fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.2f}", r.config_id, r.src, r.dst,
                                r.size_bytes, r.repetition, r.backend, r.ts_start_ns, r.ts_end_ns, r.duration_ns,
                                gpu_dur, gs, ge, r.batch, r.timing, r.per_transfer_ns());
  return row + fmt::format(",{:08x}", log_row_crc(row));
}

namespace {

enum class LogFormat { v1, unchecked, checked };

constexpr const char* kNotARow = "not a valid row";

template <typename T>
bool parse_num(std::string_view s, T& out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// nullptr when `line` is a row of the format (into r), else why it is none.
const char* parse_row(std::string_view line, LogRow& r, LogFormat format) {
  if (format == LogFormat::checked) {
    const auto comma = line.rfind(',');
    if (comma == std::string_view::npos || split_views(line, ',').size() != 16u) return kNotARow;
    if (!log_row_checks(line)) return "checksum mismatch: a byte of the row changed after it was written";
    line = line.substr(0, comma);
  }
  const bool v1 = format == LogFormat::v1;
  const auto f = split_views(line, ',');
  if (f.size() != (v1 ? 12u : 15u)) return kNotARow;
  if (!parse_num(f[0], r.config_id) || !parse_num(f[1], r.src) || !parse_num(f[2], r.dst) ||
      !parse_num(f[3], r.size_bytes) || !parse_num(f[4], r.repetition) || f[5].empty() ||
      !parse_num(f[6], r.ts_start_ns) || !parse_num(f[7], r.ts_end_ns) || !parse_num(f[8], r.duration_ns))
    return kNotARow;
  // True of every row a campaign writes: a changed digit in one of the three breaks it,
  // in an unchecked log too.
  if (r.duration_ns != r.ts_end_ns - r.ts_start_ns)
    return "duration_ns is not ts_end_ns - ts_start_ns: a digit changed after the row was written";
  r.backend = std::string(f[5]);
  r.gpu_duration_ns = NAN;
  // from_chars for double is in GCC 11+; fine for our g++ 12.
  if (!f[9].empty() && !parse_num(f[9], r.gpu_duration_ns)) return kNotARow;
  r.gpu_ts_start_ns = -1;
  r.gpu_ts_end_ns = -1;
  if (!f[10].empty() && !parse_num(f[10], r.gpu_ts_start_ns)) return kNotARow;
  if (!f[11].empty() && !parse_num(f[11], r.gpu_ts_end_ns)) return kNotARow;
  if (v1) return nullptr;
  if (!parse_num(f[12], r.batch) || r.batch < 1 || (f[13] != "batch" && f[13] != "single")) return kNotARow;
  r.timing = std::string(f[13]);
  return nullptr;
}

// The fewest edits (a byte changed, lost or added) that turn some start of `line` into
// `h`: a header with a few bytes damaged is a few edits away, a header whose newline was
// lost is 0 or 1 from the start of its line.
std::size_t header_edits(std::string_view line, std::string_view h) {
  const std::size_t m = std::min(line.size(), h.size() + 16);
  std::vector<std::size_t> prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= h.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (h[i - 1] != line[j - 1] ? 1u : 0u)});
    std::swap(prev, cur);
  }
  return *std::min_element(prev.begin(), prev.end());
}

// The format of a log whose first line is no header: the one metadata.json records, else
// the one its rows hold, else the header the line is nearer to when it is a few edits
// from one (or the campaign vouches for the file). Throws Error when nothing says ours.
LogFormat damaged_header_format(std::string_view text, std::string_view line1, const std::string* campaign_header,
                                const std::string& path) {
  if (campaign_header && *campaign_header == kLogHeader) return LogFormat::checked;
  if (campaign_header && *campaign_header == kLogHeaderUnchecked) return LogFormat::unchecked;
  std::size_t checked = 0, unchecked = 0, start = std::min(text.size(), line1.size() + 1);
  for (int n = 0; n < 1000 && start < text.size(); ++n) {
    const auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) break;
    LogRow r;
    const std::string_view line = text.substr(start, nl - start);
    if (!parse_row(line, r, LogFormat::checked)) ++checked;
    else if (!parse_row(line, r, LogFormat::unchecked)) ++unchecked;
    start = nl + 1;
  }
  if (checked > 0) return LogFormat::checked;
  if (unchecked > 0) return LogFormat::unchecked;
  const std::size_t to_checked = header_edits(line1, kLogHeader), to_unchecked = header_edits(line1, kLogHeaderUnchecked);
  if (std::min(to_checked, to_unchecked) <= 8 || campaign_header)
    return to_unchecked < to_checked ? LogFormat::unchecked : LogFormat::checked;
  throw Error(fmt::format("{} is not a p2pscope execution log: its first line is not the header \"{}...\" nor a "
                          "damaged copy of it, and no line after it is a row; if it is a campaign's log, put that "
                          "header back as line 1",
                          path, std::string_view(kLogHeader).substr(0, 40)));
}

// A checked row that a lost or changed newline glued to the damaged header: the first
// place in the line from which the rest is a row whose checksum holds (one place in 2^32
// holds by chance).
bool glued_row(std::string_view line1, LogRow& r) {
  for (std::size_t k = 1; k < line1.size(); ++k)
    if (!parse_row(line1.substr(k), r, LogFormat::checked)) return true;
  return false;
}

}  // namespace

LogContents read_log(const std::string& path, const std::string* campaign_header) {
  const std::string text = read_own_file(path, "execution log");
  LogContents out;
  if (text.empty()) {  // created, never written: nothing was measured into it
    out.header_repair = "the log was empty (0 bytes: created but never written, as when the disk is full)";
    return out;
  }
  const std::size_t pos = text.find('\n');
  const std::string_view header = pos == std::string::npos ? std::string_view() : std::string_view(text).substr(0, pos);
  LogFormat format = LogFormat::checked;
  if (header == kLogHeaderUnchecked) {
    format = LogFormat::unchecked;
  } else if (header == kLogHeaderV1) {
    format = LogFormat::v1;
  } else if (header != kLogHeader) {
    format = damaged_header_format(text, header, campaign_header, path);
    out.header_repair = "its header line was damaged";
    out.bad.push_back({1, std::string(header), "damaged header"});
    LogRow r;
    if (format == LogFormat::checked && glued_row(header, r)) {
      out.rows.push_back(std::move(r));
      out.row_line.push_back(1);
      out.header_repair += " (the first row, glued to it by a lost newline, holds its checksum: kept)";
    }
  }
  out.legacy = format == LogFormat::v1;
  out.unchecked = format == LogFormat::unchecked;
  out.good_bytes = pos == std::string::npos ? 0 : pos + 1;
  std::size_t start = out.good_bytes, line_no = 1;
  // A bad line in the middle is one bad line, not the end of the log: the rows after
  // it were measured and flushed like the rows before it.
  while (pos != std::string::npos && start < text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string::npos) break;  // unterminated: torn by a kill
    ++line_no;
    const std::string_view line = std::string_view(text).substr(start, nl - start);
    LogRow r;
    if (const char* why = parse_row(line, r, format)) {
      out.bad.push_back({line_no, std::string(line), why});
    } else {
      out.rows.push_back(std::move(r));
      out.row_line.push_back(line_no);
    }
    start = nl + 1;
    out.good_bytes = start;
  }
  out.lines = pos == std::string::npos ? 0 : line_no;
  out.torn_tail = out.good_bytes < text.size();
  if (out.torn_tail) out.tail = text.substr(out.good_bytes);
  return out;
}

LogWriter::LogWriter(const std::string& path, std::uint64_t keep_bytes) : path_(path) {
  if (keep_bytes == 0) {
    f_ = open_own_stream(path, O_CREAT | O_TRUNC, "execution log");
    std::fprintf(f_, "%s\n", kLogHeader);
    std::fflush(f_);
    return;
  }
  f_ = open_own_stream(path, O_APPEND, "execution log");
  // Cut a torn last line away so that appended rows start on a line of their own.
  if (::ftruncate(::fileno(f_), static_cast<off_t>(keep_bytes)) != 0) {
    const int err = errno;
    std::fclose(f_);
    f_ = nullptr;
    throw Error("cannot trim " + path + ": " + errno_text(err));
  }
}

LogWriter::~LogWriter() {
  if (f_) std::fclose(f_);
}

void LogWriter::append(const LogRow& r) {
  const std::string line = format_log_row(r) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0) {
    const int e = errno;
    if (e == ENOSPC || e == EDQUOT)
      throw Error(fmt::format("the disk is full ({}): {} could not take the next row; every row before it is kept. "
                              "Free some space, then `p2pscope profile --resume {}` measures the rest",
                              errno_text(e), path_, std::filesystem::path(path_).parent_path().string()));
    throw Error("writing " + path_ + " failed: " + errno_text(e));
  }
}

}  // namespace p2pscope::profile
