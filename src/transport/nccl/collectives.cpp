// NCCL collectives for `bench nccl`: each rank's calls (collective_ops.hpp),
// and the one-process run, one communicator per GPU (ncclCommInitAll).
#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "bench/nccl_collective.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/kernels.hpp"
#include "transport/nccl/collective_ops.hpp"
#include "transport/nccl/gpu_check.hpp"
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
    case NcclOp::broadcast: P2P_NCCL(ncclBroadcast(i, o, s.elems, t, 0, c, st), d); break;
    case NcclOp::sendrecv:
      P2P_NCCL(ncclGroupStart(), d);
      P2P_NCCL(ncclSend(i, s.elems, t, (r + 1) % n, c, st), d);
      P2P_NCCL(ncclRecv(o, s.elems, t, (r + n - 1) % n, c, st), d);
      P2P_NCCL(ncclGroupEnd(), d);
      break;
  }
}

std::pair<const void*, void*> in_place_buffers(const CollectiveShape& s, int r, void* in, void* out) {
  const std::uint64_t off = static_cast<std::uint64_t>(r) * s.chunk * s.esize;
  auto* o = static_cast<unsigned char*>(out);
  auto* i = static_cast<unsigned char*>(in);
  switch (s.op) {
    case NcclOp::allgather: return {o + off, o};      // my chunk sits where it belongs in the output
    case NcclOp::reducescatter: return {i, i + off};  // my result lands on my chunk of the input
    default: return {o, o};                           // allreduce, broadcast: one buffer
  }
}

}  // namespace nccl

using namespace cuda;

bool nccl_collectives_built() { return true; }

namespace {

// One process driving every GPU of `gpus`, one rank each: the communicators and
// streams live for the whole sweep (ncclCommInitAll costs about a second per call, and
// used to be paid at every size). Buffers are made per size.
class LocalCollectives final : public CollectiveRanks {
 public:
  explicit LocalCollectives(std::vector<int> gpus) : gpus_(std::move(gpus)) {
    if (gpus_.empty()) throw UsageError("bench nccl: no GPUs chosen");
    for (int d : gpus_) { DeviceGuard g(d); preload_kernels(d); }
    comms_ = std::make_unique<nccl::Comms>(gpus_);
    for (int d : gpus_) st_.push_back(make_stream(d));
  }
  int ranks() const override { return static_cast<int>(gpus_.size()); }
  int rank() const override { return 0; }
  std::string rank_name(int r) const override { return fmt::format("GPU {}", gpus_.at(static_cast<std::size_t>(r))); }
  std::vector<int> local_gpus() const override { return gpus_; }
  CollectiveResult run(const CollectiveSpec& spec) override;

 private:
  std::vector<int> gpus_;
  std::unique_ptr<nccl::Comms> comms_;
  std::vector<Stream> st_;
};

}  // namespace

std::unique_ptr<CollectiveRanks> make_local_collectives(const std::vector<int>& gpus) {
  return std::make_unique<LocalCollectives>(gpus);
}

CollectiveResult run_collective(const CollectiveSpec& spec) { return LocalCollectives(spec.gpus).run(spec); }

