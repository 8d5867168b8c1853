// NCCL collectives for `bench nccl`: each rank's calls (collective_ops.hpp),
// and the one-process run, one communicator per GPU (ncclCommInitAll).
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "bench/nccl_collective.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/kernels.hpp"
#include "transport/nccl/collective_ops.hpp"
#include "transport/nccl/nccl_util.hpp"

namespace p2pscope::bench {
namespace nccl {
namespace {
ncclDataType_t nccl_type(NcclType t) {
  switch (t) {
    case NcclType::int8: return ncclInt8;
    case NcclType::int32: return ncclInt32;
    case NcclType::float16: return ncclFloat16;
    case NcclType::bfloat16: return ncclBfloat16;
    case NcclType::float32: return ncclFloat32;
    case NcclType::float64: return ncclFloat64;
  }
  return ncclFloat32;
}
}  // namespace

void issue_collective(const CollectiveShape& s, int r, const void* i, void* o, ncclComm_t c, cudaStream_t st, int d) {
  const int n = s.ranks;
  const std::uint64_t chunk = s.chunk, es = s.esize;
  const ncclDataType_t t = nccl_type(s.type);
  const auto* in = static_cast<const unsigned char*>(i);
  auto* out = static_cast<unsigned char*>(o);
  switch (s.op) {
    case NcclOp::allreduce: P2P_NCCL(ncclAllReduce(i, o, s.elems, t, ncclSum, c, st), d); break;
    case NcclOp::allgather: P2P_NCCL(ncclAllGather(i, o, chunk, t, c, st), d); break;
    case NcclOp::reducescatter: P2P_NCCL(ncclReduceScatter(i, o, chunk, t, ncclSum, c, st), d); break;
    case NcclOp::alltoall:
      P2P_NCCL(ncclGroupStart(), d);
      for (int p = 0; p < n; ++p) {
        P2P_NCCL(ncclSend(in + p * chunk * es, chunk, t, p, c, st), d);
        P2P_NCCL(ncclRecv(out + p * chunk * es, chunk, t, p, c, st), d);
      }
      P2P_NCCL(ncclGroupEnd(), d);
      break;
    case NcclOp::sendrecv:
      P2P_NCCL(ncclGroupStart(), d);
      P2P_NCCL(ncclSend(i, s.elems, t, (r + 1) % n, c, st), d);
      P2P_NCCL(ncclRecv(o, s.elems, t, (r + n - 1) % n, c, st), d);
      P2P_NCCL(ncclGroupEnd(), d);
      break;
  }
}

}  // namespace nccl

using namespace cuda;

bool nccl_collectives_built() { return true; }

CollectiveResult run_collective(const CollectiveSpec& spec) {
  const std::size_t n = spec.gpus.size();
  if (n < 1) throw UsageError("bench nccl: no GPUs chosen");
  const auto shape = collective_shape(spec.op, spec.type, static_cast<int>(n), spec.bytes);
  CollectiveResult res;
  res.bytes = shape.bytes;
  const std::uint64_t S = res.bytes, in_elems = shape.in_elems, out_elems = shape.out_elems;
  for (int d : spec.gpus) {
    DeviceGuard g(d);
    std::size_t free_b = 0, total_b = 0;
    P2P_CUDA(cudaMemGetInfo(&free_b, &total_b), d);
    if ((in_elems + out_elems) * shape.esize + (512ull << 20) > free_b)
      throw UsageError(fmt::format("bench nccl: {} needs {} on GPU {} but {} is free", format_size(S),
                                   format_size((in_elems + out_elems) * shape.esize + (512ull << 20)), d, format_size(free_b)));
  }
  for (int d : spec.gpus) { DeviceGuard g(d); preload_kernels(d); }
  nccl::Comms comms(spec.gpus);
  std::vector<DeviceBuffer> in, out;
  std::vector<Stream> st;
  std::vector<Event> done;
  for (std::size_t r = 0; r < n; ++r) {
    const int d = spec.gpus[r];
    in.push_back(device_alloc(d, in_elems * shape.esize));
    out.push_back(device_alloc(d, out_elems * shape.esize));
    st.push_back(make_stream(d));
    done.push_back(make_event(d));
    const std::vector<unsigned char> h = collective_input(shape, static_cast<int>(r));
    DeviceGuard g(d);
    P2P_CUDA(cudaMemcpy(in.back().get(), h.data(), h.size(), cudaMemcpyHostToDevice), d);
    P2P_CUDA(cudaMemsetAsync(out.back().get(), 0xFF, out_elems * shape.esize, st.back().get()), d);  // NaN poison
    P2P_CUDA(cudaStreamSynchronize(st.back().get()), d);
  }
  const int r0 = spec.gpus[0];
  auto issue = [&] {
    P2P_NCCL(ncclGroupStart(), r0);
    for (std::size_t r = 0; r < n; ++r) {
      const int d = spec.gpus[r];
      nccl::issue_collective(shape, static_cast<int>(r), in[r].get(), out[r].get(), comms.at(r), st[r].get(), d);
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
  res.held_start = hold;
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
    std::vector<unsigned char> h(out_elems * shape.esize);
    DeviceGuard g(spec.gpus[r]);
    P2P_CUDA(cudaMemcpy(h.data(), out[r].get(), h.size(), cudaMemcpyDeviceToHost), spec.gpus[r]);
    res.first_bad = first_wrong_output(shape, static_cast<int>(r), h);
    if (res.first_bad >= 0) res.bad_rank = static_cast<int>(r);
  }
  return res;
}

}  // namespace p2pscope::bench
