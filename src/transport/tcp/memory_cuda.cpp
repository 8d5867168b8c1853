// GPU memory for --mem gpu: device buffers and pinned staging slots. Without CUDA
// every entry point fails with a message saying how to get it.
#include <string>
#include <vector>

#include "p2pscope/error.hpp"
#include "transport/tcp/memory.hpp"

#include <unistd.h>

#if P2PSCOPE_HAVE_CUDA
#include <cuda.h>  // driver types only: its functions are reached through the runtime
#include <cuda_runtime.h>
#include <fmt/format.h>
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

namespace {

// Driver API functions through the runtime's entry-point lookup, as NCCL reaches them:
// p2pscope does not link libcuda. null when the driver lacks the symbol.
void* driver_symbol(const char* sym, unsigned cuda_version) {
  void* fn = nullptr;
#if CUDART_VERSION >= 12050
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e = cudaGetDriverEntryPointByVersion(sym, &fn, cuda_version, cudaEnableDefault, &q);
#elif CUDART_VERSION >= 12000
  (void)cuda_version;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e = cudaGetDriverEntryPoint(sym, &fn, cudaEnableDefault, &q);
#else
  (void)cuda_version;
  const int q = 0;
  const cudaError_t e = cudaGetDriverEntryPoint(sym, &fn, cudaEnableDefault);
#endif
  if (e != cudaSuccess || q != 0) {
    cudaGetLastError();
    return nullptr;
  }
  return fn;
}

struct Driver {
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*get_handle)(void*, CUdeviceptr, std::size_t, CUmemRangeHandleType, unsigned long long) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;
};

// Looked up once (after the runtime initialised the driver), then read-only.
const Driver& driver() {
  static const Driver d = [] {
    Driver x;
    x.device_get = reinterpret_cast<decltype(x.device_get)>(driver_symbol("cuDeviceGet", 2000));
    x.get_attribute = reinterpret_cast<decltype(x.get_attribute)>(driver_symbol("cuDeviceGetAttribute", 2000));
    x.get_handle = reinterpret_cast<decltype(x.get_handle)>(driver_symbol("cuMemGetHandleForAddressRange", 11070));
    x.error_name = reinterpret_cast<decltype(x.error_name)>(driver_symbol("cuGetErrorName", 6000));
    return x;
  }();
  return d;
}

std::string cu_text(CUresult r) {
  const char* name = nullptr;
  if (driver().error_name && driver().error_name(r, &name) == CUDA_SUCCESS && name) return fmt::format("{} ({})", name, static_cast<int>(r));
  return fmt::format("CUresult {}", static_cast<int>(r));
}

}  // namespace

std::string dmabuf_unsupported(int gpu) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return "no CUDA GPU is visible on this machine";
  }
  if (gpu < 0 || gpu >= count)
    return fmt::format("GPU {} does not exist (this machine has {})", gpu, count);
  const Driver& d = driver();
  if (!d.device_get || !d.get_attribute) return "the CUDA driver's cuDeviceGet / cuDeviceGetAttribute were not found";
  if (!d.get_handle) return "the CUDA driver has no cuMemGetHandleForAddressRange (dma-buf export needs CUDA 11.7 or later)";
  CUdevice dev = 0;
  if (const CUresult r = d.device_get(&dev, gpu); r != CUDA_SUCCESS)
    return fmt::format("cuDeviceGet({}) failed: {}", gpu, cu_text(r));
  int supported = 0;
  if (const CUresult r = d.get_attribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev); r != CUDA_SUCCESS)
    return fmt::format("cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED) of GPU {} failed: {}", gpu, cu_text(r));
  if (!supported)
    return fmt::format("GPU {} cannot export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: the NVIDIA open "
                       "kernel modules and Linux 5.12 or later are needed)", gpu);
  return "";
}

DmabufFd export_dmabuf(const Buffer& b) {
  if (!b.on_gpu()) throw UsageError("a dma-buf is exported from GPU memory; this buffer is host memory");
  const Driver& d = driver();
  if (!d.get_handle) throw Error("dma-buf export: the CUDA driver has no cuMemGetHandleForAddressRange (CUDA 11.7+)");
  check(cudaSetDevice(b.gpu()), "cudaSetDevice(" + std::to_string(b.gpu()) + ")");
  const long page = sysconf(_SC_PAGESIZE);
  const PageRange r = page_range(reinterpret_cast<std::uintptr_t>(b.data()), b.size(),
                                 page > 0 ? static_cast<std::uint64_t>(page) : 4096);
  int fd = -1;
  const CUresult e = d.get_handle(&fd, static_cast<CUdeviceptr>(r.base), r.bytes, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (e != CUDA_SUCCESS || fd < 0)
    throw Error(fmt::format("cuMemGetHandleForAddressRange(DMA_BUF_FD, {} bytes at {:#x} on GPU {}) failed: {}", r.bytes,
                            r.base, b.gpu(), e != CUDA_SUCCESS ? cu_text(e) : "no fd returned"));
  return DmabufFd(fd, r.offset, r.bytes);
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
std::string dmabuf_unsupported(int) { return "this p2pscope was built without CUDA"; }
DmabufFd export_dmabuf(const Buffer&) { no_cuda(); }

#endif

}  // namespace p2pscope::tcp
