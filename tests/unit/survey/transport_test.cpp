// survey --transport net: which plugin device carries a rail's NIC.
#include <gtest/gtest.h>

#include "survey/survey.hpp"
#include "survey/transport.hpp"

namespace p2pscope::survey {
namespace {

net::DeviceProps dev(const std::string& name, const std::string& pci) {
  net::DeviceProps d;
  d.name = name;
  d.pci_path = pci;
  return d;
}

TEST(SurveyTransport, ASocketPluginsDeviceIsFoundByTheNicsName) {
  const std::vector<net::DeviceProps> devs = {dev("eth1", ""), dev("eth2", "")};
  EXPECT_EQ(device_for_nic(devs, "eth2", ""), 1);
  EXPECT_EQ(device_for_nic(devs, "eth1", "/sys/devices/pci0000:00/0000:00:05.0"), 0);
  EXPECT_EQ(device_for_nic(devs, "eth3", ""), -1);  // a NIC the plugin was not told of
}

TEST(SurveyTransport, AnIbDeviceIsFoundByItsPciFunctionNotItsName) {
  // mlx5_1 is ens2's function: an IB plugin names devices after the HCA, not the netdev.
  const std::vector<net::DeviceProps> devs = {dev("mlx5_0", "/sys/devices/pci0000:10/0000:10:01.0/0000:17:00.0"),
                                              dev("mlx5_1", "/sys/devices/pci0000:30/0000:30:01.0/0000:3a:00.0/")};
  EXPECT_EQ(device_for_nic(devs, "ens2", "/sys/devices/pci0000:30/0000:30:01.0/0000:3a:00.0"), 1);
  EXPECT_EQ(device_for_nic(devs, "ens1", "/sys/devices/pci0000:10/0000:10:01.0/0000:17:00.0"), 0);
  // Another function of the same bus is not the device; a virtual NIC (no PCI) matches nothing.
  EXPECT_EQ(device_for_nic(devs, "ens3", "/sys/devices/pci0000:10/0000:10:01.0/0000:17:00.1"), -1);
  EXPECT_EQ(device_for_nic(devs, "veth0", ""), -1);
}

TEST(SurveyTransport, TcpNeedsNoPluginAndAPluginThatDoesNotLoadIsTheHostsProblem) {
  HostInfo h;
  h.nics = {{"eth1", "10.0.0.1", 1000}};
  Options o;
  LinkTransport t = open_transport(o, h);
  EXPECT_EQ(t.name, "tcp");
  ASSERT_EQ(t.by_nic.size(), 1u);
  EXPECT_EQ(t.by_nic[0], nullptr);
  EXPECT_TRUE(h.problem.empty());
  o.transport = "net";
  o.plugin = "/nonexistent/libnccl-net-nothing.so";
  t = open_transport(o, h);
  EXPECT_NE(h.problem.find("--transport net: the plugin did not load"), std::string::npos) << h.problem;
  EXPECT_NE(h.problem.find("libnccl-net-nothing.so"), std::string::npos) << h.problem;
}

}  // namespace
}  // namespace p2pscope::survey
