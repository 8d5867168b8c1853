// Collective times from measured point-to-point link models. A schedule is a list of
// steps; in a step some pairs send at once, and the step lasts as long as its slowest
// link's model time for the bytes it carries (no contention between the pairs of a
// step: the isolated link's model, which is what the campaign measured).
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/simulate.hpp"
#include "p2pscope/text.hpp"
#include "simulate/astra_model.hpp"
#include "simulate/link_set.hpp"

namespace p2pscope::simulate {
namespace {

using Pairs = std::vector<std::pair<int, int>>;  // rank indices (into devices)

struct StepCost {
  double ns = 0;
  int src = -1, dst = -1;     // ranks of the slowest link
  bool extrapolated = false;  // a link's model used outside the sizes it was measured at
};

int ceil_log2(int p) {
  int r = 0;
  while ((1 << r) < p) ++r;
  return r;
}

// A prediction being priced step by step: the time and steps add up, and the costliest
// step is kept for the bottleneck.
struct Schedule {
  Prediction& r;
  int phases = 1;
  StepCost worst;
  void add(const StepCost& c, int times) {
    r.time_ns += c.ns * times;
    r.steps += times;
    r.extrapolated = r.extrapolated || c.extrapolated;
    if (c.ns > worst.ns || worst.src < 0) worst = c;
  }
  void whole(const StepCost& c, int steps) {  // a pipelined schedule priced as a whole
    r.time_ns = c.ns;
    r.steps = steps;
    r.extrapolated = c.extrapolated;
    worst = c;
  }
};

}  // namespace

struct Predictor::Impl {
  LinkSet set;
  std::string backend;
  std::vector<int> devices;
  std::vector<const analyze::LinkModel*> m;  // p x p, by rank; nullptr where never measured
  std::vector<bool> reversed;                // p x p: the model is the other direction's
  std::vector<std::string> notes;
  AstraPlan plan;                     // the dimensions export writes: the ring schedule follows them
  std::int64_t endpoint_delay_ns = 1;

  int p() const { return static_cast<int>(devices.size()); }

  const analyze::LinkModel& link(int i, int j) const {
    const auto* l = m[static_cast<std::size_t>(i * p() + j)];
    if (!l)
      throw UsageError(fmt::format("the schedule needs link {}->{}, which the campaign measured in neither direction; "
                                   "profile every pair of the GPUs (p2pscope profile measures all by default)",
                                   devices[static_cast<std::size_t>(i)], devices[static_cast<std::size_t>(j)]));
    return *l;
  }

  StepCost step(const Pairs& pairs, double bytes) const {
    StepCost c;
    bool extrapolated = false;
    for (const auto& [i, j] : pairs) {
      const auto& l = link(i, j);
      const double t = l.predict_ns(bytes);
      // 1 part in 1e9: S / p of a measured size S is that size, not beyond it
      extrapolated = extrapolated || l.sizes.empty() || bytes > l.sizes.back() * (1 + 1e-9) ||
                     bytes < l.sizes.front() * (1 - 1e-9);
      if (t > c.ns || c.src < 0) c = {t, i, j, false};
    }
    c.extrapolated = extrapolated;
    return c;
  }

  // A pipeline of `depth` hops carrying S in k chunks lasts (depth + k - 1) chunk steps;
  // k is the power of two (chunks of at least 1 byte) with the least time.
  StepCost pipeline(const Pairs& a, const Pairs& b, int depth, double bytes, int* steps) const {
    StepCost best;
    best.ns = INFINITY;
    for (double k = 1; k <= bytes && k <= (1 << 24); k *= 2) {
      StepCost s = step(a, bytes / k);
      if (!b.empty()) {
        const StepCost sb = step(b, bytes / k);
        const bool x = s.extrapolated || sb.extrapolated;
        if (sb.ns > s.ns) s = sb;
        s.extrapolated = x;
      }
      const double t = (depth + k - 1) * s.ns;
      if (t < best.ns) {
        best = {t, s.src, s.dst, s.extrapolated};
        *steps = depth + static_cast<int>(k) - 1;
      }
    }
    return best;
  }

  // The three schedules predict() prices: S bytes of `op` over all ranks.
  void ring_per_dimension(Collective op, double S, Schedule& sch) const;
  void ring(Collective op, double S, Schedule& sch) const;
  void tree(Collective op, double S, Schedule& sch) const;

