// `bench nccl` with one process per GPU (mpirun, srun, torchrun): this process is
// one rank and drives one GPU through RankComm. The figure is nccl-tests' span (one op
// and a wait, a barrier, iters ops back to back, a wait; the mean of the ranks' spans,
// nccl-tests' -a 1). The distribution is the one-process run's event pass, rank by
// rank: each rank records events around every iteration on its own stream,
// its work held behind a spin kernel until every rank has queued all of it and passed
// a barrier (the blocking start). An iteration's sample is the mean of the ranks'
// durations, as nccl-tests reports by default (-a 1). Not the longest: ranks that run
// ahead in bursts (measured with two processes time-sharing one GPU: a rank finishes
// iterations k and k+1 back to back, then waits a whole time slice for k+2) give each
// rank alternating long and short durations, out of step, so the longest per
// iteration was 2x the real rate while the mean matched torch's loop time. Each
// rank's own samples are kept (by_rank_ns). Every rank checks its own output, and
// every rank returns the same result.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "bench/nccl_collective.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/kernels.hpp"
#include "transport/nccl/collective_ops.hpp"
#include "transport/nccl/nccl_util.hpp"
#include "transport/nccl/rank_comm.hpp"

namespace p2pscope::bench {
namespace {
using namespace cuda;

class NcclCollectiveRanks final : public CollectiveRanks {
 public:
  NcclCollectiveRanks(std::shared_ptr<Bootstrap> boot, int rank_device)
      : rc_(std::move(boot), rank_device, "bench nccl"), flag_(pinned_alloc(64, rc_.gpu())) {
    release_ = static_cast<volatile int*>(flag_.get());
    *release_ = 0;
  }

  int ranks() const override { return rc_.size(); }
  int rank() const override { return rc_.rank(); }
  std::string rank_name(int r) const override { return rc_.describe(r); }

  CollectiveResult run(const CollectiveSpec& spec) override {
    const auto shape = collective_shape(spec.op, spec.type, rc_.size(), spec.bytes);
    prepare_buffers(spec, shape);
    const std::string what = fmt::format("{} of {}", to_string(spec.op), format_size(shape.bytes));
    rc_.queue("the warm-up of " + what, [&] {
      for (int i = 0; i < std::max(1, spec.warmup); ++i) issue(shape, false);  // NCCL kernels load before timing
    });
    rc_.wait(fmt::format("{} warm-up", to_string(spec.op)));
    std::vector<double> my_spans;
    for (int k = 0; k < std::max(1, spec.spans); ++k) my_spans.push_back(span(spec, shape, what, false));
    Mine m;
    m.span_ns = median(my_spans);
    m.hold = spec.iters * 4 < 600;
    if (spec.per_iteration) {
      m.per_iteration_ns = event_pass(spec, shape, what, m.hold);
    } else {
      m.per_iteration_ns.assign(static_cast<std::size_t>(spec.iters), m.span_ns);
    }
    if (spec.check) {
      std::vector<unsigned char> got(shape.out_elems * shape.esize);
      P2P_CUDA(cudaMemcpyAsync(got.data(), out_.get(), got.size(), cudaMemcpyDeviceToHost, rc_.stream()), rc_.gpu());
      rc_.wait("reading the output back");
      m.first_bad = first_wrong_output(shape, rc_.rank(), got);
    }
    if (spec.in_place && has_in_place(spec.op)) {  // last: overwrites outputs
      std::vector<double> ip;
      for (int k = 0; k < std::max(1, spec.spans); ++k) ip.push_back(span(spec, shape, what, true));
      m.span_in_place_ns = median(ip);
    }
    CollectiveResult res = gather(spec, m);
    res.bytes = shape.bytes;
    return res;
  }

 private:
  // This rank's own figures, before the ranks exchange them.
  struct Mine {
    std::int64_t first_bad = -1;
    double span_ns = 0, span_in_place_ns = -1.0;
    std::vector<double> per_iteration_ns;
    bool hold = false;  // the ops were held behind the spin kernel to start together
  };

  // Every rank agrees there is room, then this size's buffers replace the last size's,
  // the input filled as the check expects (unchecked, any bytes time the same).
  void prepare_buffers(const CollectiveSpec& spec, const CollectiveShape& shape) {
    const int gpu = rc_.gpu();
    const std::uint64_t need = (shape.in_elems + shape.out_elems) * shape.esize + (512ull << 20);
    std::size_t free_b = 0, total_b = 0;
    {
      DeviceGuard g(gpu);
      P2P_CUDA(cudaMemGetInfo(&free_b, &total_b), gpu);
    }
    // The previous size's buffers are still held: count them as free.
    const std::uint64_t held = in_.get() ? held_bytes_ : 0;
    rc_.agree_or_throw(need > free_b + held ? fmt::format("bench nccl: {} needs {} on GPU {} but {} is free", format_size(shape.bytes),
                                                          format_size(need), gpu, format_size(free_b + held))
                                            : std::string());
    rc_.init_comm();
    cudaStream_t st = rc_.stream();
    in_ = DeviceBuffer();
    out_ = DeviceBuffer();
    in_ = device_alloc(gpu, shape.in_elems * shape.esize);
    out_ = device_alloc(gpu, shape.out_elems * shape.esize);
    held_bytes_ = (shape.in_elems + shape.out_elems) * shape.esize;
    if (spec.check) {
      const std::vector<unsigned char> h = collective_input(shape, rc_.rank());
      P2P_CUDA(cudaMemcpyAsync(in_.get(), h.data(), h.size(), cudaMemcpyHostToDevice, st), gpu);
      rc_.wait("copying the input");
    } else {
      P2P_CUDA(cudaMemsetAsync(in_.get(), 0, shape.in_elems * shape.esize, st), gpu);
    }
    P2P_CUDA(cudaMemsetAsync(out_.get(), 0xFF, shape.out_elems * shape.esize, st), gpu);  // poison: NaN, or -1
  }

