// The ce backend: copies by the copy engines (ce_copy.hpp: push, pull or both, sliced
// over streams), optionally with a share through pinned host memory at the same time
// (+host). Device-local copies (src == dst) too.
#include <memory>

#include "transport/cuda/ce_copy.hpp"
#include "transport/cuda/cuda_base.hpp"

namespace p2pscope::bench {
namespace {
using namespace cuda;

class CeBackend final : public CudaBase {
 public:
  explicit CeBackend(CeMode mode) : CudaBase("ce", 0), ce_(mode) {}
  std::string name() const override { return ce_.name(); }

 protected:
  int lane_device(int src, int dst) const override { return ce_.initiator(src, dst); }
  std::size_t ops_per_transfer(int src, int dst) const override {
    const std::uint64_t host_chunks = ce_.host_share(src, dst, max_bytes()) / kHostPathChunk;
    return ce_.ops_per_copy() + (host_chunks ? 3 + 6 * static_cast<std::size_t>(host_chunks) : 0);
  }
  std::string note(int src, int dst) const override { return ce_.describe(src, dst); }
  void sync_own_streams() override { ce_.synchronize(); }
  StageShape stage_shape() const override { return {kHostPathChunk, 4}; }

  // +host: the tail of the buffer through host memory while the copy engine moves the
  // rest over the link; `st` waits for both.
  void issue(int src, int dst, std::uint64_t n, cudaStream_t st) override {
    DeviceGuard g(initiator(src, dst));
    const std::uint64_t h = ce_.host_share(src, dst, n);
    if (h == 0) {
      ce_.issue(recv_ptr(dst), dst, send_ptr(src), src, n, st);
      return;
    }
    cudaEvent_t last = queue_staged(src, dst, n - h, h, st);
    ce_.issue(recv_ptr(dst), dst, send_ptr(src), src, n - h, st);
    join_staged(src, dst, st, last);
  }

 private:
  CeCopier ce_;
};

}  // namespace

// The variant is parsed first: a usage error whether or not there is a GPU.
std::unique_ptr<Backend> make_ce_backend(const BackendOptions& opts) {
  return std::make_unique<CeBackend>(parse_ce_variant(opts.variant));
}

}  // namespace p2pscope::bench
