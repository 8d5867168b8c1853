#pragma once
// Source/destination buffers (host memory placed on a NUMA node, or GPU memory),
// the verification pattern, and pinned staging slots for GPU memory.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace p2pscope::tcp {

class Buffer {
 public:
  // Host memory; numa >= 0 asks the kernel to place pages there (MPOL_PREFERRED).
  // prefault touches every page now (placed, and not faulted in a timed loop); a
  // buffer that is filled right away leaves it false, so it is written once, not twice.
  static Buffer host(std::size_t bytes, int numa, bool prefault = true);
  // Host memory of `bytes` in slots of `slot_bytes`; each run of `slots_per_piece`
  // slots (a socket's ring) is backed by its own `piece_bytes` of memory, mapped over
  // and over (a shared memfd): a chunk read or written through a slot touches only the
  // piece, which stays in the core's cache, as iperf3's reused buffer does. The bytes
  // are not a message: only for data nobody checks. Sizes: page multiples, piece <
  // slot, whole slots, whole runs of slots.
  static Buffer host_folded(std::size_t bytes, std::size_t slot_bytes, std::size_t piece_bytes,
                            std::size_t slots_per_piece, int numa, bool prefault = true);
  // Device memory on CUDA device `gpu`; Error when built without CUDA or no such GPU.
  static Buffer device(std::size_t bytes, int gpu);
  Buffer() = default;
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  char* data() const { return static_cast<char*>(ptr_); }
  std::size_t size() const { return bytes_; }
  bool on_gpu() const { return gpu_ >= 0; }
  int gpu() const { return gpu_; }
  std::string placement;  // "numa 0", "numa ? (no NUMA info)", "gpu 3"

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int gpu_ = -1;
  void release() noexcept;
};

// The whole buffer holds the stream `seed` of the data pattern (p2pscope/pattern.hpp;
// host pieces of it, pattern_first_mismatch, check what arrives).
void fill_pattern(Buffer& b, std::uint64_t seed);
// Whole buffer (copied to the host first when on a GPU); returns first bad offset or size.
std::uint64_t check_buffer(const Buffer& b, std::uint64_t seed);

// Pinned host slots plus a CUDA stream and one event per slot, for one worker.
class Staging {
 public:
  Staging(int gpu, std::size_t slot_bytes, int slots);
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  char* slot(int i) const;
  int slots() const { return slots_; }
  void d2h(int i, const void* dev, std::size_t n);  // async copy into slot i
  void h2d(int i, void* dev, std::size_t n);        // async copy out of slot i
  void wait(int i);                                 // the last copy on slot i finished
  static void set_device(int gpu);                  // cudaSetDevice for this thread
  static void synchronize_device();                 // cudaDeviceSynchronize (this thread's GPU)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int slots_ = 0;
};

bool cuda_built();
// Can a kernel read p where it is (device memory, or host memory mapped for the GPU)?
bool device_accessible(const void* p);

// memory_cuda.cpp: device copies of n bytes at `offset` of b (fill and check), cudaFree.
void copy_to_device(Buffer& b, std::size_t offset, const char* host, std::size_t n);
void copy_from_device(const Buffer& b, std::size_t offset, char* host, std::size_t n);
void free_device(void* p) noexcept;

// A dma-buf exported from a GPU buffer (cuMemGetHandleForAddressRange), for a net
// plugin's regMrDmaBuf, as NCCL registers CUDA memory with DMA-BUF plugins. The range
// is the buffer widened to whole host pages (the driver's rule); offset() is where the
// buffer starts in it. Owns the fd: closed by close() or the destructor (a plugin
// keeps its own reference once regMrDmaBuf returned).
class DmabufFd {
 public:
  DmabufFd() = default;
  DmabufFd(int fd, std::uint64_t offset, std::uint64_t range_bytes) : fd_(fd), offset_(offset), range_bytes_(range_bytes) {}
  ~DmabufFd() { close(); }
  DmabufFd(DmabufFd&& o) noexcept;
  DmabufFd& operator=(DmabufFd&& o) noexcept;
  DmabufFd(const DmabufFd&) = delete;
  DmabufFd& operator=(const DmabufFd&) = delete;
  int fd() const { return fd_; }
  std::uint64_t offset() const { return offset_; }            // of the buffer's first byte in the dma-buf
  std::uint64_t range_bytes() const { return range_bytes_; }  // the dma-buf's size (whole pages)
  void close() noexcept;

 private:
  int fd_ = -1;
  std::uint64_t offset_ = 0, range_bytes_ = 0;
};

// The page-aligned range NCCL hands cuMemGetHandleForAddressRange for [addr, addr+bytes):
// base rounded down, end rounded up to `page` (a power of two).
struct PageRange {
  std::uintptr_t base;
  std::uint64_t bytes, offset;
};
PageRange page_range(std::uintptr_t addr, std::uint64_t bytes, std::uint64_t page);

// "" when GPU `gpu` can export its memory as dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
// read through cudaGetDriverEntryPoint: no link to libcuda); else why not, in a phrase
// ("GPU 0 does not support dma-buf export (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0 ...)").
std::string dmabuf_unsupported(int gpu);
// Exports b (GPU memory) as a dma-buf. Error naming the call and the CUresult when the
// driver refuses; UsageError for host memory.
DmabufFd export_dmabuf(const Buffer& b);

}  // namespace p2pscope::tcp
