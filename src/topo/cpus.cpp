// CPUs (online list, core, package, thread siblings) and NUMA nodes with their cpulists.
#include <algorithm>
#include <map>
#include <string>

#include "topo/detail.hpp"

namespace p2pscope::topo::detail {
namespace {
const std::string kCpuDir = "/sys/devices/system/cpu";
const std::string kNodeDir = "/sys/devices/system/node";

// CPU ids: the online list, else the cpuN directories (the online file can be
// missing from a partial capture).
std::vector<int> cpu_ids(const FsRoot& fs) {
  if (auto online = read_cpulist(fs, kCpuDir + "/online")) return *online;
  std::vector<int> ids;
  for (const auto& e : fs.list(kCpuDir))
    if (e.compare(0, 3, "cpu") == 0)
      if (const auto id = parse_id(std::string_view(e).substr(3))) ids.push_back(*id);
  std::sort(ids.begin(), ids.end());
  return ids;
}
}  // namespace

void discover_cpus(const FsRoot& fs, Topology& t) {
  // NUMA nodes first: a CPU's node comes from the node cpulists.
  std::map<int, int> node_of;
  for (const auto& e : fs.list(kNodeDir)) {
    const auto id = e.compare(0, 4, "node") == 0 ? parse_id(std::string_view(e).substr(4)) : std::nullopt;
    if (!id) continue;
    NumaNode n;
    n.id = *id;
    n.cpus = read_cpulist(fs, kNodeDir + "/" + e + "/cpulist").value_or(std::vector<int>{});
    for (int c : n.cpus) node_of[c] = n.id;
    t.numa_nodes.push_back(std::move(n));
  }
  std::sort(t.numa_nodes.begin(), t.numa_nodes.end(), [](const auto& a, const auto& b) { return a.id < b.id; });

  for (int id : cpu_ids(fs)) {
    Cpu c;
    c.id = id;
    const std::string top = kCpuDir + "/cpu" + std::to_string(id) + "/topology/";
    c.core = static_cast<int>(read_int_or(fs, top + "core_id"));
    c.package = static_cast<int>(read_int_or(fs, top + "physical_package_id"));
    c.siblings = read_cpulist(fs, top + "thread_siblings_list").value_or(std::vector<int>{});
    if (auto it = node_of.find(id); it != node_of.end()) c.numa = it->second;
    t.cpus.push_back(std::move(c));
  }
}

}  // namespace p2pscope::topo::detail
