#include "p2pscope/fsroot.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "sysfs/beneath.hpp"

namespace fs = std::filesystem;

namespace p2pscope {

FsRoot::FsRoot(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  if (!fs::is_directory(root_, ec))
    throw UsageError("--root '" + root_.string() + "' is not a directory; give a captured tree (tools/capture-fsroot.sh) or /");
  if (root_ != "/") root_ = fs::absolute(root_, ec).lexically_normal();
  if (root_.string().size() > 1 && root_.string().back() == '/') root_ = root_.parent_path();
  // The live machine is read and written by path (there is nothing to stay beneath), so
  // "/" holds no descriptor: a long-lived FsRoot (a monitor session's) keeps none open.
  if (is_live()) return;
  const int fd = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw UsageError("--root '" + root_.string() + "': cannot open it: " + errno_text(errno));
  root_fd_ = std::shared_ptr<const int>(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
}

fs::path FsRoot::host_path(std::string_view abs) const {
  if (is_live()) return fs::path(abs);
  std::string rel(abs);
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  return root_ / rel;
}

std::optional<std::string> FsRoot::read(std::string_view abs) const {
  // Regular files only, with a cap: a fifo in a captured tree would block forever and
  // a link to /dev/zero would never end; either is "unreadable", as a missing file is.
  return try_read_regular_file(host_path(abs), kMaxReadBytes);
}

std::optional<std::string> FsRoot::read_line(std::string_view abs) const {
  // One-line attributes (masks, lists, ids) are far below 1 MiB on any machine; a
  // crafted tree's 100 MB one is unreadable, not read whole.
  auto text = try_read_regular_file(host_path(abs), 1u << 20);
  if (!text) return std::nullopt;
  const auto nl = text->find('\n');
  return std::string(trim(std::string_view(*text).substr(0, nl)));
}

std::optional<std::int64_t> FsRoot::read_int(std::string_view abs) const {
  auto line = read_line(abs);
  if (!line || line->empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    const std::int64_t v = std::stoll(*line, &used, 0);
    if (used == 0) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int FsRoot::cpu_limit() const {
  for (const char* f : {"/sys/devices/system/cpu/possible", "/sys/devices/system/cpu/online"}) {
    const auto line = read_line(f);
    if (!line) continue;
    try {
      const auto cpus = parse_cpulist(*line);
      if (!cpus.empty()) return cpus.back() + 1;
    } catch (const Error&) {
    }
  }
  return kMaxCpus;
}

bool FsRoot::exists(std::string_view abs) const {
  std::error_code ec;
  return fs::exists(host_path(abs), ec);
}

bool FsRoot::is_dir(std::string_view abs) const {
  std::error_code ec;
  return fs::is_directory(host_path(abs), ec);
}

std::vector<std::string> FsRoot::list(std::string_view abs_dir) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(host_path(abs_dir), ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> FsRoot::readlink(std::string_view abs) const {
  std::error_code ec;
  const fs::path target = fs::read_symlink(host_path(abs), ec);
  if (ec) return std::nullopt;
  return target.string();
}

std::optional<std::string> FsRoot::resolve(std::string_view abs) const {
  // Walk component by component, following links inside the root, so a captured
  // tree's relative links (and absolute ones, re-rooted) resolve as on the machine.
  fs::path done = "/";
  std::vector<std::string> todo;
  for (const auto& part : fs::path(abs).relative_path()) todo.push_back(part.string());
  std::reverse(todo.begin(), todo.end());
  int hops = 0;
  while (!todo.empty()) {
    const std::string part = todo.back();
    todo.pop_back();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      done = done.parent_path();
      continue;
    }
    const fs::path next = done / part;
    std::error_code ec;
    const auto st = fs::symlink_status(host_path(next.string()), ec);
    if (ec || !fs::exists(st)) return std::nullopt;
    if (fs::is_symlink(st)) {
      if (++hops > 40) return std::nullopt;  // a loop
      const auto target = readlink(next.string());
      if (!target) return std::nullopt;
      const fs::path t(*target);
      if (t.is_absolute()) done = "/";
      std::vector<std::string> parts;
      for (const auto& p : t.relative_path()) parts.push_back(p.string());
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_back(*it);
    } else {
      done = next;
    }
  }
  return done.string();
}

namespace {

// Why a path under --root was refused, by the errno of the open or the file's link count.
std::string fsroot_refusal(const fs::path& p, const fs::path& root, int err, nlink_t links) {
  if (links > 1)
    return p.string() + ": refused: it is a hard link (" + std::to_string(links) +
           " names for one file, and the others may lie outside the tree); under --root " + root.string() +
           " no file is read or written through one, so that nothing outside the tree is touched";
  if (err == ELOOP || err == EXDEV)
    return p.string() + ": refused: the path holds a symlink (or \"..\"), and under --root " + root.string() +
           " no file is read or written through one, so that nothing outside the tree is touched";
  return "";
}

}  // namespace

void FsRoot::write(std::string_view abs, std::string_view content) const {
  const fs::path p = host_path(abs);
  // O_NONBLOCK: a fifo without a reader fails at once (ENXIO) instead of waiting. No
  // O_TRUNC at open: nothing is cut before the file is known to be a regular one.
  const int flags = O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  const int fd = is_live() ? ::open(p.c_str(), flags) : sysfs::open_beneath(*root_fd_, abs, flags);
  if (fd < 0) {
    const int err = errno;
    if (!is_live())
      if (const std::string why = fsroot_refusal(p, root_, err, 1); !why.empty()) throw Error("write " + why);
    errno = err;
    throw_errno("open " + p.string() + " for writing");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("write " + p.string() + ": not a regular file (a /proc or /sys attribute, or a file of a captured tree)");
  }
  // Checked before anything is cut: a hard link's other names share these bytes.
  if (!is_live() && st.st_nlink > 1) {
    ::close(fd);
    throw Error("write " + fsroot_refusal(p, root_, 0, st.st_nlink));
  }
  if (!is_live() && ::ftruncate(fd, 0) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error("write " + p.string() + ": " + errno_text(err));
  }
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      throw Error("write " + p.string() + ": " + errno_text(n == 0 ? EIO : err));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw_errno("write " + p.string());
}

FsRoot::BeneathRead FsRoot::read_beneath(std::string_view abs, std::uint64_t max_bytes) const {
  BeneathRead out;
  const fs::path p = host_path(abs);
  // O_NONBLOCK: a fifo in a captured tree fails the read instead of waiting for a writer.
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  const int fd = is_live() ? ::open(p.c_str(), flags) : sysfs::open_beneath(*root_fd_, abs, flags);
  if (fd < 0) {
    const int err = errno;
    out.missing = err == ENOENT || err == ENOTDIR;
    out.why = is_live() ? "" : fsroot_refusal(p, root_, err, 1);
    out.refused = !out.why.empty();
    if (!out.refused) out.why = errno_text(err);
    return out;
  }
  struct stat st {};
  if (!is_live() && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1) {
    ::close(fd);
    out.refused = true;
    out.why = fsroot_refusal(p, root_, 0, st.st_nlink);
    return out;
  }
  out.text = try_read_open_file(fd, max_bytes, &out.why);
  ::close(fd);
  return out;
}

}  // namespace p2pscope
