#pragma once
// Every read of /sys and /proc goes through an FsRoot: a directory that stands for
// "/". On a live machine it is "/"; in tests and bug reports it is a captured tree
// (tools/capture-fsroot.sh). A missing or unreadable file is std::nullopt, never
// an exception: discovery reports it as "unknown".
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace p2pscope {

class FsRoot {
 public:
  // Throws UsageError if `root` is not a directory. The directory is opened here, once
  // (O_PATH): writes, and the reads of read_beneath, stay in the tree opened here even
  // when another directory is put at its path later. Copies share the descriptor.
  explicit FsRoot(std::filesystem::path root = "/");

  const std::filesystem::path& root() const { return root_; }
  bool is_live() const { return root_ == "/"; }

  // `abs` is an absolute path as on the machine ("/sys/class/net"). Reads follow links
  // as the OS does: sysfs's links are relative, so they stay inside a captured tree;
  // an absolute link would leave it, so pass such paths through resolve() first.
  std::filesystem::path host_path(std::string_view abs) const;

  std::optional<std::string> read(std::string_view abs) const;
  // First line, surrounding whitespace trimmed; a file over 1 MiB is unreadable (nullopt).
  std::optional<std::string> read_line(std::string_view abs) const;
  // Decimal or 0x-prefixed hex integer from the first line.
  std::optional<std::int64_t> read_int(std::string_view abs) const;

  bool exists(std::string_view abs) const;
  bool is_dir(std::string_view abs) const;
  // Entry names (not paths) sorted; empty if missing.
  std::vector<std::string> list(std::string_view abs_dir) const;
  // Raw target of a symlink.
  std::optional<std::string> readlink(std::string_view abs) const;
  // Resolve symlinks inside the root and return the machine path ("/sys/devices/
  // pci0000:00/0000:00:03.0/net/eth0"); absolute link targets are re-rooted.
  std::optional<std::string> resolve(std::string_view abs) const;

  // The CPUs the tree has: the highest id in /sys/devices/system/cpu/possible (else
  // online) plus one, or kMaxCpus when neither says. A cap for the tree's CPU masks.
  int cpu_limit() const;

  // Writes go through the root too (irq apply). Under a root other than "/", the path is
  // opened relative to the root's descriptor with no symlink followed and no ".."
  // (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or the same walk by hand where the
  // kernel lacks openat2), and a hard link (st_nlink > 1: the same file under another
  // name, perhaps outside the tree) is refused: a write never leaves the tree. Throws
  // Error on failure, naming a refused symlink or hard link as such.
  void write(std::string_view abs, std::string_view content) const;

  // What read_beneath found.
  struct BeneathRead {
    std::optional<std::string> text;  // the whole file; nullopt: see the rest
    bool missing = false;             // no such file (not a refusal)
    bool refused = false;             // a symlink, "..", or a hard link on the way: not read
    std::string why;                  // when there is no text
  };
  // The reads that irq apply and reset act on and copy into their backup: under a root
  // other than "/", opened as write() opens (so nothing outside the tree is read),
  // regular files only, at most `max_bytes`. On "/", the file as read() reads it.
  BeneathRead read_beneath(std::string_view abs, std::uint64_t max_bytes = 1u << 20) const;

 private:
  std::filesystem::path root_;
  std::shared_ptr<const int> root_fd_;  // the root opened once (O_PATH | O_DIRECTORY); null on "/"
};

}  // namespace p2pscope