  std::string name(const StepCost& c) const {
    if (c.src < 0) return "";
    const auto& l = link(c.src, c.dst);
    return fmt::format("{}->{} ({}{})", devices[static_cast<std::size_t>(c.src)], devices[static_cast<std::size_t>(c.dst)],
                       l.link_class, reversed[static_cast<std::size_t>(c.src * p() + c.dst)] ? ", reverse model" : "");
  }
};

Predictor::Predictor(const std::string& dir, const std::string& backend, AstraBackend astra, std::int64_t endpoint_delay_ns)
    : impl_(std::make_unique<Impl>()) {
  check_endpoint_delay(endpoint_delay_ns);
  auto& s = *impl_;
  s.endpoint_delay_ns = endpoint_delay_ns;
  s.set = read_link_set(dir);
  s.notes = s.set.notes;
  s.backend = choose_backend(s.set, backend, &s.notes);
  std::map<std::pair<int, int>, const analyze::LinkModel*> by_pair;
  for (const auto& l : s.set.links) {
    if (l.backend != s.backend) continue;
    by_pair[{l.src, l.dst}] = &l;
    for (int d : {l.src, l.dst})
      if (std::find(s.devices.begin(), s.devices.end(), d) == s.devices.end()) s.devices.push_back(d);
  }
  std::sort(s.devices.begin(), s.devices.end());
  if (s.devices.size() < 2)
    throw UsageError(fmt::format("{}: the {} links span {} device(s); a collective needs at least 2", dir, s.backend,
                                 s.devices.size()));
  const int p = s.p();
  s.m.assign(static_cast<std::size_t>(p * p), nullptr);
  s.reversed.assign(static_cast<std::size_t>(p * p), false);
  std::vector<std::string> assumed;
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j) {
      if (i == j) continue;
      const int a = s.devices[static_cast<std::size_t>(i)], b = s.devices[static_cast<std::size_t>(j)];
      const std::size_t k = static_cast<std::size_t>(i * p + j);
      if (const auto it = by_pair.find({a, b}); it != by_pair.end()) {
        s.m[k] = it->second;
      } else if (const auto rt = by_pair.find({b, a}); rt != by_pair.end()) {
        s.m[k] = rt->second;
        s.reversed[k] = true;
        assumed.push_back(fmt::format("{}->{}", a, b));
      }
    }
  s.plan = plan_astra(s.set, s.backend, astra);  // devices ascending, as s.devices
  for (auto& n : contention_notes(dir)) s.notes.push_back(std::move(n));
  if (!assumed.empty()) {
    s.notes.push_back("not measured, the reverse direction's model used: " + join(assumed));
  }
}

Predictor::~Predictor() = default;
const std::vector<int>& Predictor::devices() const { return impl_->devices; }
const std::string& Predictor::backend() const { return impl_->backend; }
const std::string& Predictor::time_source() const { return impl_->set.time_source; }
const std::vector<std::string>& Predictor::notes() const { return impl_->notes; }

