// NCCL collectives for `bench nccl`, one communicator per GPU (ncclCommInitAll).
// Inputs hold small integers in float32 so every sum is exact and checkable.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "bench/nccl_collective.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/kernels.hpp"
#include "transport/nccl/nccl_util.hpp"

namespace p2pscope::bench {
using namespace cuda;

bool nccl_collectives_built() { return true; }

namespace {
float input_value(int rank, std::uint64_t i) { return static_cast<float>((rank + 1) + static_cast<int>(i % 13)); }
}  // namespace

CollectiveResult run_collective(const CollectiveSpec& spec) {
  const std::size_t n = spec.gpus.size();
  if (n < 1) throw UsageError("bench nccl: no GPUs chosen");
  const std::uint64_t unit = 4 * n;
  CollectiveResult res;
  res.bytes = std::max<std::uint64_t>(unit, spec.bytes / unit * unit);
  const std::uint64_t S = res.bytes, elems = S / 4, chunk = elems / n;
  std::uint64_t in_elems = elems, out_elems = elems;  // per rank
  switch (spec.op) {
    case NcclOp::allgather: in_elems = chunk; break;
    case NcclOp::reducescatter: out_elems = chunk; break;
    default: break;
  }
  for (int d : spec.gpus) {
    DeviceGuard g(d);
    std::size_t free_b = 0, total_b = 0;
    P2P_CUDA(cudaMemGetInfo(&free_b, &total_b), d);
    if ((in_elems + out_elems) * 4 + (512ull << 20) > free_b)
      throw UsageError(fmt::format("bench nccl: {} needs {} on GPU {} but {} is free", format_size(S),
                                   format_size((in_elems + out_elems) * 4 + (512ull << 20)), d, format_size(free_b)));
  }
  for (int d : spec.gpus) { DeviceGuard g(d); preload_kernels(d); }
  nccl::Comms comms(spec.gpus);
  std::vector<DeviceBuffer> in, out;
  std::vector<Stream> st;
  std::vector<Event> done;
  for (std::size_t r = 0; r < n; ++r) {
    const int d = spec.gpus[r];
    in.push_back(device_alloc(d, in_elems * 4));
    out.push_back(device_alloc(d, out_elems * 4));
    st.push_back(make_stream(d));
    done.push_back(make_event(d));
    std::vector<float> h(in_elems);
    for (std::uint64_t i = 0; i < in_elems; ++i) h[i] = input_value(static_cast<int>(r), i);
    DeviceGuard g(d);
    P2P_CUDA(cudaMemcpy(in.back().get(), h.data(), in_elems * 4, cudaMemcpyHostToDevice), d);
    P2P_CUDA(cudaMemsetAsync(out.back().get(), 0xFF, out_elems * 4, st.back().get()), d);  // NaN poison
    P2P_CUDA(cudaStreamSynchronize(st.back().get()), d);
  }
  const int r0 = spec.gpus[0];
  auto issue = [&] {
    P2P_NCCL(ncclGroupStart(), r0);
    for (std::size_t r = 0; r < n; ++r) {
      const int d = spec.gpus[r];
      auto c = comms.at(r);
      auto s = st[r].get();
      void* o = out[r].get();
      const void* i = in[r].get();
      switch (spec.op) {
        case NcclOp::allreduce: P2P_NCCL(ncclAllReduce(i, o, elems, ncclFloat, ncclSum, c, s), d); break;
        case NcclOp::allgather: P2P_NCCL(ncclAllGather(i, o, chunk, ncclFloat, c, s), d); break;
        case NcclOp::reducescatter: P2P_NCCL(ncclReduceScatter(i, o, chunk, ncclFloat, ncclSum, c, s), d); break;
        case NcclOp::alltoall:
          for (std::size_t p = 0; p < n; ++p) {
            P2P_NCCL(ncclSend(static_cast<const float*>(i) + p * chunk, chunk, ncclFloat, static_cast<int>(p), c, s), d);
            P2P_NCCL(ncclRecv(static_cast<float*>(o) + p * chunk, chunk, ncclFloat, static_cast<int>(p), c, s), d);
          }
          break;
        case NcclOp::sendrecv:
          P2P_NCCL(ncclSend(i, elems, ncclFloat, static_cast<int>((r + 1) % n), c, s), d);
          P2P_NCCL(ncclRecv(o, elems, ncclFloat, static_cast<int>((r + n - 1) % n), c, s), d);
          break;
      }
    }
    P2P_NCCL(ncclGroupEnd(), r0);
    for (std::size_t r = 1; r < n; ++r) {  // rank 0's stream waits for all: its end event = all done
      DeviceGuard g(spec.gpus[r]);
      P2P_CUDA(cudaEventRecord(done[r].get(), st[r].get()), spec.gpus[r]);
      DeviceGuard g0(r0);
      P2P_CUDA(cudaStreamWaitEvent(st[0].get(), done[r].get(), 0), r0);
    }
  };
  auto sync_all = [&] {
    for (std::size_t r = 0; r < n; ++r) { DeviceGuard g(spec.gpus[r]); P2P_CUDA(cudaStreamSynchronize(st[r].get()), spec.gpus[r]); }
  };
  for (int i = 0; i < std::max(1, spec.warmup); ++i) issue();  // NCCL kernels load before the spin
  sync_all();
  PinnedBuffer flag = pinned_alloc(64);
  auto* release = static_cast<volatile int*>(flag.get());
  *release = 0;
  const bool hold = spec.iters * static_cast<int>(n) * 4 < 600;
  if (hold)
    for (std::size_t r = 0; r < n; ++r) { DeviceGuard g(spec.gpus[r]); launch_spin_until(release, 1, st[r].get(), spec.gpus[r]); }
  std::vector<Event> a, b;
  for (int i = 0; i < spec.iters; ++i) {
    a.push_back(make_event(r0));
    b.push_back(make_event(r0));
    { DeviceGuard g(r0); P2P_CUDA(cudaEventRecord(a.back().get(), st[0].get()), r0); }
    issue();
    { DeviceGuard g(r0); P2P_CUDA(cudaEventRecord(b.back().get(), st[0].get()), r0); }
  }
  *release = 1;
  sync_all();
  for (int i = 0; i < spec.iters; ++i) res.elapsed_ns.push_back(elapsed_ms(a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)]) * 1e6);
  // Check every rank's output against what the op must produce.
  for (std::size_t r = 0; r < n && res.first_bad < 0; ++r) {
    std::vector<float> h(out_elems);
    DeviceGuard g(spec.gpus[r]);
    P2P_CUDA(cudaMemcpy(h.data(), out[r].get(), out_elems * 4, cudaMemcpyDeviceToHost), spec.gpus[r]);
    for (std::uint64_t j = 0; j < out_elems; ++j) {
      float want = 0;
      switch (spec.op) {
        case NcclOp::allreduce:
          for (std::size_t q = 0; q < n; ++q) want += input_value(static_cast<int>(q), j);
          break;
        case NcclOp::reducescatter:
          for (std::size_t q = 0; q < n; ++q) want += input_value(static_cast<int>(q), r * chunk + j);
          break;
        case NcclOp::allgather: want = input_value(static_cast<int>(j / chunk), j % chunk); break;
        case NcclOp::alltoall: want = input_value(static_cast<int>(j / chunk), r * chunk + j % chunk); break;
        case NcclOp::sendrecv: want = input_value(static_cast<int>((r + n - 1) % n), j); break;
      }
      if (h[j] != want) {
        res.first_bad = static_cast<std::int64_t>(j);
        res.bad_rank = static_cast<int>(r);
        break;
      }
    }
  }
  return res;
}

}  // namespace p2pscope::bench
