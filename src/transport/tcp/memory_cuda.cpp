// GPU memory for --mem gpu: device buffers and pinned staging slots. Without CUDA
// every entry point fails with a message saying how to get it.
#include <string>
#include <vector>

#include "p2pscope/error.hpp"
#include "transport/tcp/memory.hpp"

#if P2PSCOPE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace p2pscope::tcp {

#if P2PSCOPE_HAVE_CUDA
namespace {
void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw Error(what + ": " + cudaGetErrorString(e));
}
}  // namespace

bool cuda_built() { return true; }

Buffer Buffer::device(std::size_t bytes, int gpu) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw Error("--mem gpu: no CUDA GPU visible on this machine (use --mem host)");
  if (gpu >= count)
    throw UsageError("--gpus: GPU " + std::to_string(gpu) + " does not exist; this machine has " +
                     std::to_string(count) + " (0-" + std::to_string(count - 1) + ")");
  check(cudaSetDevice(gpu), "cudaSetDevice(" + std::to_string(gpu) + ")");
  Buffer b;
  check(cudaMalloc(&b.ptr_, bytes), "cudaMalloc " + std::to_string(bytes) + " B on GPU " + std::to_string(gpu));
  b.bytes_ = bytes;
  b.gpu_ = gpu;
  b.placement = "gpu " + std::to_string(gpu);
  check(cudaMemset(b.ptr_, 0, bytes), "cudaMemset");
  return b;
}

void free_device(void* p) noexcept { cudaFree(p); }

void copy_to_device(Buffer& b, std::size_t offset, const char* host, std::size_t n) {
  check(cudaSetDevice(b.gpu()), "cudaSetDevice");
  check(cudaMemcpy(b.data() + offset, host, n, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

void copy_from_device(const Buffer& b, std::size_t offset, char* host, std::size_t n) {
  check(cudaSetDevice(b.gpu()), "cudaSetDevice");
  check(cudaMemcpy(host, b.data() + offset, n, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}

struct Staging::Impl {
  int gpu = 0;
  cudaStream_t stream = nullptr;
  std::vector<char*> slots;
  std::vector<cudaEvent_t> events;
};

Staging::Staging(int gpu, std::size_t slot_bytes, int slots) : impl_(std::make_unique<Impl>()), slots_(slots) {
  impl_->gpu = gpu;
  set_device(gpu);
  check(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  for (int i = 0; i < slots; ++i) {
    void* p = nullptr;
    check(cudaHostAlloc(&p, slot_bytes, cudaHostAllocDefault), "cudaHostAlloc staging slot");
    impl_->slots.push_back(static_cast<char*>(p));
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    impl_->events.push_back(e);
  }
}

Staging::~Staging() {
  if (!impl_) return;
  if (impl_->stream) cudaStreamSynchronize(impl_->stream);
  for (auto* p : impl_->slots) cudaFreeHost(p);
  for (auto e : impl_->events) cudaEventDestroy(e);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

char* Staging::slot(int i) const { return impl_->slots[static_cast<std::size_t>(i)]; }

void Staging::d2h(int i, const void* dev, std::size_t n) {
  check(cudaMemcpyAsync(slot(i), dev, n, cudaMemcpyDeviceToHost, impl_->stream), "cudaMemcpyAsync D2H");
  check(cudaEventRecord(impl_->events[static_cast<std::size_t>(i)], impl_->stream), "cudaEventRecord");
}

void Staging::h2d(int i, void* dev, std::size_t n) {
  check(cudaMemcpyAsync(dev, slot(i), n, cudaMemcpyHostToDevice, impl_->stream), "cudaMemcpyAsync H2D");
  check(cudaEventRecord(impl_->events[static_cast<std::size_t>(i)], impl_->stream), "cudaEventRecord");
}

void Staging::wait(int i) { check(cudaEventSynchronize(impl_->events[static_cast<std::size_t>(i)]), "cudaEventSynchronize"); }

void Staging::set_device(int gpu) { check(cudaSetDevice(gpu), "cudaSetDevice(" + std::to_string(gpu) + ")"); }
void Staging::synchronize_device() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

bool device_accessible(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error this call leaves
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ||
         (a.type == cudaMemoryTypeHost && a.devicePointer != nullptr);
}

#else  // no CUDA

namespace {
[[noreturn]] void no_cuda() {
  throw Error("--mem gpu needs a p2pscope built with CUDA (this build has none); use --mem host");
}
}  // namespace

bool cuda_built() { return false; }
Buffer Buffer::device(std::size_t, int) { no_cuda(); }
void free_device(void*) noexcept {}
void copy_to_device(Buffer&, std::size_t, const char*, std::size_t) { no_cuda(); }
void copy_from_device(const Buffer&, std::size_t, char*, std::size_t) { no_cuda(); }
struct Staging::Impl {};
Staging::Staging(int, std::size_t, int) { no_cuda(); }
Staging::~Staging() = default;
char* Staging::slot(int) const { return nullptr; }
void Staging::d2h(int, const void*, std::size_t) { no_cuda(); }
void Staging::h2d(int, void*, std::size_t) { no_cuda(); }
void Staging::wait(int) {}
void Staging::set_device(int) { no_cuda(); }
void Staging::synchronize_device() { no_cuda(); }
bool device_accessible(const void*) { return false; }

#endif

}  // namespace p2pscope::tcp
