#pragma once
// RAII for CUDA resources and return-code checks that name the call, the device and
// CUDA's error text. Destructors are noexcept and ignore errors (nothing to do then).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <utility>

#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"

namespace p2pscope::bench::cuda {

inline void check(cudaError_t e, const char* call, int device) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (e == cudaErrorInsufficientDriver) throw Error(std::string(call) + " failed: " + gpu::cuda_error_text(e));
    throw Error(std::string(call) + " on GPU " + std::to_string(device) + " failed: " + cudaGetErrorName(e) + " (" +
                cudaGetErrorString(e) + ")");
  }
}
#define P2P_CUDA(call, dev) ::p2pscope::bench::cuda::check((call), #call, (dev))

class DeviceGuard {  // sets the current device, restores the previous one
 public:
  explicit DeviceGuard(int d) { cudaGetDevice(&prev_); P2P_CUDA(cudaSetDevice(d), d); }
  ~DeviceGuard() { cudaSetDevice(prev_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
 private:
  int prev_ = 0;
};

template <class T, class Free>
class Handle {
 public:
  Handle() = default;
  Handle(T h, int dev) : h_(h), dev_(dev) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, T{})), dev_(o.dev_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) { reset(); h_ = std::exchange(o.h_, T{}); dev_ = o.dev_; }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  T get() const { return h_; }
  int device() const { return dev_; }
  void reset() noexcept {
    if (h_) { int prev = 0; cudaGetDevice(&prev); cudaSetDevice(dev_ < 0 ? prev : dev_); Free{}(h_); cudaSetDevice(prev); }
    h_ = T{};
  }
 private:
  T h_{};
  int dev_ = -1;
};
struct FreeDevice { void operator()(void* p) const noexcept { cudaFree(p); } };
struct FreeHost { void operator()(void* p) const noexcept { cudaFreeHost(p); } };
struct FreeStream { void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); } };
struct FreeEvent { void operator()(cudaEvent_t e) const noexcept { cudaEventDestroy(e); } };
using DeviceBuffer = Handle<void*, FreeDevice>;
using PinnedBuffer = Handle<void*, FreeHost>;
using Stream = Handle<cudaStream_t, FreeStream>;
using Event = Handle<cudaEvent_t, FreeEvent>;

inline DeviceBuffer device_alloc(int dev, std::size_t bytes) {
  DeviceGuard g(dev);
  void* p = nullptr;
  P2P_CUDA(cudaMalloc(&p, bytes ? bytes : 16), dev);
  return DeviceBuffer(p, dev);
}
inline PinnedBuffer pinned_alloc(std::size_t bytes, int dev_for_errors = -1) {
  void* p = nullptr;
  P2P_CUDA(cudaHostAlloc(&p, bytes ? bytes : 16, cudaHostAllocPortable | cudaHostAllocMapped), dev_for_errors);
  return PinnedBuffer(p, -1);
}
inline Stream make_stream(int dev) {
  DeviceGuard g(dev);
  cudaStream_t s = nullptr;
  P2P_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), dev);
  return Stream(s, dev);
}
inline Event make_event(int dev) {
  DeviceGuard g(dev);
  cudaEvent_t e = nullptr;
  P2P_CUDA(cudaEventCreate(&e), dev);
  return Event(e, dev);
}
inline float elapsed_ms(const Event& a, const Event& b) {
  float ms = 0;
  P2P_CUDA(cudaEventElapsedTime(&ms, a.get(), b.get()), a.device());
  return ms;
}

}  // namespace p2pscope::bench::cuda
