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

}  // namespace p2pscope::tcp
