#pragma once
// Is an fd handed to regMrDmaBuf a real dma-buf, and does it cover offset + size? The
// kernel says so in /proc/self/fdinfo/FD: a dma-buf's file carries "size:" (bytes) and
// "exp_name:" (its exporter, "nv_dmabuf" for CUDA memory) lines that no other file has
// (drivers/dma-buf/dma-buf.c, dma_buf_show_fdinfo). Without /proc, fstat tells plain
// files, pipes, sockets and devices apart from it. Header-only: the reference plugin
// uses it and the unit tests parse captured fdinfo text with it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace refnet {

struct DmabufInfo {
  bool is_dmabuf = false;  // an exp_name line was there
  std::uint64_t size = 0;  // the size line (bytes), 0 when absent
  std::string exporter;    // exp_name
};

// Parses the text of /proc/self/fdinfo/FD ("key:\tvalue" lines).
inline DmabufInfo parse_dmabuf_fdinfo(const std::string& text) {
  DmabufInfo info;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    std::size_t v = colon + 1;
    while (v < line.size() && (line[v] == ' ' || line[v] == '\t')) ++v;
    const std::string value = line.substr(v);
    if (key == "exp_name") {
      info.is_dmabuf = true;
      info.exporter = value;
    } else if (key == "size") {
      char* stop = nullptr;
      const unsigned long long n = std::strtoull(value.c_str(), &stop, 10);
      if (stop != value.c_str()) info.size = n;
    }
  }
  return info;
}

// What kind of file fstat says fd is, for messages ("" when it cannot tell).
inline std::string file_kind(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "a regular file";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a pipe";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  return "";
}

// "" when fd is a dma-buf of at least offset + size bytes; else why not, in a phrase
// that follows "fd N " ("is not open", "is a pipe, not a dma-buf", ...).
inline std::string check_dmabuf_fd(int fd, std::uint64_t offset, std::uint64_t size,
                                   const std::string& proc = "/proc/self/fdinfo/") {
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) return "is not an open file descriptor";
  struct stat st {};
  if (fstat(fd, &st) != 0) return std::string("cannot be examined (fstat: ") + std::strerror(errno) + ")";
  const std::string kind = file_kind(st);
  DmabufInfo info;
  bool have_fdinfo = false;
  const int f = ::open((proc + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
  if (f >= 0) {
    std::string text;
    char buf[1024];
    for (ssize_t n; (n = ::read(f, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    ::close(f);
    info = parse_dmabuf_fdinfo(text);
    have_fdinfo = true;
  }
  if (have_fdinfo && !info.is_dmabuf)
    return "is " + (kind.empty() ? std::string("a file") : kind) + ", not a dma-buf (" + proc + std::to_string(fd) +
           " has no exp_name line)";
  if (!have_fdinfo) {  // no /proc: a dma-buf is none of the kinds fstat names, and has its size
    if (!kind.empty()) return "is " + kind + ", not a dma-buf";
    info.size = static_cast<std::uint64_t>(st.st_size);
  }
  if (offset + size < offset || offset + size > info.size)
    return "is a dma-buf of " + std::to_string(info.size) + " bytes" +
           (info.exporter.empty() ? "" : " (exporter " + info.exporter + ")") + ", too small for offset " +
           std::to_string(offset) + " + size " + std::to_string(size);
  return "";
}

}  // namespace refnet
