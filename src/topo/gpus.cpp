// GPUs from the PCI list (vendor 0x10de, display class 0x03xxxx), numbered in PCI
// order, so the numbering needs no driver. NVML adds names, NVLinks, temperatures.
#include <cstdio>
#include <map>

#include "p2pscope/nvml.hpp"
#include "topo/detail.hpp"

namespace p2pscope::topo::detail {

void discover_gpus(Topology& t) {
  for (const auto& p : t.pci) {
    if (p.vendor != 0x10de || (p.class_code >> 16) != 0x03) continue;
    Gpu g;
    g.index = static_cast<int>(t.gpus.size());
    g.pci = p.address;
    g.numa = p.numa;
    g.device_id = p.device;
    char name[32];
    std::snprintf(name, sizeof name, "NVIDIA 0x%04x", p.device);
    g.name = name;
    t.gpus.push_back(std::move(g));
  }
  t.nvlinks.assign(t.gpus.size(), std::vector<int>(t.gpus.size(), 0));
}

void add_nvml_facts(Topology& t) {
  std::string why;
  const auto nvml = nvml::Nvml::load(&why);
  if (!nvml) {
    if (!t.gpus.empty()) t.warnings.push_back("NVML not usable (" + why + "): no NVLink counts, temperatures or clocks");
    return;
  }
  std::map<int, int> to_nvml;  // topology GPU index -> NVML index
  for (int i = 0; i < nvml->device_count(); ++i) {
    const auto info = nvml->info(i);
    for (auto& g : t.gpus) {
      if (g.pci != info.pci_bus_id) continue;
      to_nvml[g.index] = i;
      if (!info.name.empty()) g.name = info.name;
      if (!info.uuid.empty()) g.uuid = info.uuid;
      if (info.memory_bytes) g.memory_bytes = info.memory_bytes;
      const auto s = nvml->sample(i);
      g.temperature_c = s.temperature_c;
      g.sm_clock_mhz = s.sm_clock_mhz;
      g.mem_clock_mhz = s.mem_clock_mhz;
    }
  }
  for (const auto& [a, na] : to_nvml)
    for (const auto& [b, nb] : to_nvml)
      if (a != b) t.nvlinks[a][b] = std::max(0, nvml->nvlink_count(na, nb));
  if (!to_nvml.empty()) t.gpu_links_source = "NVML";
}

}  // namespace p2pscope::topo::detail
