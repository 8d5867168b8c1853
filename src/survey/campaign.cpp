// The survey's links as a campaign's link models (campaign.hpp).
#include "survey/campaign.hpp"

#include <algorithm>
#include <map>
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
      for (const auto& [size, ns] : by_size) {
        if (!(ns > 0)) continue;
        m.sizes.push_back(static_cast<double>(size));
        m.median_ns.push_back(ns);
        m.bytes_per_s.push_back(static_cast<double>(size) / ns * 1e9);
      }
      if (m.sizes.size() < 2) continue;
      analyze::finish_link_model(m);
      out.push_back(std::move(m));
    }
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
  for (const auto& m : links) j["links"].push_back(analyze::link_model_json(m));
  return j;
}

}  // namespace p2pscope::survey
