// The survey's data paths by NIC (transport.hpp).
#include "survey/transport.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "p2pscope/error.hpp"
#include "survey/nccl_link.hpp"
#include "survey/survey.hpp"
#include "transport/session/datapath.hpp"

namespace p2pscope::survey {

namespace {
std::string last_component(std::string path) {
  while (!path.empty() && path.back() == '/') path.pop_back();
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
}  // namespace

int device_for_nic(const std::vector<net::DeviceProps>& devices, const std::string& nic, const std::string& nic_pci) {
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (devices[i].name == nic) return static_cast<int>(i);
  const std::string function = last_component(nic_pci);
  if (function.empty()) return -1;
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (last_component(devices[i].pci_path) == function) return static_cast<int>(i);
  return -1;
}

std::string nic_pci_path(const std::string& name) {
  std::error_code ec;
  const auto p = std::filesystem::canonical(std::filesystem::path("/sys/class/net") / name / "device", ec);
  return ec ? "" : p.string();
}

LinkTransport open_transport(const Options& o, HostInfo& h) {
  LinkTransport t;
  t.by_nic.assign(h.nics.size(), nullptr);
  if (o.transport == "tcp" || !h.problem.empty()) return t;
  if (o.transport == "nccl") {  // each link's children load NCCL and its transport (nccl_link.hpp)
    t.name = "nccl send/recv";
    h.problem = nccl_link_problem();
    return t;
  }
  std::shared_ptr<net::Plugin> plugin;
  try {
    net::LoadOptions lo;
    lo.plugin = o.plugin;
    plugin = net::Plugin::load(lo);
  } catch (const Error& e) {
    h.problem = fmt::format("--transport net: the plugin did not load: {}", e.what());
    return t;
  }
  t.name = plugin->describe();
  std::vector<std::string> offered;
  for (const auto& d : plugin->devices()) offered.push_back(d.name);
  for (std::size_t i = 0; i < h.nics.size(); ++i) {
    const std::string& nic = h.nics[i].name;
    const int dev = device_for_nic(plugin->devices(), nic, nic_pci_path(nic));
    if (dev < 0) {
      h.problem = fmt::format("--transport net: {} has no device for NIC {} (its devices: {}); tell the plugin which "
                              "interfaces to use (NCCL_SOCKET_IFNAME for socket plugins, P2PSCOPE_REFNET_IFS for "
                              "p2pscope's reference plugin) or survey other --nics",
                              t.name, nic, offered.empty() ? "none" : fmt::format("{}", fmt::join(offered, ", ")));
      return t;
    }
    t.by_nic[i] = tcp::make_plugin_path(plugin, tcp::DmabufMode::off, {dev});
    t.devices.push_back(fmt::format("device {} ({})", dev, plugin->devices()[static_cast<std::size_t>(dev)].name));
  }
  return t;
}

}  // namespace p2pscope::survey