std::vector<std::string> Predictor::assumptions(Algorithm a) const {
  const Impl& s = *impl_;
  std::vector<std::string> out = {
      "per step, every pair of the step sends at once and the step lasts as long as its slowest link's model "
      "time (links.json's recommended model per link: alpha-beta, two- or three-regime, as analyze chose it)",
      "no contention: each link runs as fast as it did alone in the campaign (shared switches, PCIe root ports "
      "and copy engines are not modelled)",
      "one channel, no overlap of steps, no reduction compute, Simple protocol: NCCL's LL / LL128 protocols "
      "(small messages) and its several channels are not modelled",
      "S as nccl-tests counts it: allreduce and broadcast S per rank; allgather S output; reducescatter S input; "
      "alltoall S sent per rank",
      fmt::format("endpoint delay {} ns charged as ASTRA-sim charges its system file's endpoint-delay: once per step "
                  "and once more per phase (`export --to astra-sim --endpoint-delay` writes the same value)",
                  s.endpoint_delay_ns),
      "sizes marked extrapolated put a link's model beyond the sizes the campaign measured",
      fmt::format("ranks in device order {}", [&] {
        return join(s.devices, ",", [](int d) { return std::to_string(d); });
      }())};
  if (a == Algorithm::ring && s.plan.dims.size() == 2)
    out.push_back(fmt::format(
        "ring as ASTRA-sim runs it on export's two dimensions ({} groups of {} consecutive ranks, {} inside, {} across; "
        "--astra-backend {}): allreduce a reduce-scatter ring in each group ({} - 1 steps of S/{}), an allreduce ring "
        "across the groups on S/{} (2({} - 1) steps of S/{}) and an all-gather ring in each group, 3 phases (checked "
        "against ASTRA-sim's binaries); reducescatter and allgather the same halves, 2 phases; alltoall pairwise and "
        "broadcast a chain over all ranks",
        s.plan.dims[1].npus, s.plan.dims[0].npus, s.plan.dims[0].cls, s.plan.dims[1].cls, to_string(s.plan.backend),
        s.plan.dims[0].npus, s.plan.dims[0].npus, s.plan.dims[0].npus, s.plan.dims[1].npus, s.p()));
  else if (a == Algorithm::ring)
    out.push_back(
        "ring over all ranks (the schedule ASTRA-sim runs on export's one dimension): allreduce 2(p-1) steps of S/p "
        "(reduce-scatter then all-gather), allgather and reducescatter (p-1) steps of S/p, rank i sending to i+1; "
        "alltoall pairwise, step k (1..p-1) rank i sending S/p to i+k; broadcast a pipelined chain from rank 0, "
        "(p-2+k) steps of S/k with the best power-of-two k");
  else
    out.push_back(
        "tree: allreduce and broadcast a binary tree (parent of rank i is (i-1)/2, depth floor(log2 p)), pipelined "
        "in k chunks (the best power of two): allreduce (2 depth + k - 1) steps up and down, broadcast "
        "(depth + k - 1); allgather recursive doubling and reducescatter recursive halving, ceil(log2 p) rounds "
        "of S/p x 2^r; alltoall Bruck, ceil(log2 p) rounds, round r sending the blocks whose index has bit r set");
  if (a == Algorithm::tree && (s.p() & (s.p() - 1)) != 0)
    out.push_back(fmt::format("{} ranks is not a power of two: recursive doubling / halving rounds skip the partners "
                              "that do not exist, an approximation", s.p()));
  return out;
}

// A ring per dimension, as ASTRA-sim runs one "ring" per dimension: NPU i = a0 + n0 a1.
void Predictor::Impl::ring_per_dimension(Collective op, double S, Schedule& sch) const {
  const int n0 = plan.dims[0].npus, n1 = plan.dims[1].npus;
  Pairs in0, in1;
  for (int i = 0; i < p(); ++i) {
    const int a0 = i % n0, a1 = i / n0;
    in0.emplace_back(i, a1 * n0 + (a0 + 1) % n0);
    in1.emplace_back(i, ((a1 + 1) % n1) * n0 + a0);
  }
  const StepCost inside = step(in0, S / n0), across = step(in1, S / p());
  if (op == Collective::allreduce) {
    sch.add(inside, n0 - 1);
    sch.add(across, 2 * (n1 - 1));
    sch.add(inside, n0 - 1);
    sch.phases = 3;
  } else {
    sch.add(inside, n0 - 1);
    sch.add(across, n1 - 1);
    sch.phases = 2;
  }
  sch.r.schedule = fmt::format("ring per dimension: {} x {}", n0, n1);
}

void Predictor::Impl::ring(Collective op, double S, Schedule& sch) const {
  const int np = p();
  const double chunk = S / np;
  Pairs ring, chain;
  for (int i = 0; i < np; ++i) ring.emplace_back(i, (i + 1) % np);
  for (int i = 0; i + 1 < np; ++i) chain.emplace_back(i, i + 1);
  sch.r.schedule = fmt::format("ring over {} ranks", np);
  switch (op) {
    case Collective::allreduce: sch.add(step(ring, chunk), 2 * (np - 1)); break;
    case Collective::allgather:
    case Collective::reducescatter: sch.add(step(ring, chunk), np - 1); break;
    case Collective::alltoall:
      for (int k = 1; k < np; ++k) {
        Pairs shift;
        for (int i = 0; i < np; ++i) shift.emplace_back(i, (i + k) % np);
        sch.add(step(shift, chunk), 1);
      }
      break;
    case Collective::broadcast: {
      int steps = 0;
      const StepCost c = pipeline(chain, {}, np - 1, S, &steps);
      sch.whole(c, steps);
      break;
    }
    case Collective::sendrecv:
      break;  // no schedule over the ranks: predict() refuses it first
  }
}

