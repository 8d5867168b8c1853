#pragma once
// execution_log.csv: one line per measured op, appended and flushed as the campaign
// goes, so a kill loses at most the line being written; read back by --resume.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace p2pscope::profile {

struct LogRow {
  int config_id = 0;
  int src = 0, dst = 0;
  std::uint64_t size_bytes = 0;
  int repetition = 0;
  std::string backend;
  std::int64_t ts_start_ns = 0, ts_end_ns = 0;  // host CLOCK_MONOTONIC
  std::int64_t duration_ns = 0;                 // ts_end - ts_start
  double gpu_duration_ns = NAN;                 // device-measured; empty in the file when NAN
  std::int64_t gpu_ts_start_ns = -1, gpu_ts_end_ns = -1;  // GPU global timer; empty when -1
  // Transfers timed by this record: the durations and stamps above cover all of them.
  int batch = 1;
  std::string timing = "single";  // "batch" (back to back, blocking start) or "single" (seed 004's)
  // The time of one transfer: gpu_duration_ns (else duration_ns) / batch.
  double per_transfer_ns() const;
};

// Each row ends in a checksum of the rest of it (crc32, below): a digit changed on the
// disk (in duration_ns, in batch) makes the row no row, set aside, not a measurement.
inline constexpr const char* kLogHeader =
    "config_id,src,dst,size_bytes,repetition,backend,ts_start_ns,ts_end_ns,duration_ns,"
    "gpu_duration_ns,gpu_ts_start_ns,gpu_ts_end_ns,batch,timing,per_transfer_ns,crc32";
// The header before the checksum: still resumed, its rows taken unchecked (and said so).
inline constexpr const char* kLogHeaderUnchecked =
    "config_id,src,dst,size_bytes,repetition,backend,ts_start_ns,ts_end_ns,duration_ns,"
    "gpu_duration_ns,gpu_ts_start_ns,gpu_ts_end_ns,batch,timing,per_transfer_ns";
// The header before batch timing (one op per row): still read, not resumed.
inline constexpr const char* kLogHeaderV1 =
    "config_id,src,dst,size_bytes,repetition,backend,ts_start_ns,ts_end_ns,duration_ns,"
    "gpu_duration_ns,gpu_ts_start_ns,gpu_ts_end_ns";

// CRC-32 (IEEE 802.3, zlib's) of a row's text before its last comma, written as the last
// field in 8 lowercase hex digits.
std::uint32_t log_row_crc(std::string_view fields);
// Whether `line` (a row, without the newline) ends in the checksum of the rest of it.
bool log_row_checks(std::string_view line);

std::string format_log_row(const LogRow& r);  // without the newline; the checksum last

// A complete line of the log that is no row (a changed byte, a disk error): kept
// with its line number (the header is line 1) so that nothing is silently lost.
struct BadLine {
  std::size_t line_no = 0;
  std::string text;  // without the newline
  std::string why;
};

struct LogContents {
  std::vector<LogRow> rows;         // every valid line, duplicates included, in file order
  std::vector<std::size_t> row_line;  // line number of each row
  std::vector<BadLine> bad;         // complete lines that are no row; the rows around them are kept
  std::uint64_t good_bytes = 0;     // file offset just past the last complete line
  std::size_t lines = 0;            // complete lines, the header's included
  bool torn_tail = false;           // something after good_bytes (a kill mid-write)
  std::string tail;                 // that something
  bool legacy = false;              // kLogHeaderV1: rows are single ops; cannot be appended to
  bool unchecked = false;           // kLogHeaderUnchecked: rows carry no checksum
  // The header could not be read but the log is still ours: "" when it was fine, else why
  // (an empty file: created, never written, as when the disk was full; a damaged header
  // line, kept in `bad` as line 1). The rows after a damaged header are read as usual,
  // and a row that a lost newline glued to it is kept when its checksum holds.
  std::string header_repair;
};
// Throws Error when the file cannot be read (a symlink or a hard link at `path` is
// refused), or when its header is not an execution log's. `campaign_header`: the log
// belongs to a campaign (its metadata.json says so), which names the header it writes
// ("" for a campaign from before it did: the rows tell), so a header damaged any way
// (a byte changed, lost or added, a comma or the newline changed) is rebuilt. Without
// it, a first line is taken as a damaged header when rows after it hold or it is a few
// edits from the header.
LogContents read_log(const std::string& path, const std::string* campaign_header = nullptr);

// The log made ready for --resume, under the campaign's lock: every line that cannot
// be continued from (garbled, a (config, repetition) already logged, a row `fits`
// rejects, a torn tail) is appended to `aside_path` as "line N (why): text", then the
// log is rewritten (temporary file + rename) with the other rows as they were, so the
// missing ones are measured again and nothing valid is dropped. Throws UsageError
// for a legacy log and when rows exist but none fits (the log of another plan).
struct ResumeLog {
  std::vector<LogRow> rows;        // kept, one per (config, repetition)
  std::uint64_t keep_bytes = 0;    // the rewritten log's size, for LogWriter
  std::vector<std::string> notes;  // what was set aside, with line numbers
};
// A log without the checksum column is rewritten with one; a note says its old rows
// were kept unchecked. `campaign_header` as for read_log.
ResumeLog prepare_log_for_resume(const std::string& path, const std::string& aside_path,
                                 const std::function<bool(const LogRow&)>& fits, const std::string& campaign_header);

// Appends rows, flushing each to the kernel. Creates the file with its header, or
// continues an existing one after cutting it back to `keep_bytes` (drops a torn line).
// A symlink or a hard link at `path` is refused (open_own_file), never written through.
class LogWriter {
 public:
  LogWriter(const std::string& path, std::uint64_t keep_bytes);  // keep_bytes 0: new file
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;
  void append(const LogRow& r);  // throws Error on a write failure (disk full)

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

}  // namespace p2pscope::profile
