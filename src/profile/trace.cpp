#include "profile/trace.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::profile {
namespace {
constexpr int kPid = 1;
constexpr int kHostTid = 0;
int gpu_tid(int device) { return 1 + device; }

nlohmann::json thread_name(int tid, const std::string& name) {
  return {{"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}};
}
}  // namespace

nlohmann::json make_trace(const Plan& plan, const std::vector<LogRow>& rows, const std::map<int, ClockMap>& device_to_host,
                          const std::function<int(int, int)>& clock_device, const std::map<int, std::string>& unaligned,
                          double single_stamp_error_ns) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"pid", kPid}, {"name", "process_name"}, {"args", {{"name", "p2pscope profile"}}}});
  events.push_back(thread_name(kHostTid, "host (CLOCK_MONOTONIC)"));
  for (const auto& [dev, map] : device_to_host)
    if (map.ok())
      events.push_back(thread_name(gpu_tid(dev), fmt::format("GPU {} (global timer, +-{:.0f} ns; copies it issues)", dev,
                                                             map.ops_bound_ns > 0 ? map.ops_bound_ns : map.uncertainty_max_ns())));
  for (const auto& [dev, why] : unaligned)
    events.push_back(thread_name(gpu_tid(dev), fmt::format("GPU {} UNALIGNED ({}): durations only", dev, why)));

  std::int64_t origin = 0;
  if (!rows.empty())
    origin = std::min_element(rows.begin(), rows.end(), [](const LogRow& a, const LogRow& b) {
               return a.ts_start_ns < b.ts_start_ns;
             })->ts_start_ns;
  // An unaligned GPU's first stamp, pinned to the origin.
  std::map<int, std::int64_t> unaligned_first;
  for (const auto& r : rows) {
    const int dev = clock_device(r.src, r.dst);
    if (r.gpu_ts_start_ns < 0 || !unaligned.count(dev)) continue;
    auto [it, fresh] = unaligned_first.emplace(dev, r.gpu_ts_start_ns);
    if (!fresh) it->second = std::min(it->second, r.gpu_ts_start_ns);
  }
  for (const auto& r : rows) {
    if (r.config_id < 0 || static_cast<std::size_t>(r.config_id) >= plan.configs.size()) continue;
    const Config& c = plan.configs[static_cast<std::size_t>(r.config_id)];
    // The seed's event name, unchanged for batches (tools match it); args carry the batch.
    const std::string name = event_name(c, r.repetition);
    nlohmann::json args = {{"config_id", c.id}, {"src", c.src}, {"dst", c.dst}, {"size_bytes", c.size_bytes},
                           {"repetition", r.repetition}, {"backend", c.backend}, {"batch", r.batch},
                           {"timing", r.timing}, {"per_transfer_ns", r.per_transfer_ns()}};
    if (!std::isnan(r.gpu_duration_ns)) args["gpu_duration_ns"] = r.gpu_duration_ns;
    events.push_back({{"name", name}, {"cat", "p2p"}, {"ph", "X"}, {"pid", kPid}, {"tid", kHostTid},
                      {"ts", static_cast<double>(r.ts_start_ns - origin) / 1e3},
                      {"dur", static_cast<double>(r.ts_end_ns - r.ts_start_ns) / 1e3}, {"args", args}});
    if (r.gpu_ts_start_ns < 0 || r.gpu_ts_end_ns < r.gpu_ts_start_ns) continue;
    const int dev = clock_device(r.src, r.dst);
    double start = 0, end = 0;
    const auto fit = device_to_host.find(dev);
    if (fit != device_to_host.end() && fit->second.ok()) {
      start = fit->second.host_of_device(r.ts_start_ns, r.gpu_ts_start_ns) - static_cast<double>(origin);
      end = fit->second.host_of_device(r.ts_start_ns, r.gpu_ts_end_ns) - static_cast<double>(origin);
      args["offset_uncertainty_ns"] = fit->second.at(r.ts_start_ns).uncertainty_ns();
      if (r.timing == "single") args["stamp_error_ns"] = single_stamp_error_ns;
    } else if (unaligned_first.count(dev)) {
      start = static_cast<double>(r.gpu_ts_start_ns - unaligned_first[dev]);
      end = static_cast<double>(r.gpu_ts_end_ns - unaligned_first[dev]);
      args["aligned"] = false;
    } else {
      continue;
    }
    events.push_back({{"name", name}, {"cat", "p2p_gpu"}, {"ph", "X"}, {"pid", kPid}, {"tid", gpu_tid(dev)},
                      {"ts", start / 1e3}, {"dur", (end - start) / 1e3}, {"args", args}});
  }
  nlohmann::json fits = nlohmann::json::object();
  for (const auto& [dev, m] : device_to_host)
    if (m.ok())
      fits[std::to_string(dev)] = {{"pieces", m.pieces.size()}, {"ppm_first", m.pieces.front().fit.ppm()},
                                   {"ppm_last", m.pieces.back().fit.ppm()},
                                   {"offset_uncertainty_ns_max", m.uncertainty_max_ns()}};
  nlohmann::json unal = nlohmann::json::object();
  for (const auto& [dev, why] : unaligned) unal[std::to_string(dev)] = why;
  return {{"traceEvents", events},
          {"displayTimeUnit", "ns"},
          {"otherData", {{"host_origin_ns", origin}, {"clock", "CLOCK_MONOTONIC"}, {"device_to_host_fits", fits},
                         {"unaligned_devices", unal}}}};
}

void write_trace(const std::string& path, const nlohmann::json& trace) {
  // Temporary file and rename: a link planted at trace.json is replaced, not written through.
  write_file_atomic(path, out::dump_json(trace) + "\n", Replace::allow);
}

}  // namespace p2pscope::profile
