// PCI devices from /sys/bus/pci/devices: ids, NUMA, link, and the bridge chain read
// from the resolved /sys/devices path (pci0000:00/0000:00:01.0/0000:01:00.0/...).
#include <string>

#include "topo/detail.hpp"

namespace p2pscope::topo::detail {

void discover_pci(const FsRoot& fs, Topology& t) {
  const std::string bus = "/sys/bus/pci/devices/";
  for (const auto& addr : fs.list(bus)) {
    if (!is_pci_address(addr)) continue;
    const std::string dir = bus + addr + "/";
    PciDevice d;
    d.address = addr;
    d.class_code = static_cast<std::uint32_t>(read_int_or(fs, dir + "class", 0));
    d.vendor = static_cast<std::uint16_t>(read_int_or(fs, dir + "vendor", 0));
    d.device = static_cast<std::uint16_t>(read_int_or(fs, dir + "device", 0));
    d.numa = static_cast<int>(read_int_or(fs, dir + "numa_node"));
    d.local_cpus = read_cpulist(fs, dir + "local_cpulist").value_or(std::vector<int>{});
    d.link_speed = read_text(fs, dir + "current_link_speed");
    // "Unknown" speed and width 0 are what the kernel writes for virtual functions.
    if (d.link_speed == "Unknown") d.link_speed.clear();
    d.link_width = static_cast<int>(read_int_or(fs, dir + "current_link_width"));
    if (d.link_width == 0) d.link_width = -1;
    if (const auto real = fs.resolve(bus + addr)) {
      const auto parts = split_path(*real);
      for (const auto& p : parts) {
        if (is_pci_root(p)) d.root_complex = p;
        else if (is_pci_address(p) && p != addr) d.bridges.insert(d.bridges.begin(), p);
      }
    }
    t.pci.push_back(std::move(d));
  }
}

}  // namespace p2pscope::topo::detail
