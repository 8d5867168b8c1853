#pragma once
// Whole-file reads and writes that a hostile or broken tree cannot turn against us:
// reads take regular files only (a fifo would block forever, /dev/zero never ends)
// up to a size cap; writes go through a temporary file and a rename, so a reader
// never sees half a file, a kill leaves the old file whole, and a symlink planted
// at the target is replaced, never written through.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace p2pscope {

// Larger than any /sys or /proc file or result we read (a /proc/interrupts of 256
// CPUs and 2000 IRQs is about 6 MB), far below what would exhaust memory.
inline constexpr std::uint64_t kMaxReadBytes = 256ull << 20;

// The whole file, or nullopt with `why` set: missing, unreadable, not a regular file
// (fifo, socket, device, directory: refused without blocking), or over max_bytes.
std::optional<std::string> try_read_regular_file(const std::filesystem::path& p, std::uint64_t max_bytes = kMaxReadBytes,
                                                 std::string* why = nullptr);
// As above, of a descriptor already open (read from its offset; the caller closes it).
std::optional<std::string> try_read_open_file(int fd, std::uint64_t max_bytes = kMaxReadBytes, std::string* why = nullptr);
// As above, but throws Error("cannot read <what> 'p': why").
std::string read_regular_file(const std::filesystem::path& p, std::string_view what = "file",
                              std::uint64_t max_bytes = kMaxReadBytes);

// A file of a folder someone else may have planted links in (a campaign folder): read
// whole, but a symlink at p is refused (O_NOFOLLOW), and so is a hard link (st_nlink > 1:
// the same file under another name, perhaps outside the folder). Throws Error naming p.
std::string read_own_file(const std::filesystem::path& p, std::string_view what, std::uint64_t max_bytes = kMaxReadBytes);

// Opens p for writing (O_WRONLY, plus O_CREAT, O_APPEND or O_TRUNC from `flags`) the
// same way: a symlink or a hard link at p is refused before anything is cut or written.
// A fifo without a reader fails at once. Throws Error naming p and what it is; returns
// the descriptor, which the caller owns. open_own_stream: the same as a FILE* ("a"
// with O_APPEND, else "w"), closed with fclose.
int open_own_file(const std::filesystem::path& p, int flags, std::string_view what);
std::FILE* open_own_stream(const std::filesystem::path& p, int flags, std::string_view what);

enum class Replace { refuse, allow };
// Writes `content` to a new file in p's directory (created O_EXCL under a random name,
// mode `mode` less the umask), syncs it and renames it onto p. With Replace::refuse an existing p (a
// dangling symlink included) is left alone and UsageError says so, ending with
// `hint` (e.g. "pass --force to replace it"); the check and the rename are one step
// (renameat2 RENAME_NOREPLACE), so a file that appears meanwhile is not replaced.
// Throws Error for I/O failures; the temporary file never outlives the call.
// A symlink at p is replaced, never followed; one planted at a temporary name is left
// alone (O_EXCL: another random name is tried).
void write_file_atomic(const std::filesystem::path& p, std::string_view content, Replace replace,
                       std::string_view hint = "pass --force to replace it", unsigned mode = 0666);

// An exclusive advisory lock (flock) on a directory, held for the object's life.
// A second holder, in this process or another, is refused at once with UsageError
// naming `what` and the directory. Not inherited across exec.
class DirLock {
 public:
  DirLock(const std::filesystem::path& dir, std::string_view what);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace p2pscope
