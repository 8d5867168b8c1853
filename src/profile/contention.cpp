// Contention patterns: k flows at once, one thread and one backend instance per flow,
// started together behind a barrier for every repetition; each flow timed on its own.
#include "p2pscope/contention.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <tuple>
#include <thread>

#include <fmt/format.h>

#include "p2pscope/units.hpp"

#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/stats.hpp"

namespace p2pscope::profile {
std::vector<std::string> flow_pattern_names() {
  std::vector<std::string> out;
  for (const auto& row : kFlowPatternNames) out.emplace_back(row.name);
  return out;
}
std::string to_string(FlowPattern p) { return enum_name(kFlowPatternNames, p); }
FlowPattern parse_flow_pattern(const std::string& text) { return parse_enum(kFlowPatternNames, text, "--pattern"); }

std::vector<std::vector<Flow>> pattern_rounds(FlowPattern pattern, const std::vector<int>& devices, int root, int shift) {
  const int p = static_cast<int>(devices.size());
  if (p < 2) throw UsageError(fmt::format("--pattern {} needs at least 2 devices, not {}", to_string(pattern), p));
  if (root < 0) root = devices.front();
  if ((pattern == FlowPattern::fan_in || pattern == FlowPattern::fan_out) &&
      std::find(devices.begin(), devices.end(), root) == devices.end())
    throw UsageError(fmt::format("--root {} is not one of the devices", root));
  std::vector<std::vector<Flow>> rounds;
  std::vector<Flow> all;
  switch (pattern) {
    case FlowPattern::pairs:
      for (int s : devices)
        for (int d : devices)
          if (s != d) rounds.push_back({{s, d}});
      return rounds;
    case FlowPattern::fan_in:
      for (int s : devices)
        if (s != root) all.push_back({s, root});
      break;
    case FlowPattern::fan_out:
      for (int d : devices)
        if (d != root) all.push_back({root, d});
      break;
    case FlowPattern::ring_shift: {
      const int k = ((shift % p) + p) % p;
      if (k == 0) throw UsageError(fmt::format("--shift {} is a multiple of the {} devices: every flow would be i -> i", shift, p));
      for (int i = 0; i < p; ++i) all.push_back({devices[static_cast<std::size_t>(i)], devices[static_cast<std::size_t>((i + k) % p)]});
      break;
    }
    case FlowPattern::all_to_all:
      for (int s : devices)
        for (int d : devices)
          if (s != d) all.push_back({s, d});
      break;
  }
  rounds.push_back(all);
  return rounds;
}

namespace {

using MakeBackend = std::function<std::unique_ptr<bench::Backend>(const std::string&)>;
using ContentionRounds = std::vector<std::pair<std::vector<Flow>, bool>>;  // flows, together

// Every flow of a contended round first runs alone: the isolated reference, on the
// same buffers and threads, right before it is contended.
ContentionRounds contention_rounds(const ContentionSpec& spec, const std::vector<int>& devices) {
  ContentionRounds rounds;
  for (const auto& round : pattern_rounds(spec.pattern, devices, spec.root, spec.shift)) {
    if (round.size() > 1)
      for (const auto& f : round) rounds.push_back({{f}, false});
    rounds.push_back({round, round.size() > 1});
  }
  return rounds;
}

// One backend per flow, each prepared for its one-way copy; false: stopped meanwhile.
bool prepare_flow_backends(const ContentionSpec& spec, const MakeBackend& make, const std::vector<Flow>& flows,
                           std::uint64_t max_bytes, std::vector<std::unique_ptr<bench::Backend>>& be) {
  for (const auto& f : flows) {
    be.push_back(make(spec.backend));
    const auto sup = be.back()->support(f.src, f.dst);
    if (!sup.ok) throw UsageError(fmt::format("{} cannot copy {} -> {}: {}", spec.backend, f.src, f.dst, sup.reason));
    bench::PrepareSpec prep;
    prep.devices = {f.src, f.dst};
    prep.max_bytes = max_bytes;
    prep.copies = {{f.src, f.dst}};  // one way: a source and a destination buffer
    prep.stop = spec.stop;
    if (!be.back()->prepare_for(prep)) return false;
  }
  return true;
}

// One timed repetition of round `ri`: a sample per flow, each with the round's
// aggregate (every flow's bytes over the span from the first start to the last end).
void record_flow_samples(ContentionResult& r, const ContentionRounds& rounds, std::size_t ri, int rep,
                         std::uint64_t size, const std::vector<bench::OpTiming>& t) {
  const auto& flows = rounds[ri].first;
  const std::size_t k = flows.size();
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& x : t) first = std::min(first, x.host_start_ns), last = std::max(last, x.host_end_ns);
  const double agg = last > first ? static_cast<double>(size) * static_cast<double>(k) / static_cast<double>(last - first) * 1e9 : 0;
  for (std::size_t i = 0; i < k; ++i) {
    FlowSample s;
    s.round = static_cast<int>(ri);
    s.together = rounds[ri].second;
    s.repetition = rep;
    s.size_bytes = size;
    s.flows = static_cast<int>(k);
    s.src = flows[i].src;
    s.dst = flows[i].dst;
    s.ts_start_ns = t[i].host_start_ns;
    s.ts_end_ns = t[i].host_end_ns;
    s.device_timed = std::isfinite(t[i].device_duration_ns) && t[i].device_duration_ns > 0;
    s.duration_ns = s.device_timed ? t[i].device_duration_ns : static_cast<double>(t[i].host_end_ns - t[i].host_start_ns);
    s.aggregate_bytes_per_s = agg;
    r.samples.push_back(s);
  }
}

}  // namespace

