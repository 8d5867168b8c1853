// Staging through pinned host memory (cuda_base.hpp): the staged backend's GPU -> GPU
// path and the ce backend's +host share.
#include <algorithm>

#include "transport/cuda/cuda_base.hpp"

namespace p2pscope::bench::cuda {

// staged: 64 MiB chunks in 2 slots; the ce backend's +host path: 8 MiB in 4 (stage_shape).
CudaBase::Stage& CudaBase::stage_for(int src, int dst) {
  auto& sg = stage_[{src, dst}];
  if (!sg.bounce.get()) {
    const StageShape shape = stage_shape();
    sg.chunk = std::max<std::uint64_t>(1, std::min(shape.chunk, max_bytes_));
    const int slots = shape.slots;
    sg.bounce = pinned_alloc(static_cast<std::uint64_t>(slots) * sg.chunk, src);
    sg.kick = make_event(initiator(src, dst));
    for (int k = 0; k < slots; ++k) {
      sg.down.push_back(make_event(src));
      sg.up.push_back(make_event(dst));
    }
  }
  return sg;
}

cudaEvent_t CudaBase::queue_staged(int src, int dst, std::uint64_t base, std::uint64_t n, cudaStream_t st) {
  Stage& sg = stage_for(src, dst);
  const int lane_dev = initiator(src, dst);
  const std::size_t slots = sg.down.size();
  cudaStream_t down = dev_[static_cast<std::size_t>(src)].down.get();
  cudaStream_t up = dev_[static_cast<std::size_t>(dst)].up.get();
  { DeviceGuard g(lane_dev); P2P_CUDA(cudaEventRecord(sg.kick.get(), st), lane_dev); }
  { DeviceGuard g(src); P2P_CUDA(cudaStreamWaitEvent(down, sg.kick.get(), 0), src); }
  const std::uint64_t chunks = std::max<std::uint64_t>(1, (n + sg.chunk - 1) / sg.chunk);
  for (std::uint64_t k = 0; k < chunks; ++k) {
    const std::uint64_t off = base + k * sg.chunk, len = std::min(sg.chunk, base + n - off);
    const std::size_t slot_index = static_cast<std::size_t>(k % slots);
    auto* slot = static_cast<unsigned char*>(sg.bounce.get()) + slot_index * sg.chunk;
    {
      DeviceGuard g(src);
      if (k >= slots) P2P_CUDA(cudaStreamWaitEvent(down, sg.up[slot_index].get(), 0), src);  // slot free again
      P2P_CUDA(cudaMemcpyAsync(slot, static_cast<unsigned char*>(send_ptr(src)) + off, len, cudaMemcpyDeviceToHost, down), src);
      P2P_CUDA(cudaEventRecord(sg.down[slot_index].get(), down), src);
    }
    {
      DeviceGuard g(dst);
      P2P_CUDA(cudaStreamWaitEvent(up, sg.down[slot_index].get(), 0), dst);
      P2P_CUDA(cudaMemcpyAsync(static_cast<unsigned char*>(recv_ptr(dst)) + off, slot, len, cudaMemcpyHostToDevice, up), dst);
      P2P_CUDA(cudaEventRecord(sg.up[slot_index].get(), up), dst);
    }
  }
  return sg.up[static_cast<std::size_t>((chunks - 1) % slots)].get();
}

void CudaBase::join_staged(int src, int dst, cudaStream_t st, cudaEvent_t last) {
  const int lane_dev = initiator(src, dst);
  DeviceGuard g(lane_dev);
  P2P_CUDA(cudaStreamWaitEvent(st, last, 0), lane_dev);
}

}  // namespace p2pscope::bench::cuda