namespace {

// The distribution: events around each iteration on every rank's own stream (no cross-GPU
// waits, which would add their own latency), all work held behind a spin kernel until it
// is queued. A sample is the mean of the ranks' durations.
void event_pass(const CollectiveSpec& spec, std::vector<Stream>& st, const std::function<void(bool)>& issue,
                const std::function<void()>& sync_all, CollectiveResult& res) {
  const std::size_t n = spec.gpus.size();
  PinnedBuffer flag = pinned_alloc(64);
  auto* release = static_cast<volatile int*>(flag.get());
  *release = 0;
  const bool hold = spec.iters * static_cast<int>(n) * 4 < 600;
  res.held_start = hold;
  if (hold)
    for (std::size_t r = 0; r < n; ++r) { DeviceGuard g(spec.gpus[r]); launch_spin_until(release, 1, st[r].get(), spec.gpus[r]); }
  std::vector<std::vector<Event>> a(n), b(n);
  for (int i = 0; i < spec.iters; ++i) {
    for (std::size_t r = 0; r < n; ++r) {
      const int d = spec.gpus[r];
      a[r].push_back(make_event(d));
      b[r].push_back(make_event(d));
      DeviceGuard g(d);
      P2P_CUDA(cudaEventRecord(a[r].back().get(), st[r].get()), d);
    }
    issue(false);
    for (std::size_t r = 0; r < n; ++r) {
      DeviceGuard g(spec.gpus[r]);
      P2P_CUDA(cudaEventRecord(b[r].back().get(), st[r].get()), spec.gpus[r]);
    }
  }
  *release = 1;
  sync_all();
  res.elapsed_ns.assign(static_cast<std::size_t>(spec.iters), 0.0);
  res.by_rank_ns.assign(n, {});
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < static_cast<std::size_t>(spec.iters); ++i) {
      const double v = elapsed_ms(a[r][i], b[r][i]) * 1e6;
      res.by_rank_ns[r].push_back(v);
      res.elapsed_ns[i] += v / static_cast<double>(n);
    }
}

// Every rank's output checked against what the op must produce, the first wrong rank
// named: on the GPUs where `codes_dev` is given (and `bad` holds a word per rank), else
// read back and checked on a host thread per rank.
void check_outputs(const CollectiveShape& shape, const std::vector<int>& gpus, const std::vector<DeviceBuffer>& out,
                   std::vector<Stream>& st, const std::vector<DeviceBuffer>* codes_dev, std::vector<DeviceBuffer>& bad,
                   CollectiveResult& res) {
  const std::size_t n = gpus.size();
  if (codes_dev) {
    for (std::size_t r = 0; r < n; ++r) {
      DeviceGuard g(gpus[r]);
      nccl::gpu_check_output(out[r].get(), shape.out_elems, shape.esize, static_cast<int>(shape.op), static_cast<int>(n),
                             static_cast<int>(r), shape.chunk, (*codes_dev)[r].get(), static_cast<long long*>(bad[r].get()),
                             st[r].get(), gpus[r]);
    }
    for (std::size_t r = 0; r < n; ++r) {
      DeviceGuard g(gpus[r]);
      long long first = 0;
      P2P_CUDA(cudaMemcpyAsync(&first, bad[r].get(), sizeof first, cudaMemcpyDeviceToHost, st[r].get()), gpus[r]);
      P2P_CUDA(cudaStreamSynchronize(st[r].get()), gpus[r]);
      if (first >= 0 && static_cast<std::uint64_t>(first) < shape.out_elems && res.first_bad < 0)
        res.first_bad = first, res.bad_rank = static_cast<int>(r);
    }
    return;
  }
  std::vector<std::future<std::int64_t>> checks;
  for (std::size_t r = 0; r < n; ++r) {
    auto h = std::make_shared<std::vector<unsigned char>>(shape.out_elems * shape.esize);
    DeviceGuard g(gpus[r]);
    P2P_CUDA(cudaMemcpy(h->data(), out[r].get(), h->size(), cudaMemcpyDeviceToHost), gpus[r]);
    checks.push_back(std::async(std::launch::async, [&shape, r, h] { return first_wrong_output(shape, static_cast<int>(r), *h); }));
  }
  for (std::size_t r = 0; r < checks.size(); ++r) {
    const std::int64_t first = checks[r].get();
    if (first >= 0 && res.first_bad < 0) res.first_bad = first, res.bad_rank = static_cast<int>(r);
  }
}

}  // namespace

