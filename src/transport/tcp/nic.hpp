#pragma once
// NIC names <-> IPv4 addresses (getifaddrs), and a NIC's NUMA node from sysfs.
#include <string>
#include <vector>

#include "p2pscope/bindings.hpp"

namespace p2pscope::tcp {

struct NicAddr {
  std::string name;  // "eth1"
  std::string ipv4;  // "10.0.1.2"
};

// Every interface with an IPv4 address in this thread's network namespace.
std::vector<NicAddr> list_ipv4_nics();

// A --nics item: a name ("eth1") or an IPv4 address. Throws UsageError for an unknown
// name, listing the NICs there are.
NicAddr resolve_nic(const std::string& name_or_addr);

// Name of the interface holding `ipv4`, or the address itself when none does.
std::string nic_name_of(const std::string& ipv4);

// /sys/class/net/<nic>/device/numa_node through an FsRoot at `root`; -1 unknown.
int nic_numa(const std::string& root, const std::string& nic);

// CPUs a worker on `nic` should run on: the binding's list for that NIC (by name
// or address), or empty (not bound).
std::vector<int> cpus_for(const std::vector<NicBinding>& b, const NicAddr& nic);

}  // namespace p2pscope::tcp
