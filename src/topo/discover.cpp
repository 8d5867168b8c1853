// discover(): runs the steps in dependency order (NUMA before PCI inference, PCI
// before NICs/RDMA/GPUs, /proc/interrupts before NICs) and collects warnings.
#include "topo/detail.hpp"

namespace p2pscope::topo {

const Nic* Topology::find_nic(const std::string& name) const {
  for (const auto& n : nics)
    if (n.name == name) return &n;
  return nullptr;
}

const PciDevice* Topology::find_pci(const std::string& address) const {
  for (const auto& p : pci)
    if (p.address == address) return &p;
  return nullptr;
}

int Topology::numa_of_cpu(int cpu) const {
  for (const auto& c : cpus)
    if (c.id == cpu) return c.numa;
  return -1;
}

Topology discover(const FsRoot& fs, const DiscoverOptions& opts) {
  Topology t;
  t.hostname = detail::read_text(fs, "/proc/sys/kernel/hostname");
  detail::discover_cpus(fs, t);
  if (t.cpus.empty()) t.warnings.push_back("no CPUs found under /sys/devices/system/cpu: CPU facts unknown");
  detail::discover_pci(fs, t);
  // Many VMs write numa_node -1; with a single node every device is on it (as
  // nvidia-smi reports "NUMA Affinity 0" there).
  if (t.numa_nodes.size() == 1)
    for (auto& p : t.pci)
      if (p.numa < 0) p.numa = t.numa_nodes[0].id;

  if (const auto text = fs.read("/proc/interrupts")) {
    t.interrupts = parse_interrupts(*text);
    if (t.interrupts.malformed_lines > 0)
      t.warnings.push_back(std::to_string(t.interrupts.malformed_lines) + " malformed /proc/interrupts line(s) skipped");
  } else {
    t.warnings.push_back("/proc/interrupts unreadable: IRQ counts unknown");
  }
  detail::discover_nics(fs, t);
  detail::discover_rdma(fs, t);
  detail::discover_gpus(t);
  if (opts.use_nvml && fs.is_live()) detail::add_nvml_facts(t);
  if (!fs.is_live()) detail::add_captured_gpu_facts(fs, t);
  if (t.gpus.size() > 1 && t.gpu_links_source.empty())
    t.warnings.push_back(fs.is_live() ? "NVLinks unknown (NVML not used): GPU-GPU links shown as '?'"
                                      : "GPU-GPU links unknown (not in capture): sysfs cannot show NVLink; capture with "
                                        "tools/capture-fsroot.sh on a machine with nvidia-smi");
  return t;
}

}  // namespace p2pscope::topo
