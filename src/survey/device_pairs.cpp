#include "survey/device_pairs.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "bench/sweep.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"

namespace p2pscope::survey {

std::string device_backend(const std::string& requested, std::string& why) {
  if (requested == "none") {
    why = "not asked (--gpu-backend none)";
    return "";
  }
  if (requested != "auto") return requested;
  const gpu::RuntimeInfo info = gpu::runtime_info();
  if (info.device_count >= 2) return "ce";
  if (info.device_count == 1) {
    why = "one GPU: no device pair inside the host";
    return "";
  }
  return "host";  // no GPU: host memory between NUMA nodes (two buffers on one node)
}

std::vector<Record> measure_device_pairs(const Record& base, const Options& o) {
  std::string why;
  const std::string name = device_backend(o.gpu_backend, why);
  if (name.empty()) return {};
  Record failed = base;
  failed.backend = name;
  try {
    auto b = bench::make_backend(name, {});
    if (b->device_count() < 2) return {};
    bench::SweepSpec spec;
    spec.mode = bench::Mode::unidirectional;
    // Host copies run at memory speed on CPUs the links share: a smaller buffer, the
    // same number of samples.
    const std::uint64_t cap = name == "host" ? 64ull << 20 : ~std::uint64_t{0};
    const std::uint64_t judged = std::min(o.gpu_size, cap);
    // --sizes: every pair at each size too (up to the cap), the campaign's points inside
    // the hosts beside the links' (campaign.cpp): records with size_bytes, not judged.
    std::set<std::uint64_t> sizes{judged};
    for (std::uint64_t s : o.sizes)
      if (s <= cap) sizes.insert(s);
    spec.sizes.assign(sizes.begin(), sizes.end());
    spec.iters = std::max(3, o.gpu_iters);
    spec.warmup = 2;
    const bench::SweepResult res = bench::run_sweep(*b, spec);
    std::vector<Record> out;
    for (const bench::SweepRow& row : res.rows) {
      Record r = base;
      r.backend = name;
      r.dev_src = row.src, r.dev_dst = row.dst;
      if (!row.support.ok) continue;  // a pair the backend cannot run (no peer access) is no figure
      if (row.first_bad >= 0) r.failure = fmt::format("device {} -> {}: the copied data was wrong", row.src, row.dst);
      if (o.sizes.end() != std::find(o.sizes.begin(), o.sizes.end(), row.bytes)) {  // a point: one copy's time
        Record point = r;
        point.size_bytes = row.bytes;
        for (double ns : row.samples_ns)
          if (ns > 0) point.latency_ns.push_back(ns);
        out.push_back(std::move(point));
      }
      if (row.bytes != judged) continue;
      for (double ns : row.samples_ns)
        if (ns > 0) r.c2s_bytes_per_s.push_back(static_cast<double>(row.bytes) / ns * 1e9);
      out.push_back(std::move(r));
    }
    if (!res.stopped.empty() && out.empty()) {
      failed.failure = "device pairs: " + res.stopped;
      return {failed};
    }
    return out;
  } catch (const std::exception& e) {
    failed.failure = fmt::format("device pairs ({}): {}", name, e.what());
    return {failed};
  }
}

}  // namespace p2pscope::survey
