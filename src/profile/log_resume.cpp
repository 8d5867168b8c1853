// The execution log made ready for --resume (execution_log.hpp): rows that cannot be
// continued from are set aside, the rest kept as they were.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "profile/execution_log.hpp"

namespace p2pscope::profile {
namespace {

// Appends the set-aside lines: never through a link planted at the name, synced before
// the log is rewritten without them.
void append_aside(const std::string& aside_path, const std::string& text) {
  const int fd = open_own_file(aside_path, O_CREAT | O_APPEND, "the set-aside file");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n == 0 ? EIO : errno;
      ::close(fd);
      throw Error("writing " + aside_path + " failed: " + errno_text(err));
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !synced) throw Error("writing " + aside_path + " failed: " + errno_text(err));
}

std::vector<std::string> resume_notes(const LogContents& log, std::size_t kept) {
  std::vector<std::string> notes;
  if (!log.header_repair.empty())
    notes.push_back("execution_log.csv: " + log.header_repair +
                    "; a fresh header (the one metadata.json records) was written and every intact row kept");
  if (log.unchecked)
    notes.push_back(fmt::format(
        "execution_log.csv has no checksum column (written by an older p2pscope): its {} row(s) were kept unchecked (a "
        "digit changed on the disk could not be told from a measurement); the log was rewritten with a checksum on "
        "every row from now on",
        kept));
  return notes;
}

}  // namespace

ResumeLog prepare_log_for_resume(const std::string& path, const std::string& aside_path,
                                 const std::function<bool(const LogRow&)>& fits, const std::string& campaign_header) {
  const LogContents log = read_log(path, &campaign_header);
  if (log.legacy)
    throw UsageError(fmt::format("{} was written by an older p2pscope (one op per row, no batch column); "
                                 "analyze it as it is, or start a new campaign", path));
  ResumeLog out;
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
  out.notes = resume_notes(log, out.rows.size());
  if (log.torn_tail)
    aside.push_back({log.lines + 1, log.tail,
                     "torn last line, no newline: the previous run stopped mid-write (killed, or the disk was full)"});
  // An unchecked log is rewritten too: rows appended with a checksum under its old header
  // would be no rows.
  if (aside.empty() && !log.unchecked) {
    out.keep_bytes = log.good_bytes;
    return out;
  }
  std::sort(aside.begin(), aside.end(), [](const BadLine& a, const BadLine& b) { return a.line_no < b.line_no; });
  std::string text;
  for (const auto& b : aside) text += fmt::format("line {} ({}): {}\n", b.line_no, b.why, b.text);
  // Set aside first, rewrite second: a kill in between leaves a line in both, never in neither.
  if (!text.empty()) append_aside(aside_path, text);
  write_file_atomic(path, kept, Replace::allow);
  out.keep_bytes = kept.size();
  const std::string aside_name = std::filesystem::path(aside_path).filename().string();
  for (std::size_t i = 0; i < aside.size() && i < 5; ++i)
    out.notes.push_back(fmt::format("execution_log.csv line {} set aside in {} ({})", aside[i].line_no, aside_name, aside[i].why));
  if (aside.size() > 5) out.notes.push_back(fmt::format("... and {} more lines set aside in {}", aside.size() - 5, aside_name));
  out.notes.push_back(fmt::format("{} rows kept; every (config, repetition) missing from them is measured again", out.rows.size()));
  return out;
}

}  // namespace p2pscope::profile
