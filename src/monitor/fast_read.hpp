#pragma once
// The sampler's hot reads, cheaper than FsRoot::read (ifstream + ostringstream): one
// open/read/close into a reused buffer, and a /proc/interrupts parser that keeps only
// what the monitor uses. On a 208-CPU host /proc/interrupts is megabytes per second.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "p2pscope/fsroot.hpp"
#include "p2pscope/topo.hpp"

namespace p2pscope::monitor {

// Whole file at `abs` (through the root) into `out`; false when it cannot be opened or read.
bool read_into(const FsRoot& fs, const std::string& abs, std::string& out);

// First unsigned decimal of a small file (sysfs counters); nullopt when absent or not a number.
std::optional<std::uint64_t> read_u64(const FsRoot& fs, const std::string& abs);

// read_into / read_u64 that keep files open between samples on the live root: the
// kernel regenerates a /proc or sysfs file on every read from offset 0, and the path
// lookup, open and close are most of a sample's cost (kernfs revalidation). Files
// not read in a sample are closed by sweep(); a file that fails (NIC removed) is
// reopened once. Captured trees are opened each time (their files are replaced,
// not regenerated). One thread at a time.
class FileCache {
 public:
  explicit FileCache(bool keep_open) : keep_open_(keep_open) {}
  ~FileCache();
  FileCache(const FileCache&) = delete;
  FileCache& operator=(const FileCache&) = delete;
  bool read(const FsRoot& fs, const std::string& abs, std::string& out);
  std::optional<std::uint64_t> read_u64(const FsRoot& fs, const std::string& abs);
  void sweep();  // closes files not read since the last sweep
  std::size_t open_files() const { return fds_.size(); }

 private:
  struct Entry {
    int fd = -1;
    bool used = false;
  };
  bool keep_open_;
  std::unordered_map<std::string, Entry> fds_;
  std::string small_;
};

// /proc/interrupts into `t`: header CPU columns, numbered IRQ lines with chip and action
// names (as topo::parse_interrupts splits them). Unlike topo's parser, Irq::cpu_columns
// stays empty (every line shares t.cpu_columns) and named lines (LOC, NMI) are skipped.
// Numbered lines with fewer counts than columns (torn) count as malformed.
void parse_interrupt_counts(const std::string& text, topo::InterruptTable& t);

}  // namespace p2pscope::monitor
