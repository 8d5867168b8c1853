#include "monitor/fast_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "p2pscope/files.hpp"

namespace p2pscope::monitor {
namespace {
bool space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

bool ends_with(const char* b, const char* e, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return static_cast<std::size_t>(e - b) >= n && std::memcmp(e - n, suffix, n) == 0;
}

// The hardware IRQ column of newer kernels: "1048576-edge", "0-edge", "5-fasteoi".
bool looks_like_hwirq(const char* b, const char* e) {
  return b < e && (digit(*b) || ends_with(b, e, "-edge") || ends_with(b, e, "-level") || ends_with(b, e, "-fasteoi"));
}

// Unsigned decimal token at p (after blanks); advances p past it. False when the next
// token is not all digits (p then points at that token) or overflows.
bool next_count(const char*& p, const char* end, std::uint64_t& v) {
  while (p < end && space(*p)) ++p;
  const char* q = p;
  v = 0;
  while (q < end && digit(*q)) {
    const std::uint64_t d = static_cast<std::uint64_t>(*q - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
    ++q;
  }
  if (q == p || (q < end && !space(*q))) return false;
  p = q;
  return true;
}
}  // namespace

namespace {
// The whole file from offset 0 (pread: the kernel regenerates it) into out.
bool read_fd(int fd, std::string& out) {
  out.resize(std::max<std::size_t>(out.capacity(), 4096));
  std::size_t used = 0;
  for (;;) {
    if (used >= kMaxReadBytes) {  // no /proc or /sys file is this large
      out.clear();
      return false;
    }
    if (used == out.size()) out.resize(out.size() * 2);
    const ssize_t n = ::pread(fd, out.data() + used, out.size() - used, static_cast<off_t>(used));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.clear();
      return false;
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  out.resize(used);
  return true;
}

int open_ro(const FsRoot& fs, const std::string& abs) {
  const std::string path = fs.is_live() ? abs : fs.host_path(abs).string();
  // Regular files only, as FsRoot::read: a fifo in a tree would block, /dev/zero never end.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::optional<std::uint64_t> parse_u64(const std::string& buf) {
  const char* p = buf.data();
  const char* end = p + buf.size();
  while (p < end && (space(*p) || *p == '\n')) ++p;
  std::uint64_t v = 0;
  const char* q = p;
  while (q < end && digit(*q)) v = v * 10 + static_cast<std::uint64_t>(*q++ - '0');
  if (q == p || q - p > 19) return std::nullopt;  // not a number, or beyond what u64 surely holds
  return v;
}

// Beyond this many open files, read without keeping (a machine with thousands of NICs).
constexpr std::size_t kMaxOpenFiles = 2048;
}  // namespace

bool read_into(const FsRoot& fs, const std::string& abs, std::string& out) {
  const int fd = open_ro(fs, abs);
  if (fd < 0) return false;
  const bool ok = read_fd(fd, out);
  ::close(fd);
  return ok;
}

std::optional<std::uint64_t> read_u64(const FsRoot& fs, const std::string& abs) {
  thread_local std::string buf;
  if (!read_into(fs, abs, buf)) return std::nullopt;
  return parse_u64(buf);
}

FileCache::~FileCache() {
  for (auto& [path, e] : fds_) ::close(e.fd);
}

bool FileCache::read(const FsRoot& fs, const std::string& abs, std::string& out) {
  if (!keep_open_ || !fs.is_live()) return read_into(fs, abs, out);
  if (const auto it = fds_.find(abs); it != fds_.end()) {
    // Empty counts as failed too: a /proc task file of a thread that ended reads empty.
    if (read_fd(it->second.fd, out) && !out.empty()) {
      it->second.used = true;
      return true;
    }
    ::close(it->second.fd);  // removed (NIC unregistered, thread gone): try the path again
    fds_.erase(it);
  }
  const int fd = open_ro(fs, abs);
  if (fd < 0) return false;
  const bool ok = read_fd(fd, out);
  if (ok && fds_.size() < kMaxOpenFiles) fds_.emplace(abs, Entry{fd, true});
  else ::close(fd);
  return ok;
}

std::optional<std::uint64_t> FileCache::read_u64(const FsRoot& fs, const std::string& abs) {
  // A sysfs counter is one show() of a few bytes: one pread that comes back short of
  // the buffer holds the whole file, which saves the second (EOF) pread of read().
  if (keep_open_ && fs.is_live())
    if (const auto it = fds_.find(abs); it != fds_.end()) {
      char buf[256];
      ssize_t n;
      do n = ::pread(it->second.fd, buf, sizeof buf, 0);
      while (n < 0 && errno == EINTR);
      if (n > 0 && static_cast<std::size_t>(n) < sizeof buf) {
        it->second.used = true;
        small_.assign(buf, static_cast<std::size_t>(n));
        return parse_u64(small_);
      }
    }
  if (!read(fs, abs, small_)) return std::nullopt;
  return parse_u64(small_);
}

void FileCache::sweep() {
  for (auto it = fds_.begin(); it != fds_.end();) {
    if (it->second.used) {
      it->second.used = false;
      ++it;
    } else {
      ::close(it->second.fd);
      it = fds_.erase(it);
    }
  }
}

void parse_interrupt_counts(const std::string& text, topo::InterruptTable& t) {
  t.cpu_columns.clear();
  t.irqs.clear();
  t.named.clear();
  t.malformed_lines = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  bool header = true;
  while (p < end) {
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (!eol) eol = end;
    const char* q = p;
    p = eol + 1;
    while (q < eol && space(*q)) ++q;
    if (q == eol) continue;
    if (header) {  // "CPU0 CPU1 ..." (ids may skip: offline CPUs)
      header = false;
      while (q < eol) {
        const char* b = q;
        while (q < eol && !space(*q)) ++q;
        if (q - b > 3 && std::memcmp(b, "CPU", 3) == 0) {
          int id = 0;
          const char* d = b + 3;
          while (d < q && digit(*d) && id < (1 << 24)) id = id * 10 + (*d++ - '0');
          if (d != q) {
            t.cpu_columns.clear();
            ++t.malformed_lines;
            break;
          }
          t.cpu_columns.push_back(id);
        } else {
          t.cpu_columns.clear();
          ++t.malformed_lines;
          break;
        }
        while (q < eol && space(*q)) ++q;
      }
      continue;
    }
    // "  34:" numbered; "NMI:" and other words are not used by the monitor.
    const char* label = q;
    int number = 0;
    while (q < eol && digit(*q) && number < (1 << 24)) number = number * 10 + (*q++ - '0');
    if (q == label) {  // a named line ("LOC:") is fine, anything else is malformed
      const char* w = q;
      while (w < eol && std::isalnum(static_cast<unsigned char>(*w)) != 0) ++w;
      if (!(w > q && std::isalpha(static_cast<unsigned char>(*q)) != 0 && w < eol && *w == ':')) ++t.malformed_lines;
      continue;
    }
    if (q >= eol || *q != ':') {
      ++t.malformed_lines;
      continue;
    }
    ++q;
    const std::size_t ncpu = t.cpu_columns.size();
    topo::Irq irq;
    irq.irq = number;
    irq.per_cpu.resize(ncpu);
    std::size_t k = 0;
    while (k < ncpu && next_count(q, eol, irq.per_cpu[k])) ++k;
    if (k != ncpu || ncpu == 0) {
      ++t.malformed_lines;
      continue;
    }
    // Chip, then (newer kernels) the hwirq column, then the action names.
    while (q < eol && space(*q)) ++q;
    const char* chip_b = q;
    while (q < eol && !space(*q)) ++q;
    const char* chip_e = q;
    irq.chip.assign(chip_b, chip_e);
    const char* r = q;
    while (r < eol && space(*r)) ++r;
    const char* hw_b = r;
    while (r < eol && !space(*r)) ++r;
    if (hw_b < r && !looks_like_hwirq(chip_b, chip_e) && looks_like_hwirq(hw_b, r)) q = r;
    while (q < eol && space(*q)) ++q;
    const char* name_e = eol;
    while (name_e > q && space(name_e[-1])) --name_e;
    irq.name.assign(q, name_e);
    t.irqs.push_back(std::move(irq));
  }
}

}  // namespace p2pscope::monitor
