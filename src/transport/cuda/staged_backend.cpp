// The staged backend: every copy goes through pinned host memory. Device N, one past
// the GPUs, is host pinned memory, so N:0 is host -> GPU 0 (one cudaMemcpyAsync);
// GPU -> GPU runs in 64 MiB chunks through 2 bounce slots, the source copying out
// while the destination copies in.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/cuda_base.hpp"
#include "bench/pair_support.hpp"

namespace p2pscope::bench {
namespace {
using namespace cuda;

constexpr std::uint64_t kStageChunk = 64ull << 20;  // 2 slots per direction in pinned memory

class StagedBackend final : public CudaBase {
 public:
  StagedBackend() : CudaBase("staged", 1) {}
  std::string name() const override { return "staged"; }
  PairSupport support(int src, int dst) const override {
    return distinct_pair(src, dst, [this](int d) { check_device(d); });
  }

 protected:
  bool uses_peer_access() const override { return false; }
  std::size_t ops_per_transfer(int src, int dst) const override {
    if (is_host(src) || is_host(dst)) return 1;
    return 8 + 6 * (max_bytes() / kStageChunk + 1);
  }
  std::string note(int src, int dst) const override {
    if (is_host(src) || is_host(dst)) return "cudaMemcpyAsync between pinned host memory and the GPU";
    return fmt::format("staged through pinned host memory, {} chunks, 2 slots", format_size(std::min(kStageChunk, max_bytes())));
  }
  StageShape stage_shape() const override { return {kStageChunk, 2}; }
  void issue(int src, int dst, std::uint64_t n, cudaStream_t st) override {
    const int d = initiator(src, dst);
    DeviceGuard g(d);
    if (is_host(src)) {
      P2P_CUDA(cudaMemcpyAsync(recv_ptr(dst), send_ptr(src), n, cudaMemcpyHostToDevice, st), d);
    } else if (is_host(dst)) {
      P2P_CUDA(cudaMemcpyAsync(recv_ptr(dst), send_ptr(src), n, cudaMemcpyDeviceToHost, st), d);
    } else {
      join_staged(src, dst, st, queue_staged(src, dst, 0, n, st));
    }
  }
};

}  // namespace

std::unique_ptr<Backend> make_staged_backend(const BackendOptions& opts) {
  if (!opts.variant.empty()) throw UsageError("backend staged has no variants (they are for sm and ce)");
  return std::make_unique<StagedBackend>();
}

}  // namespace p2pscope::bench
