// Host buffers and the verification pattern. GPU pieces live in memory_cuda.cpp.
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "p2pscope/error.hpp"
#include "p2pscope/pattern.hpp"
#include "transport/tcp/memory.hpp"

namespace p2pscope::tcp {
namespace {

constexpr int kMpolPreferred = 1;  // linux/mempolicy.h; no libnuma needed

// Asks the kernel to place [p, p + bytes) on `numa` and says where it went.
std::string place(void* p, std::size_t bytes, int numa) {
  if (numa < 0 || numa >= 64) return "host";
  const unsigned long mask = 1ul << numa;
  // Preferred, not bound: a full node falls back instead of failing the run.
  if (syscall(SYS_mbind, p, bytes, kMpolPreferred, &mask, 64ul, 0u) == 0) return "host numa " + std::to_string(numa);
  return "host (mbind to numa " + std::to_string(numa) + " failed: " + errno_text(errno) + ")";
}

}  // namespace

Buffer Buffer::host(std::size_t bytes, int numa, bool prefault) {
  Buffer b;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw_errno("mmap of " + std::to_string(bytes) + " bytes");
  b.ptr_ = p;
  b.bytes_ = bytes;
  b.placement = place(p, bytes, numa);
  if (prefault) std::memset(p, 0, bytes);  // fault pages in now, on the chosen node, not in the timed loop
  return b;
}

Buffer Buffer::host_folded(std::size_t bytes, std::size_t slot_bytes, std::size_t piece_bytes,
                           std::size_t slots_per_piece, int numa, bool prefault) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
  if (slot_bytes == 0 || piece_bytes == 0 || slots_per_piece == 0 || bytes % (slot_bytes * slots_per_piece) != 0 ||
      slot_bytes % page != 0 || piece_bytes % page != 0 || piece_bytes >= slot_bytes)
    throw Error("folded buffer of " + std::to_string(bytes) + " bytes in " + std::to_string(slot_bytes) + "-byte slots, " +
                std::to_string(slots_per_piece) + " on each " + std::to_string(piece_bytes) +
                "-byte piece: needs page multiples, a piece smaller than a slot and whole runs of slots");
  const std::size_t slots = bytes / slot_bytes, pieces = slots / slots_per_piece;
  const int fd = memfd_create("p2pscope-slots", MFD_CLOEXEC);
  if (fd < 0) throw_errno("memfd_create for " + std::to_string(pieces) + " slot pieces");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }  // the mappings keep the memory
  } closer{fd};
  if (ftruncate(fd, static_cast<off_t>(pieces * piece_bytes)) != 0)
    throw_errno("memfd of " + std::to_string(pieces * piece_bytes) + " bytes");
  // Reserve the whole range, then map each slot's piece over it, repeated.
  void* base = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) throw_errno("mmap (reserve) of " + std::to_string(bytes) + " bytes");
  Buffer b;  // unmaps the whole range if a step below throws
  b.ptr_ = base;
  b.bytes_ = bytes;
  char* at = static_cast<char*>(base);
  for (std::size_t s = 0; s < slots; ++s)
    for (std::size_t o = 0; o < slot_bytes; o += piece_bytes) {
      const std::size_t len = std::min(piece_bytes, slot_bytes - o);
      void* m = mmap(at + s * slot_bytes + o, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                     static_cast<off_t>(s / slots_per_piece * piece_bytes));
      if (m == MAP_FAILED)
        throw_errno("mmap of slot " + std::to_string(s) + "'s piece (" + std::to_string(slots) + " slots of " +
                    std::to_string(slot_bytes / piece_bytes) + " repeats; vm.max_map_count?)");
    }
  // The policy is the file's (shared memory): one call per piece, before its first touch.
  for (std::size_t k = pieces; k-- > 0;) b.placement = place(at + k * slots_per_piece * slot_bytes, piece_bytes, numa);
  // Every repeat's page tables now, not as faults in a timed loop.
  if (prefault) std::memset(base, 0, bytes);
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

// GPU buffers are filled and checked through a bounded host piece, not a host copy
// of the whole message.
constexpr std::size_t kPieceBytes = 64u << 20;

void fill_pattern(Buffer& b, std::uint64_t seed) {
  if (!b.on_gpu()) return pattern_fill(b.data(), b.size(), seed);
  std::vector<char> tmp(std::min(b.size(), kPieceBytes));
  for (std::size_t o = 0; o < b.size(); o += kPieceBytes) {
    const std::size_t n = std::min(kPieceBytes, b.size() - o);
    pattern_fill(tmp.data(), n, seed, o);
    copy_to_device(b, o, tmp.data(), n);
  }
}

std::uint64_t check_buffer(const Buffer& b, std::uint64_t seed) {
  if (!b.on_gpu()) return pattern_first_mismatch(b.data(), b.size(), seed);
  std::vector<char> tmp(std::min(b.size(), kPieceBytes));
  for (std::size_t o = 0; o < b.size(); o += kPieceBytes) {
    const std::size_t n = std::min(kPieceBytes, b.size() - o);
    copy_from_device(b, o, tmp.data(), n);
    if (const std::uint64_t bad = pattern_first_mismatch(tmp.data(), n, seed, o); bad != n) return o + bad;
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
