#include "p2pscope/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "p2pscope/error.hpp"

namespace fs = std::filesystem;

namespace p2pscope {
namespace {

const char* kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a fifo";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISDIR(m)) return "a directory";
  return "not a regular file";
}

// Closes on scope exit; the error paths below are many.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, std::string_view s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// No-replace rename; filesystems without RENAME_NOREPLACE fall back to link + unlink,
// which fails with EEXIST just the same.
int rename_noreplace(const char* from, const char* to) {
#ifdef RENAME_NOREPLACE
  if (::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
#endif
  if (::link(from, to) != 0) return -1;
  ::unlink(from);
  return 0;
}

// A temporary name no one can guess ahead (mkstemp's idea): 16 hex digits from the
// kernel's random source, with the pid and a counter where it has none to give.
std::string temp_suffix() {
  static std::atomic<unsigned> counter{0};
  unsigned char b[8] = {};
  if (::getrandom(b, sizeof b, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof b))
    return fmt::format("{}.{}", ::getpid(), counter++);
  std::string out;
  for (unsigned char c : b) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace

std::optional<std::string> try_read_open_file(int fd, std::uint64_t max_bytes, std::string* why) {
  const auto fail = [why](std::string w) -> std::optional<std::string> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(errno_text(errno));
  if (!S_ISREG(st.st_mode)) return fail(std::string("it is ") + kind_of(st.st_mode) + ", not a regular file");
  // sysfs files say 4096 bytes and /proc files 0 whatever they hold: read to EOF,
  // trusting st_size only to refuse early.
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return fail(fmt::format("it holds {} bytes, more than the {} allowed", st.st_size, max_bytes));
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errno_text(errno));
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes)
      return fail(fmt::format("it holds more than the {} bytes allowed", max_bytes));
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::optional<std::string> try_read_regular_file(const fs::path& p, std::uint64_t max_bytes, std::string* why) {
  // O_NONBLOCK: opening a fifo without a writer would otherwise wait for one forever.
  Fd f{::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) {
    if (why) *why = errno_text(errno);
    return std::nullopt;
  }
  return try_read_open_file(f.fd, max_bytes, why);
}

std::string read_regular_file(const fs::path& p, std::string_view what, std::uint64_t max_bytes) {
  std::string why;
  auto text = try_read_regular_file(p, max_bytes, &why);
  if (!text) throw Error(fmt::format("cannot read {} '{}': {}", what, p.string(), why));
  return std::move(*text);
}

namespace {

// What a link planted at p is called in a refusal; "" when p is no link of either kind.
std::string planted_link(const fs::path& p, int open_errno, const struct stat* st) {
  if (open_errno == ELOOP)
    return fmt::format("'{}' is a symlink: refusing to follow it (a link planted in the folder could lead the "
                       "write or read anywhere); remove it, or put the real file there", p.string());
  if (st && S_ISREG(st->st_mode) && st->st_nlink > 1)
    return fmt::format("'{}' is a hard link ({} names for one file, and the others may lie outside the folder): "
                       "refusing to use it; remove it, or put a copy of its own there", p.string(), st->st_nlink);
  return "";
}

}  // namespace

std::string read_own_file(const fs::path& p, std::string_view what, std::uint64_t max_bytes) {
  Fd f{::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  const int err = errno;
  struct stat st {};
  const bool stated = f.fd >= 0 && ::fstat(f.fd, &st) == 0;
  if (std::string link = planted_link(p, f.fd < 0 ? err : 0, stated ? &st : nullptr); !link.empty())
    throw Error(fmt::format("cannot read {}: {}", what, link));
  if (f.fd < 0) throw Error(fmt::format("cannot read {} '{}': {}", what, p.string(), errno_text(err)));
  std::string why;
  auto text = try_read_open_file(f.fd, max_bytes, &why);
  if (!text) throw Error(fmt::format("cannot read {} '{}': {}", what, p.string(), why));
  return std::move(*text);
}

int open_own_file(const fs::path& p, int flags, std::string_view what) {
  const bool trunc = (flags & O_TRUNC) != 0;
  const int open_flags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (flags & (O_CREAT | O_APPEND));
  Fd f{::open(p.c_str(), open_flags, 0666)};
  const int err = errno;
  struct stat st {};
  const bool stated = f.fd >= 0 && ::fstat(f.fd, &st) == 0;
  if (std::string link = planted_link(p, f.fd < 0 ? err : 0, stated ? &st : nullptr); !link.empty())
    throw Error(fmt::format("cannot write {}: {}", what, link));
  if (f.fd < 0) throw Error(fmt::format("cannot write {} '{}': {}", what, p.string(), errno_text(err)));
  if (!stated) throw Error(fmt::format("cannot write {} '{}': {}", what, p.string(), errno_text(errno)));
  // Cut only now that p is known to be a file of its own (O_TRUNC at open would have cut
  // a hard link's other names too); a device such as /dev/full takes no truncation.
  if (trunc && S_ISREG(st.st_mode) && ::ftruncate(f.fd, 0) != 0)
    throw Error(fmt::format("cannot write {} '{}': {}", what, p.string(), errno_text(errno)));
  // O_NONBLOCK was for the open (a fifo without a reader); writes block as usual.
  ::fcntl(f.fd, F_SETFL, ::fcntl(f.fd, F_GETFL) & ~O_NONBLOCK);
  const int fd = f.fd;
  f.fd = -1;
  return fd;
}

std::FILE* open_own_stream(const fs::path& p, int flags, std::string_view what) {
  const int fd = open_own_file(p, flags, what);
  std::FILE* f = ::fdopen(fd, (flags & O_APPEND) ? "a" : "w");
  if (!f) {
    const int err = errno;
    ::close(fd);
    throw Error(fmt::format("cannot write {} '{}': {}", what, p.string(), errno_text(err)));
  }
  return f;
}

void write_file_atomic(const fs::path& p, std::string_view content, Replace replace, std::string_view hint,
                       unsigned mode) {
  const auto exists = [&p] {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0;  // lstat: a dangling symlink exists too
  };
  if (replace == Replace::refuse && exists())
    throw UsageError(fmt::format("'{}' already exists; refusing to replace it: {}", p.string(), hint));
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string tmp;
  Fd f;
  for (int attempt = 0; f.fd < 0; ++attempt) {
    tmp = (dir / fmt::format(".{}.tmp.{}", p.filename().string(), temp_suffix())).string();
    // O_EXCL never follows a symlink: whatever sits at the temporary name is not ours.
    f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
    if (f.fd < 0 && (errno != EEXIST || attempt > 100))
      throw Error(fmt::format("cannot write '{}' (a temporary file in its directory could not be created): {}",
                               p.string(), errno_text(errno)));
  }
  const auto fail = [&](const std::string& what) {
    const int err = errno;
    ::close(f.fd);
    f.fd = -1;
    ::unlink(tmp.c_str());
    throw Error(fmt::format("{} '{}': {}", what, p.string(), errno_text(err)));
  };
  if (!write_all(f.fd, content)) fail("cannot write");
  if (::fsync(f.fd) != 0) fail("cannot flush");
  if (::close(f.fd) != 0) {
    f.fd = -1;
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot write '{}': {}", p.string(), errno_text(err)));
  }
  f.fd = -1;
  const int rc = replace == Replace::allow ? std::rename(tmp.c_str(), p.c_str()) : rename_noreplace(tmp.c_str(), p.c_str());
  if (rc != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    if (err == EEXIST)
      throw UsageError(fmt::format("'{}' already exists; refusing to replace it: {}", p.string(), hint));
    throw Error(fmt::format("cannot rename a temporary file onto '{}': {}", p.string(), errno_text(err)));
  }
  // The rename itself made durable (best effort: a folder that cannot be opened still has the file).
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
}

DirLock::DirLock(const fs::path& dir, std::string_view what) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw Error(fmt::format("cannot open {} '{}' to lock it: {}", what, dir.string(), errno_text(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw UsageError(fmt::format("{} '{}' is in use by another p2pscope process (it holds the directory's lock); "
                                   "wait for it to finish or stop it, then try again",
                                   what, dir.string()));
    throw Error(fmt::format("cannot lock {} '{}': {}", what, dir.string(), errno_text(err)));
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace p2pscope
