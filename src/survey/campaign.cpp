// The survey's links as a campaign's link models (campaign.hpp).
#include "survey/campaign.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/stats.hpp"

namespace p2pscope::survey {

std::string rail_backend(const Result& r, int rail) {
  const std::string transport = r.transport == "tcp" ? "tcp" : "net";
  const std::string label = rail >= 0 && static_cast<std::size_t>(rail) < r.names.rails.size()
                                ? r.names.rails[static_cast<std::size_t>(rail)]
                                : std::to_string(rail);
  return transport + " " + label;
}

namespace {

// A link model from one pair's points (size -> one-way ns); false when under two sizes.
bool fit_points(analyze::LinkModel& m, const std::map<std::uint64_t, double>& by_size) {
  for (const auto& [size, ns] : by_size) {
    if (!(ns > 0)) continue;
    m.sizes.push_back(static_cast<double>(size));
    m.median_ns.push_back(ns);
    m.bytes_per_s.push_back(static_cast<double>(size) / ns * 1e9);
  }
  if (m.sizes.size() < 2) return false;
  analyze::finish_link_model(m);
  return true;
}

// The device pairs' points: (host, src device, dst device) -> size -> one copy's median ns,
// and the backend that copied them.
struct DevicePoints {
  std::map<std::tuple<int, int, int>, std::map<std::uint64_t, double>> points;
  std::string backend;
  int devices = 0;  // per host: the highest device index + 1 (0: no points)
};

DevicePoints device_points(const Result& r) {
  DevicePoints d;
  for (const Record& rec : r.records) {
    if (rec.step != "gpu" || rec.size_bytes == 0 || rec.pass != 1 || !rec.failure.empty() || rec.latency_ns.empty() ||
        rec.dev_src < 0 || rec.dev_dst < 0)
      continue;
    d.points[{rec.server, rec.dev_src, rec.dev_dst}].emplace(rec.size_bytes, median(rec.latency_ns));
    d.backend = rec.backend;
    d.devices = std::max({d.devices, rec.dev_src + 1, rec.dev_dst + 1});
  }
  return d;
}

}  // namespace

std::string device_backend_label(const std::string& rail_backend, const std::string& device_backend) {
  return rail_backend + " + " + device_backend;
}

std::vector<analyze::LinkModel> link_models(const Result& r) {
  // (rail, low, high) -> size -> one-way median ns; the first completed record of each
  // (a resumed survey may hold one twice).
  std::map<std::tuple<int, int, int>, std::map<std::uint64_t, double>> points;
  for (const Record& rec : r.records) {
    if (rec.step != "size" || rec.pass != 1 || !rec.failure.empty() || rec.latency_ns.empty() || rec.size_bytes == 0)
      continue;
    auto& by_size = points[{rec.rail, std::min(rec.server, rec.client), std::max(rec.server, rec.client)}];
    by_size.emplace(rec.size_bytes, median(rec.latency_ns));
  }
  std::vector<analyze::LinkModel> out;
  for (const auto& [key, by_size] : points) {
    if (by_size.size() < 2) continue;
    const auto [rail, low, high] = key;
    for (const auto& [src, dst] : {std::pair{low, high}, std::pair{high, low}}) {
      analyze::LinkModel m;
      m.backend = rail_backend(r, rail);
      m.src = src, m.dst = dst;
      m.link_class = link_class_of(r.hosts, r.rails, src, dst, rail);
      if (fit_points(m, by_size)) out.push_back(std::move(m));
    }
  }
  // With the device pairs' points too, each rail is also a network of two dimensions:
  // NPU h x G + d is device d of host h. Inside a host its measured device pairs; across
  // hosts every device pair takes its hosts' link on that rail (the device's own hop to
  // the NIC is not measured apart: GPU d is taken to reach the rail's NIC at the link's
  // figures). export's grid check then finds groups of G consecutive NPUs.
  const DevicePoints dev = device_points(r);
  const int g = dev.devices;
  if (g >= 2) {
    std::vector<analyze::LinkModel> grid;
    for (const auto& m : out)
      for (int a = 0; a < g; ++a)
        for (int b = 0; b < g; ++b) {
          analyze::LinkModel c = m;
          c.backend = device_backend_label(m.backend, dev.backend);
          c.src = m.src * g + a, c.dst = m.dst * g + b;
          grid.push_back(std::move(c));
        }
    std::set<std::string> rails;
    for (const auto& m : out) rails.insert(m.backend);
    for (const std::string& rail : rails)
      for (const auto& [key, by_size] : dev.points) {
        const auto [host, a, b] = key;
        analyze::LinkModel m;
        m.backend = device_backend_label(rail, dev.backend);
        m.src = host * g + a, m.dst = host * g + b;
        m.link_class = "device pair (" + dev.backend + ")";
        if (fit_points(m, by_size)) grid.push_back(std::move(m));
      }
    out.insert(out.end(), grid.begin(), grid.end());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.backend, a.src, a.dst) < std::tie(b.backend, b.src, b.dst);
  });
  return out;
}

nlohmann::json links_json(const Result& r, const std::vector<analyze::LinkModel>& links) {
  nlohmann::json hosts = nlohmann::json::array();
  for (const std::string& h : r.names.hosts) hosts.push_back(h);
  nlohmann::json j = {{"schema_version", 1},
                      {"kind", "p2pscope_link_models"},
                      {"doc", "docs/link-model.md"},
                      {"model", "t(n) = alpha_ns + n / beta_bytes_per_s * 1e9 (ns); n in bytes"},
                      {"time_source", "host"},
                      {"source", {{"kind", "p2pscope_survey"},
                                  {"what", "each link's ping-pongs of each --sizes size, one-way time = median round "
                                           "trip / 2; both directions of a pair carry the same points"},
                                  {"transport", r.transport},
                                  {"npu_hosts", hosts}}},
                      {"links", nlohmann::json::array()}};
  const DevicePoints dev = device_points(r);
  if (dev.devices >= 2) {  // the two-dimensional backends' NPU ids
    j["source"]["npu_devices_per_host"] = dev.devices;
    j["source"]["npu_ids"] = fmt::format("in backends \"<rail> + {}\": NPU h x {} + d is device d of host h (npu_hosts[h]); "
                                         "across hosts each device pair takes its hosts' link on the rail",
                                         dev.backend, dev.devices);
  }
  for (const auto& m : links) j["links"].push_back(analyze::link_model_json(m));
  return j;
}

}  // namespace p2pscope::survey
