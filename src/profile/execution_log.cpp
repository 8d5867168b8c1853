#include "profile/execution_log.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <map>
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

std::string format_log_row(const LogRow& r) {
  std::string gpu_dur = std::isnan(r.gpu_duration_ns) ? "" : fmt::format("{:.1f}", r.gpu_duration_ns);
  std::string gs = r.gpu_ts_start_ns < 0 ? "" : std::to_string(r.gpu_ts_start_ns);
  std::string ge = r.gpu_ts_end_ns < 0 ? "" : std::to_string(r.gpu_ts_end_ns);
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.2f}", r.config_id, r.src, r.dst, r.size_bytes,
                     r.repetition, r.backend, r.ts_start_ns, r.ts_end_ns, r.duration_ns, gpu_dur, gs, ge, r.batch,
                     r.timing, r.per_transfer_ns());
}

namespace {

template <typename T>
bool parse_num(std::string_view s, T& out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_row(std::string_view line, LogRow& r, bool legacy) {
  const auto f = split_views(line, ',');
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

// A header with a few bytes changed (a bit flip, a torn sector): the header's field count
// and nearly all of its bytes. Anything else is another file, not ours to rewrite.
bool looks_like_damaged_header(std::string_view line) {
  const std::string_view h = kLogHeader;
  if (line.size() != h.size() || split_views(line, ',').size() != split_views(h, ',').size()) return false;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < h.size(); ++i) differ += line[i] != h[i];
  return differ > 0 && differ <= 8;
}

}  // namespace

LogContents read_log(const std::string& path) {
  const std::string text = read_regular_file(path, "execution log");
  LogContents out;
  if (text.empty()) {  // created, never written: nothing was measured into it
    out.header_repair = "the log was empty (0 bytes: created but never written, as when the disk is full)";
    return out;
  }
  std::size_t pos = text.find('\n');
  const std::string_view header = pos == std::string::npos ? std::string_view() : std::string_view(text).substr(0, pos);
  out.legacy = header == kLogHeaderV1;
  if (header != kLogHeader && !out.legacy) {
    if (!looks_like_damaged_header(header))
      throw Error(fmt::format("{} is not a p2pscope execution log: its first line is not the header \"{}...\" nor a "
                              "damaged copy of it; if it is a campaign's log, put that header back as line 1",
                              path, std::string_view(kLogHeader).substr(0, 40)));
    out.header_repair = "its header line was damaged";
    out.bad.push_back({1, std::string(header), "damaged header"});
  }
  out.good_bytes = pos + 1;
  std::size_t start = pos + 1, line_no = 1;
  // A bad line in the middle is one bad line, not the end of the log: the rows after
  // it were measured and flushed like the rows before it.
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string::npos) break;  // unterminated: torn by a kill
    ++line_no;
    const std::string_view line = std::string_view(text).substr(start, nl - start);
    LogRow r;
    if (parse_row(line, r, out.legacy)) {
      out.rows.push_back(std::move(r));
      out.row_line.push_back(line_no);
    } else {
      out.bad.push_back({line_no, std::string(line), "not a valid row"});
    }
    start = nl + 1;
    out.good_bytes = start;
  }
  out.torn_tail = out.good_bytes < text.size();
  if (out.torn_tail) out.tail = text.substr(out.good_bytes);
  return out;
}

ResumeLog prepare_log_for_resume(const std::string& path, const std::string& aside_path,
                                 const std::function<bool(const LogRow&)>& fits) {
  const LogContents log = read_log(path);
  if (log.legacy)
    throw UsageError(fmt::format("{} was written by an older p2pscope (one op per row, no batch column); "
                                 "analyze it as it is, or start a new campaign", path));
  ResumeLog out;
  if (!log.header_repair.empty())
    out.notes.push_back("execution_log.csv: " + log.header_repair + "; a fresh header was written and every row read "
                        "after it kept");
  std::vector<BadLine> aside = log.bad;
  std::map<std::pair<int, int>, std::size_t> first_line;  // (config, rep) -> line
  std::string kept = std::string(kLogHeader) + "\n";
  std::size_t fitting = 0;
  for (std::size_t i = 0; i < log.rows.size(); ++i) {
    const LogRow& r = log.rows[i];
    const std::size_t n = log.row_line[i];
    if (!fits(r)) {
      aside.push_back({n, format_log_row(r), fmt::format("config {} rep {} is not in the saved plan", r.config_id, r.repetition)});
      continue;
    }
    ++fitting;
    const auto [it, fresh] = first_line.emplace(std::make_pair(r.config_id, r.repetition), n);
    if (!fresh) {
      aside.push_back({n, format_log_row(r), fmt::format("config {} rep {} again, first on line {}: two writers?",
                                                         r.config_id, r.repetition, it->second)});
      continue;
    }
    kept += format_log_row(r) + "\n";
    out.rows.push_back(r);
  }
  if (fitting == 0 && !log.rows.empty())
    throw UsageError(fmt::format("{} holds {} row(s) and none is of the saved plan (e.g. config {}, rep {}): it is "
                                 "the log of another campaign", path, log.rows.size(), log.rows.front().config_id,
                                 log.rows.front().repetition));
  if (log.torn_tail)
    aside.push_back({log.row_line.size() + log.bad.size() + 2, log.tail,
                     "torn last line, no newline: the previous run stopped mid-write (killed, or the disk was full)"});
  if (aside.empty()) {
    out.keep_bytes = log.good_bytes;
    return out;
  }
  std::sort(aside.begin(), aside.end(), [](const BadLine& a, const BadLine& b) { return a.line_no < b.line_no; });
  std::string text;
  for (const auto& b : aside) text += fmt::format("line {} ({}): {}\n", b.line_no, b.why, b.text);
  // Set aside first, rewrite second: a kill in between leaves a line in both, never in neither.
  {
    std::FILE* f = std::fopen(aside_path.c_str(), "a");
    if (!f) throw Error("cannot write " + aside_path + ": " + errno_text(errno));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) throw Error("writing " + aside_path + " failed: " + errno_text(errno));
  }
  write_file_atomic(path, kept, Replace::allow);
  out.keep_bytes = kept.size();
  const std::string aside_name = std::filesystem::path(aside_path).filename().string();
  for (std::size_t i = 0; i < aside.size() && i < 5; ++i)
    out.notes.push_back(fmt::format("execution_log.csv line {} set aside in {} ({})", aside[i].line_no, aside_name, aside[i].why));
  if (aside.size() > 5) out.notes.push_back(fmt::format("... and {} more lines set aside in {}", aside.size() - 5, aside_name));
  out.notes.push_back(fmt::format("{} rows kept; every (config, repetition) missing from them is measured again", out.rows.size()));
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