void Predictor::Impl::tree(Collective op, double S, Schedule& sch) const {
  const int np = p();
  const double chunk = S / np;
  Pairs up, down;
  for (int i = 1; i < np; ++i) {
    up.emplace_back(i, (i - 1) / 2);
    down.emplace_back((i - 1) / 2, i);
  }
  const int depth = static_cast<int>(std::floor(std::log2(np)));
  sch.r.schedule = fmt::format("tree over {} ranks", np);
  const int rounds = ceil_log2(np);
  switch (op) {
    case Collective::allreduce:
    case Collective::broadcast: {
      int steps = 0;
      const StepCost c = op == Collective::allreduce ? pipeline(up, down, 2 * depth, S, &steps)
                                                     : pipeline(down, {}, depth, S, &steps);
      sch.whole(c, steps);
      break;
    }
    case Collective::allgather:
    case Collective::reducescatter:
      for (int q = 0; q < rounds; ++q) {
        const int rr = op == Collective::allgather ? q : rounds - 1 - q;  // halving: the largest block first
        Pairs x;
        for (int i = 0; i < np; ++i)
          if ((i ^ (1 << rr)) < np) x.emplace_back(i, i ^ (1 << rr));
        sch.add(step(x, chunk * (1 << rr)), 1);
      }
      break;
    case Collective::alltoall:
      for (int q = 0; q < rounds; ++q) {
        int blocks = 0;
        for (int j = 1; j < np; ++j) blocks += (j >> q) & 1;
        Pairs x;
        for (int i = 0; i < np; ++i) x.emplace_back(i, (i + (1 << q)) % np);
        sch.add(step(x, chunk * blocks), 1);
      }
      break;
    case Collective::sendrecv:
      break;  // no schedule over the ranks: predict() refuses it first
  }
}

Prediction Predictor::predict(Collective op, Algorithm algo, std::uint64_t size_bytes) const {
  const Impl& s = *impl_;
  if (size_bytes == 0)
    throw UsageError("size 0: a collective of 0 bytes moves nothing and has no time to predict; give 1 byte or more");
  if (op == Collective::sendrecv)
    throw UsageError(
        "sendrecv: a pair of ranks, not a schedule over them; predict models allreduce, allgather, "
        "reducescatter, alltoall and broadcast");
  const int p = s.p();
  const double S = static_cast<double>(size_bytes);
  Prediction r;
  r.op = op;
  r.algorithm = algo;
  r.size_bytes = size_bytes;
  Schedule sch{r};
  const bool dims2 = s.plan.dims.size() == 2;
  if (algo == Algorithm::ring && dims2 &&
      (op == Collective::allreduce || op == Collective::allgather || op == Collective::reducescatter))
    s.ring_per_dimension(op, S, sch);
  else if (algo == Algorithm::ring)
    s.ring(op, S, sch);
  else
    s.tree(op, S, sch);
  r.endpoint_ns = static_cast<double>(s.endpoint_delay_ns) * (r.steps + sch.phases);
  r.time_ns += r.endpoint_ns;
  r.bottleneck = s.name(sch.worst);
  r.algbw_bytes_per_s = r.time_ns > 0 ? S / r.time_ns * 1e9 : 0;
  r.busbw_bytes_per_s = r.algbw_bytes_per_s * busbw_factor(op, p);
  return r;
}

PredictResult predict(const std::string& dir, const PredictOptions& o) {
  const Predictor pr(dir, o.backend, o.astra_backend, o.endpoint_delay_ns);
  PredictResult r;
  r.dir = dir;
  r.backend = pr.backend();
  r.time_source = pr.time_source();
  r.devices = pr.devices();
  r.assumptions = pr.assumptions(o.algorithm);
  r.notes = pr.notes();
  for (const Collective op : o.ops)
    for (const std::uint64_t n : o.sizes) r.rows.push_back(pr.predict(op, o.algorithm, n));
  return r;
}

}  // namespace p2pscope::simulate