ContentionResult run_contention(const ContentionSpec& spec) {
  ContentionResult r;
  const MakeBackend make = spec.make_backend ? spec.make_backend
                                             : [](const std::string& n) { return bench::make_backend(n); };
  std::vector<int> devices = spec.devices;
  {
    auto probe = make(spec.backend);
    if (devices.empty())
      for (int d = 0; d < probe->device_count(); ++d) devices.push_back(d);
    for (int d : devices) r.device_names.push_back(probe->device_name(d));
  }
  if (spec.sizes.empty()) throw UsageError("--sizes gave no sizes");
  const std::uint64_t max_bytes = *std::max_element(spec.sizes.begin(), spec.sizes.end());
  const ContentionRounds rounds = contention_rounds(spec, devices);
  const std::size_t total_reps = rounds.size() * spec.sizes.size() * static_cast<std::size_t>(std::max(0, spec.reps));
  std::size_t done_reps = 0;
  for (std::size_t ri = 0; ri < rounds.size(); ++ri) {
    const auto& flows = rounds[ri].first;
    const std::size_t k = flows.size();
    std::vector<std::unique_ptr<bench::Backend>> be;
    if (!prepare_flow_backends(spec, make, flows, max_bytes, be)) {
      r.interrupted = true;
      return r;
    }
    // Work handed to the flow threads: size, and a stop flag; each thread writes its slot.
    std::uint64_t bytes = 0;
    bool stop = false;
    std::vector<bench::OpTiming> t(k);
    std::vector<std::exception_ptr> err(k);
    std::barrier sync(static_cast<std::ptrdiff_t>(k + 1));
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < k; ++i)
      threads.emplace_back([&, i] {
        for (;;) {
          sync.arrive_and_wait();  // start
          if (stop) return;
          try {
            t[i] = be[i]->run_blocking(flows[i].src, flows[i].dst, bytes);
          } catch (...) {
            err[i] = std::current_exception();
          }
          sync.arrive_and_wait();  // done
        }
      });
    std::exception_ptr failed;
    for (const std::uint64_t size : spec.sizes) {
      for (int rep = -spec.warmup; rep < spec.reps && !failed; ++rep) {
        if (spec.stop && spec.stop->load()) {
          r.interrupted = true;
          break;
        }
        bytes = size;
        sync.arrive_and_wait();
        sync.arrive_and_wait();
        for (const auto& e : err)
          if (e && !failed) failed = e;
        if (failed || rep < 0) continue;
        record_flow_samples(r, rounds, ri, rep, size, t);
        if (spec.on_rep)
          spec.on_rep(++done_reps, total_reps,
                      fmt::format("round {}/{} ({} flow{}), {}", ri + 1, rounds.size(), k, k == 1 ? "" : "s",
                                  format_size(size)));
      }
      if (failed || r.interrupted) break;
    }
    stop = true;
    sync.arrive_and_wait();  // release the threads to see stop
    for (auto& th : threads) th.join();
    if (failed) std::rethrow_exception(failed);
    if (r.interrupted) break;
  }
  return r;
}

std::string contention_csv(const ContentionSpec& spec, const ContentionResult& r) {
  std::string o =
      "pattern,mode,round,repetition,size_bytes,flows,src,dst,ts_start_ns,ts_end_ns,duration_ns,time_source,bytes_per_s,"
      "aggregate_bytes_per_s\n";
  for (const auto& s : r.samples)
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.1f},{},{:.6g},{:.6g}\n", to_string(spec.pattern),
                     s.together ? "together" : "alone", s.round, s.repetition,
                     s.size_bytes, s.flows, s.src, s.dst, s.ts_start_ns, s.ts_end_ns, s.duration_ns,
                     s.device_timed ? "gpu" : "host",
                     s.duration_ns > 0 ? static_cast<double>(s.size_bytes) / s.duration_ns * 1e9 : 0.0,
                     s.aggregate_bytes_per_s);
  return o;
}

std::vector<ContentionRow> summarize_contention(const ContentionResult& r) {
  // (size, src, dst) -> durations alone and together, and the aggregates together
  std::map<std::tuple<std::uint64_t, int, int>, ContentionRow> rows;
  std::map<std::tuple<std::uint64_t, int, int>, std::vector<double>> alone, together, agg;
  for (const auto& s : r.samples) {
    const auto key = std::make_tuple(s.size_bytes, s.src, s.dst);
    auto& row = rows[key];
    row.size_bytes = s.size_bytes;
    row.src = s.src;
    row.dst = s.dst;
    if (s.together) {
      row.flows = s.flows;
      together[key].push_back(s.duration_ns);
      agg[key].push_back(s.aggregate_bytes_per_s);
    } else {
      alone[key].push_back(s.duration_ns);
    }
  }
  std::vector<ContentionRow> out;
  for (auto& [key, row] : rows) {
    const double n = static_cast<double>(row.size_bytes);
    row.alone_bytes_per_s = n / median(alone[key]) * 1e9;
    row.together_bytes_per_s = n / median(together[key]) * 1e9;
    row.aggregate_bytes_per_s = median(agg[key]);
    out.push_back(row);
  }
  return out;
}

}  // namespace p2pscope::profile
