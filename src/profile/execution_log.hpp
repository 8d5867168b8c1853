#pragma once
// execution_log.csv: one line per measured op, appended and flushed as the campaign
// goes, so a kill loses at most the line being written; read back by --resume.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
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

inline constexpr const char* kLogHeader =
    "config_id,src,dst,size_bytes,repetition,backend,ts_start_ns,ts_end_ns,duration_ns,"
    "gpu_duration_ns,gpu_ts_start_ns,gpu_ts_end_ns,batch,timing,per_transfer_ns";
// The header before batch timing (one op per row): still read, not resumed.
inline constexpr const char* kLogHeaderV1 =
    "config_id,src,dst,size_bytes,repetition,backend,ts_start_ns,ts_end_ns,duration_ns,"
    "gpu_duration_ns,gpu_ts_start_ns,gpu_ts_end_ns";

std::string format_log_row(const LogRow& r);  // without the newline

struct LogContents {
  std::vector<LogRow> rows;
  std::uint64_t good_bytes = 0;  // file offset just past the last complete, valid line
  bool torn_tail = false;        // something after good_bytes (a kill mid-write)
  bool legacy = false;           // kLogHeaderV1: rows are single ops; cannot be appended to
};
// Throws Error when the file cannot be read or its header is not an execution log.
LogContents read_log(const std::string& path);

// Appends rows, flushing each to the kernel. Creates the file with its header, or
// continues an existing one after cutting it back to `keep_bytes` (drops a torn line).
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
