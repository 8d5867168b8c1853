// Host buffers and the verification pattern. GPU pieces live in memory_cuda.cpp.
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "p2pscope/error.hpp"
#include "transport/tcp/memory.hpp"

namespace p2pscope::tcp {
namespace {

constexpr int kMpolPreferred = 1;  // linux/mempolicy.h; no libnuma needed

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline std::uint64_t word_at(std::uint64_t seed, std::uint64_t word_index) { return mix(seed ^ (word_index * 0x632be59bd9b4e019ull)); }
inline unsigned char byte_at(std::uint64_t seed, std::uint64_t o) {
  return static_cast<unsigned char>(word_at(seed, o / 8) >> (8 * (o % 8)));
}

}  // namespace

Buffer Buffer::host(std::size_t bytes, int numa, bool prefault) {
  Buffer b;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw_errno("mmap of " + std::to_string(bytes) + " bytes");
  b.ptr_ = p;
  b.bytes_ = bytes;
  b.placement = "host";
  if (numa >= 0 && numa < 64) {
    const unsigned long mask = 1ul << numa;
    // Preferred, not bound: a full node falls back instead of failing the run.
    if (syscall(SYS_mbind, p, bytes, kMpolPreferred, &mask, 64ul, 0u) == 0)
      b.placement = "host numa " + std::to_string(numa);
    else
      b.placement = "host (mbind to numa " + std::to_string(numa) + " failed: " + errno_text(errno) + ")";
  }
  if (prefault) std::memset(p, 0, bytes);  // fault pages in now, on the chosen node, not in the timed loop
  return b;
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& o) noexcept : placement(std::move(o.placement)), ptr_(o.ptr_), bytes_(o.bytes_), gpu_(o.gpu_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    placement = std::move(o.placement);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    gpu_ = o.gpu_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

// Bytes [offset, offset + n) of the pattern into p; offset a multiple of 8.
static void fill_host_pattern(char* p, std::uint64_t offset, std::size_t n, std::uint64_t seed) {
  std::size_t o = 0;
  for (; o + 8 <= n; o += 8) {
    const std::uint64_t w = word_at(seed, (offset + o) / 8);
    std::memcpy(p + o, &w, 8);
  }
  for (; o < n; ++o) p[o] = static_cast<char>(byte_at(seed, offset + o));
}

// GPU buffers are filled and checked through a bounded host piece, not a host copy
// of the whole message.
constexpr std::size_t kPieceBytes = 64u << 20;

std::uint64_t check_pattern(const char* p, std::uint64_t offset, std::uint64_t len, std::uint64_t seed) {
  std::uint64_t i = 0;
  while (i < len && (offset + i) % 8 != 0) {
    if (static_cast<unsigned char>(p[i]) != byte_at(seed, offset + i)) return i;
    ++i;
  }
  for (; i + 8 <= len; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w != word_at(seed, (offset + i) / 8)) break;  // find the byte below
  }
  for (; i < len; ++i)
    if (static_cast<unsigned char>(p[i]) != byte_at(seed, offset + i)) return i;
  return len;
}

void fill_pattern(Buffer& b, std::uint64_t seed) {
  if (!b.on_gpu()) return fill_host_pattern(b.data(), 0, b.size(), seed);
  std::vector<char> tmp(std::min(b.size(), kPieceBytes));
  for (std::size_t o = 0; o < b.size(); o += kPieceBytes) {
    const std::size_t n = std::min(kPieceBytes, b.size() - o);
    fill_host_pattern(tmp.data(), o, n, seed);
    copy_to_device(b, o, tmp.data(), n);
  }
}

std::uint64_t check_buffer(const Buffer& b, std::uint64_t seed) {
  if (!b.on_gpu()) return check_pattern(b.data(), 0, b.size(), seed);
  std::vector<char> tmp(std::min(b.size(), kPieceBytes));
  for (std::size_t o = 0; o < b.size(); o += kPieceBytes) {
    const std::size_t n = std::min(kPieceBytes, b.size() - o);
    copy_from_device(b, o, tmp.data(), n);
    if (const std::uint64_t bad = check_pattern(tmp.data(), o, n, seed); bad != n) return o + bad;
  }
  return b.size();
}

PageRange page_range(std::uintptr_t addr, std::uint64_t bytes, std::uint64_t page) {
  const std::uintptr_t base = addr & ~static_cast<std::uintptr_t>(page - 1);
  const std::uint64_t end = (static_cast<std::uint64_t>(addr) + bytes + page - 1) & ~(page - 1);
  return {base, end - base, addr - base};
}

DmabufFd::DmabufFd(DmabufFd&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), offset_(o.offset_), range_bytes_(o.range_bytes_) {}

DmabufFd& DmabufFd::operator=(DmabufFd&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
    offset_ = o.offset_;
    range_bytes_ = o.range_bytes_;
  }
  return *this;
}

void DmabufFd::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Buffer::release() noexcept {
  if (!ptr_) return;
  if (gpu_ >= 0)
    free_device(ptr_);
  else
    munmap(ptr_, bytes_);
  ptr_ = nullptr;
}

}  // namespace p2pscope::tcp
