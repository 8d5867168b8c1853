#include "sysfs/beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace p2pscope::sysfs {
namespace {

// The path's names, or false for ".." (a walk by hand would have to climb; openat2's
// RESOLVE_BENEATH would refuse it where it leaves the root, the walk refuses it always).
bool beneath_parts(std::string_view abs, std::vector<std::string>& parts) {
  std::size_t i = 0;
  while (i < abs.size()) {
    while (i < abs.size() && abs[i] == '/') ++i;
    std::size_t j = i;
    while (j < abs.size() && abs[j] != '/') ++j;
    const std::string_view part = abs.substr(i, j - i);
    if (part == "..") return false;
    if (!part.empty() && part != ".") parts.emplace_back(part);
    i = j;
  }
  return true;
}

// ENOTDIR from O_DIRECTORY | O_NOFOLLOW on a component may be a symlink there: say ELOOP,
// as openat2 does, so that the caller names it as a link.
int beneath_errno_at(int dir, const std::string& name, int err) {
  struct stat st {};
  if (err == ENOTDIR && ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
    return ELOOP;
  return err;
}

int beneath_walk(int root_fd, const std::vector<std::string>& parts, int flags) {
  int dir = root_fd;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const int next = ::openat(dir, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = next < 0 ? beneath_errno_at(dir, parts[i], errno) : 0;
    if (dir != root_fd) ::close(dir);
    if (next < 0) {
      errno = err;
      return -1;
    }
    dir = next;
  }
  const int fd = ::openat(dir, parts.back().c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
  const int err = errno;
  if (dir != root_fd) ::close(dir);
  errno = err;
  return fd;
}

}  // namespace

int open_beneath(int root_fd, std::string_view abs, int flags, BeneathWay way) {
  std::vector<std::string> parts;
  if (!beneath_parts(abs, parts)) {
    errno = EXDEV;
    return -1;
  }
  if (parts.empty()) {
    errno = EISDIR;
    return -1;
  }
  if (way == BeneathWay::best) {
    std::string rel;
    for (const auto& p : parts) rel += (rel.empty() ? "" : "/") + p;
    struct open_how how {};
    how.flags = static_cast<unsigned long long>(flags | O_NOFOLLOW | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    // A kernel before 5.6 (or a seccomp filter that predates openat2, which may answer
    // EPERM) has no openat2: the walk refuses the same paths.
    if (errno != ENOSYS && errno != EPERM) return -1;
  }
  return beneath_walk(root_fd, parts, flags);
}

}  // namespace p2pscope::sysfs