CollectiveResult LocalCollectives::run(const CollectiveSpec& spec_in) {
  CollectiveSpec spec = spec_in;
  spec.gpus = gpus_;
  const std::size_t n = spec.gpus.size();
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
  const nccl::Comms& comms = *comms_;
  std::vector<Stream>& st = st_;
  std::vector<DeviceBuffer> in, out;
  // The check runs on the GPUs (nccl-tests' way): inputs built and outputs compared by
  // kernels from one table of value encodings. Only a type too narrow for the sums (a
  // large bfloat16 reduction) needs the host check's rounding tolerance.
  const CollectiveCodes codes = collective_codes(shape);
  const bool on_gpu = spec.check && codes.exact;
  std::vector<DeviceBuffer> codes_dev, bad_dev;
  std::vector<std::future<std::vector<unsigned char>>> inputs;  // host check: every rank's at once
  for (std::size_t r = 0; spec.check && !on_gpu && r < n; ++r)
    inputs.push_back(std::async(std::launch::async, [&shape, r] { return collective_input(shape, static_cast<int>(r)); }));
  for (std::size_t r = 0; r < n; ++r) {
    const int d = spec.gpus[r];
    in.push_back(device_alloc(d, in_elems * shape.esize));
    out.push_back(device_alloc(d, out_elems * shape.esize));
    DeviceGuard g(d);
    if (on_gpu) {
      codes_dev.push_back(device_alloc(d, codes.enc.size()));
      bad_dev.push_back(device_alloc(d, sizeof(long long)));
      P2P_CUDA(cudaMemcpy(codes_dev.back().get(), codes.enc.data(), codes.enc.size(), cudaMemcpyHostToDevice), d);
      nccl::gpu_fill_input(in.back().get(), in_elems, shape.esize, static_cast<int>(shape.op), static_cast<int>(r),
                           codes_dev.back().get(), st[r].get(), d);
    } else if (spec.check) {
      const std::vector<unsigned char> h = inputs[r].get();
      P2P_CUDA(cudaMemcpy(in.back().get(), h.data(), h.size(), cudaMemcpyHostToDevice), d);
    } else {
      P2P_CUDA(cudaMemsetAsync(in.back().get(), 0, in_elems * shape.esize, st[r].get()), d);
    }
    P2P_CUDA(cudaMemsetAsync(out.back().get(), 0xFF, out_elems * shape.esize, st[r].get()), d);  // NaN poison
    P2P_CUDA(cudaStreamSynchronize(st[r].get()), d);
  }
  const int r0 = spec.gpus[0];
  // One op on every rank, in one group (nccl-tests' startColl with -g n).
  auto issue = [&](bool in_place) {
    P2P_NCCL(ncclGroupStart(), r0);
    for (std::size_t r = 0; r < n; ++r) {
      const int d = spec.gpus[r];
      const auto ip = nccl::in_place_buffers(shape, static_cast<int>(r), in[r].get(), out[r].get());
      nccl::issue_collective(shape, static_cast<int>(r), in_place ? ip.first : in[r].get(), in_place ? ip.second : out[r].get(),
                             comms.at(r), st[r].get(), d);
    }
    P2P_NCCL(ncclGroupEnd(), r0);
  };
  auto sync_all = [&] {
    for (std::size_t r = 0; r < n; ++r) { DeviceGuard g(spec.gpus[r]); P2P_CUDA(cudaStreamSynchronize(st[r].get()), spec.gpus[r]); }
  };
  for (int i = 0; i < std::max(1, spec.warmup); ++i) issue(false);  // NCCL kernels load before timing
  sync_all();
  // nccl-tests' span: one op and a wait, then iters ops back to back and one wait.
  auto span = [&](bool in_place) {
    issue(in_place);
    sync_all();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < spec.iters; ++i) issue(in_place);
    sync_all();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / spec.iters;
  };
  for (int k = 0; k < std::max(1, spec.spans); ++k) res.spans_ns.push_back(span(false));
  res.span_ns = median(res.spans_ns);
  if (spec.per_iteration) {
    event_pass(spec, st, issue, sync_all, res);
  } else {
    res.elapsed_ns.assign(static_cast<std::size_t>(spec.iters), res.span_ns);
  }
  if (spec.check) check_outputs(shape, spec.gpus, out, st, on_gpu ? &codes_dev : nullptr, bad_dev, res);
  if (spec.in_place && has_in_place(spec.op)) {  // last: it overwrites outputs
    std::vector<double> ip;
    for (int k = 0; k < std::max(1, spec.spans); ++k) ip.push_back(span(true));
    res.span_in_place_ns = median(ip);
  }
  return res;
}

}  // namespace p2pscope::bench