  void issue(const CollectiveShape& shape, bool in_place) {
    const int me = rc_.rank();
    const auto ip = nccl::in_place_buffers(shape, me, in_.get(), out_.get());
    nccl::issue_collective(shape, me, in_place ? ip.first : in_.get(), in_place ? ip.second : out_.get(), rc_.comm(),
                           rc_.stream(), rc_.gpu());
  }

  // nccl-tests' span: one op and a wait, a barrier, iters ops back to back, one wait.
  double span(const CollectiveSpec& spec, const CollectiveShape& shape, const std::string& what, bool in_place) {
    rc_.queue(what, [&] { issue(shape, in_place); });
    rc_.wait(what);
    rc_.boot().barrier();
    const auto t0 = std::chrono::steady_clock::now();
    rc_.queue(what, [&] {
      for (int i = 0; i < spec.iters; ++i) issue(shape, in_place);
    });
    rc_.wait(what);
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / spec.iters;
  }

  // Each iteration between two events; `hold`: queued behind the spin kernel, which
  // every rank releases after the barrier, so the ranks' ops start together.
  std::vector<double> event_pass(const CollectiveSpec& spec, const CollectiveShape& shape, const std::string& what,
                                 bool hold) {
    const int gpu = rc_.gpu();
    cudaStream_t st = rc_.stream();
    std::vector<Event> a, b;
    for (int i = 0; i < spec.iters; ++i) a.push_back(make_event(gpu)), b.push_back(make_event(gpu));
    const int gen = ++generation_;
    if (hold) launch_spin_until(release_, gen, st, gpu);
    rc_.queue(what, [&] {
      for (int i = 0; i < spec.iters; ++i) {
        P2P_CUDA(cudaEventRecord(a[static_cast<std::size_t>(i)].get(), st), gpu);
        issue(shape, false);
        P2P_CUDA(cudaEventRecord(b[static_cast<std::size_t>(i)].get(), st), gpu);
      }
    });
    rc_.boot().barrier();  // every rank's work is queued: start them together
    *release_ = gen;
    rc_.wait(what);
    std::vector<double> mine;
    for (int i = 0; i < spec.iters; ++i)
      mine.push_back(elapsed_ms(a[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)]) * 1e6);
    return mine;
  }

  // Every rank's figures, exchanged: the spans averaged over the ranks (nccl-tests -a 1),
  // each iteration per rank and averaged, the first wrong output of any rank.
  CollectiveResult gather(const CollectiveSpec& spec, const Mine& m) {
    const std::vector<double>& mine = m.per_iteration_ns;
    std::string packed(reinterpret_cast<const char*>(&m.first_bad), sizeof m.first_bad);
    packed.append(reinterpret_cast<const char*>(&m.span_ns), sizeof m.span_ns);
    packed.append(reinterpret_cast<const char*>(&m.span_in_place_ns), sizeof m.span_in_place_ns);
    packed.append(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(double));
    const auto all = rc_.boot().allgather(packed);
    const std::size_t head = sizeof m.first_bad + 2 * sizeof(double);

    CollectiveResult res;
    res.elapsed_ns.assign(static_cast<std::size_t>(spec.iters), 0.0);
    res.by_rank_ns.assign(static_cast<std::size_t>(rc_.size()), {});
    double ip_sum = 0;
    bool ip_all = true;
    for (int r = 0; r < rc_.size(); ++r) {
      const std::string& p = all[static_cast<std::size_t>(r)];
      if (p.size() != head + mine.size() * sizeof(double))
        throw Error(fmt::format("bench nccl: rank {} sent {} bytes of results, expected {}: the ranks run different "
                                "p2pscope builds; run the same binary on every rank",
                                r, p.size(), head + mine.size() * sizeof(double)));
      std::int64_t rb = -1;
      std::memcpy(&rb, p.data(), sizeof rb);
      double sp = 0, sp_ip = 0;
      std::memcpy(&sp, p.data() + sizeof rb, sizeof sp);
      std::memcpy(&sp_ip, p.data() + sizeof rb + sizeof sp, sizeof sp_ip);
      res.span_ns += sp / rc_.size();  // nccl-tests averages the ranks' times (-a 1)
      ip_sum += sp_ip / rc_.size();
      ip_all = ip_all && sp_ip >= 0;
      if (rb >= 0 && res.first_bad < 0) res.first_bad = rb, res.bad_rank = r;
      for (std::size_t i = 0; i < mine.size(); ++i) {
        double v = 0;
        std::memcpy(&v, p.data() + head + i * sizeof v, sizeof v);
        res.by_rank_ns[static_cast<std::size_t>(r)].push_back(v);
        res.elapsed_ns[i] += v / rc_.size();
      }
    }
    res.span_in_place_ns = ip_all ? ip_sum : -1.0;
    res.held_start = m.hold;
    return res;
  }

  nccl::RankComm rc_;  // first: the rest is made on its GPU; last to go
  PinnedBuffer flag_;
  volatile int* release_ = nullptr;
  int generation_ = 0;
  DeviceBuffer in_, out_;
  std::uint64_t held_bytes_ = 0;
};

}  // namespace

std::unique_ptr<CollectiveRanks> make_collective_ranks(std::shared_ptr<Bootstrap> boot, int rank_device) {
  return std::make_unique<NcclCollectiveRanks>(std::move(boot), rank_device);
}

}  // namespace p2pscope::bench
