// Records -> the figures the statistics judge, and the keys that identify a task.
#include <algorithm>

#include <fmt/format.h>

#include "survey/survey.hpp"

namespace p2pscope::survey {
// Figures are compared within one class: links whose slower end has the same speed.
std::string link_class_of(const std::vector<HostInfo>& hosts, const std::vector<Rail>& rails, int a, int b, int rail) {
  const auto speed = [&](int h, int peer) {
    return rail >= 0 && static_cast<std::size_t>(rail) < rails.size() ? rail_nic(hosts, rails, h, peer, rail).speed_mbps
                                                                     : -1LL;
  };
  const long long s = std::min(speed(a, b), speed(b, a));
  return s > 0 ? fmt::format("NIC {} Mb/s", s) : "NIC of unknown speed";
}

std::vector<Figure> figures_of(const std::vector<Record>& records, const std::vector<HostInfo>& hosts,
                               const std::vector<Rail>& rails_in) {
  const std::vector<Rail> rails = rails_in.empty() && !hosts.empty() ? identity_rails(hosts.front().nics.size()) : rails_in;
  std::vector<Figure> out;
  for (const Record& r : records) {
    if (!r.failure.empty()) continue;  // a failed session's rounds are not a link's figure
    if (r.step == "local") {
      out.push_back({Metric::bandwidth, r.pass, r.server, r.server, -1, kLocalClass, r.c2s_bytes_per_s});
      continue;
    }
    if (r.step == "gpu" && r.size_bytes > 0) continue;  // --sizes: the campaign's points, not judged
    if (r.step == "gpu") {
      out.push_back({Metric::bandwidth, r.pass, r.server, r.server, -1,
                     fmt::format("{}{} {}->{}", kDevicePairPrefix, r.backend, r.dev_src, r.dev_dst), r.c2s_bytes_per_s,
                     r.dev_src, r.dev_dst});
      continue;
    }
    // A flow of a group shares its NICs with the group's other flows: its own class.
    // The second pass is its own class: its suspects, their good partners and the
    // controls beside them were measured at other moments than the first pass.
    const std::string cls = link_class_of(hosts, rails, r.server, r.client, r.rail) +
                            (r.group > 2 ? fmt::format(", in groups of {}", r.group) : "") +
                            (r.pass == 2 ? " (second pass)" : "");
    if (r.step == "bw") {
      out.push_back({Metric::bandwidth, r.pass, r.client, r.server, r.rail, cls, r.c2s_bytes_per_s});
      out.push_back({Metric::bandwidth, r.pass, r.server, r.client, r.rail, cls, r.s2c_bytes_per_s});
    } else if (r.step == "lat") {  // "size" records (--sizes) are the campaign's points, not judged
      // A latency pair is measured again alone, one at a time: against the first pass.
      out.push_back({Metric::latency, r.pass, std::min(r.server, r.client), std::max(r.server, r.client), r.rail,
                     link_class_of(hosts, rails, r.server, r.client, r.rail), r.latency_ns});
    }
  }
  return out;
}

std::string task_key(const Record& r, const std::vector<HostInfo>& hosts) {
  const auto name = [&](int h) {
    return h >= 0 && static_cast<std::size_t>(h) < hosts.size() ? hosts[static_cast<std::size_t>(h)].host
                                                                : std::to_string(h);
  };
  // A gpu task (one per host) gives a record per device pair, all under the task's key.
  // A size task (--sizes) is one per link and size.
  const std::string key = fmt::format("{}:{}:{}:{}:{}:{}", r.pass, r.round, r.step, name(r.server), name(r.client), r.rail);
  return r.step == "size" ? fmt::format("{}:{}", key, r.size_bytes) : key;
}

}  // namespace p2pscope::survey
