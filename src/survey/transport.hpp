#pragma once
// How the survey's links move their bytes (--transport). tcp: bench tcp's sockets. net:
// an NCCL net plugin (bench net's data path: TCPX, aws-ofi-nccl, IB or socket plugins,
// p2pscope's reference plugin), each rail's sessions over the plugin device that is that
// rail's NIC, so a slow link is seen as the transport NCCL would use sees it. The
// control connection of every session is TCP on the rail's NIC in both.
#include <memory>
#include <string>
#include <vector>

#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"

namespace p2pscope::survey {

struct HostInfo;
struct Options;

struct LinkTransport {
  std::string name = "tcp";  // as reports say it: "tcp", "net plugin 'p2pscope' v11 (/path)"
  std::vector<std::shared_ptr<tcp::DataPath>> by_nic;  // this host's NICs, in its order; null: sockets
  std::vector<std::string> devices;                     // net: by NIC, "device 1 (eth2)"
};

// The plugin device that is NIC `nic` (-1: none): the device of the same name (socket
// plugins name devices after interfaces), else of the same PCI function (the last
// component of both paths: IB and EFA devices have names of their own).
int device_for_nic(const std::vector<net::DeviceProps>& devices, const std::string& nic, const std::string& nic_pci);

// The PCI path of NIC `name` (/sys/class/net/NAME/device resolved), "" for a virtual one.
std::string nic_pci_path(const std::string& name);

// tcp: sockets for every NIC. net: loads o.plugin as NCCL would (NCCL_NET_PLUGIN rules)
// and finds each of h's NICs among its devices; where the plugin does not load or a NIC
// has no device, h.problem says which, and what the plugin offers.
LinkTransport open_transport(const Options& o, HostInfo& h);

}  // namespace p2pscope::survey
