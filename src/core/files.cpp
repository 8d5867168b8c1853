#include "p2pscope/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
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

}  // namespace

std::optional<std::string> try_read_regular_file(const fs::path& p, std::uint64_t max_bytes, std::string* why) {
  const auto fail = [why](std::string w) -> std::optional<std::string> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  // O_NONBLOCK: opening a fifo without a writer would otherwise wait for one forever.
  Fd f{::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) return fail(errno_text(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return fail(errno_text(errno));
  if (!S_ISREG(st.st_mode)) return fail(std::string("it is ") + kind_of(st.st_mode) + ", not a regular file");
  // sysfs files say 4096 bytes and /proc files 0 whatever they hold: read to EOF,
  // trusting st_size only to refuse early.
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return fail(fmt::format("it holds {} bytes, more than the {} allowed", st.st_size, max_bytes));
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errno_text(errno));
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes)
      return fail(fmt::format("it holds more than the {} bytes allowed", max_bytes));
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::string read_regular_file(const fs::path& p, std::string_view what, std::uint64_t max_bytes) {
  std::string why;
  auto text = try_read_regular_file(p, max_bytes, &why);
  if (!text) throw Error(fmt::format("cannot read {} '{}': {}", what, p.string(), why));
  return std::move(*text);
}

void write_file_atomic(const fs::path& p, std::string_view content, Replace replace, std::string_view hint) {
  const auto exists = [&p] {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0;  // lstat: a dangling symlink exists too
  };
  if (replace == Replace::refuse && exists())
    throw UsageError(fmt::format("'{}' already exists; refusing to replace it: {}", p.string(), hint));
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  Fd f;
  for (int attempt = 0; f.fd < 0; ++attempt) {
    tmp = (dir / fmt::format(".{}.tmp.{}.{}", p.filename().string(), ::getpid(), counter++)).string();
    // O_EXCL never follows a symlink: whatever sits at the temporary name is not ours.
    f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
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
