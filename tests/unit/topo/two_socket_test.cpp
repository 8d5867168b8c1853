// Facts of the hand-built two-socket tree (tests/fixtures/make-two-socket.py): CPUs,
// NUMA, NICs and their IRQs by each mapping method, GPUs, path classes, RDMA GIDs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "p2pscope/topo.hpp"

namespace p2pscope::topo {
namespace {
const Topology& two_socket() {
  static const Topology t = discover(FsRoot(std::string(P2PSCOPE_FIXTURES_DIR) + "/fsroot/two-socket"));
  return t;
}

std::vector<int> irq_numbers(const Nic& n) {
  std::vector<int> v;
  for (const auto& i : n.irqs) v.push_back(i.irq);
  return v;
}

TEST(TwoSocket, CpusPackagesSiblingsAndNodes) {
  const auto& t = two_socket();
  ASSERT_EQ(t.cpus.size(), 16u);
  EXPECT_EQ(t.hostname, "two-socket-fixture");
  const Cpu& c0 = t.cpus[0];
  EXPECT_EQ(c0.package, 0);
  EXPECT_EQ(c0.core, 0);
  EXPECT_EQ(c0.numa, 0);
  EXPECT_EQ(c0.siblings, (std::vector<int>{0, 8}));
  const Cpu& c12 = t.cpus[12];  // second thread of socket 1's first core
  EXPECT_EQ(c12.package, 1);
  EXPECT_EQ(c12.core, 0);
  EXPECT_EQ(c12.numa, 1);
  EXPECT_EQ(c12.siblings, (std::vector<int>{4, 12}));
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.numa_nodes[0].cpus, (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(t.numa_nodes[1].cpus, (std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15}));
  EXPECT_EQ(t.numa_of_cpu(13), 1);
  EXPECT_EQ(t.numa_of_cpu(99), -1);
}

TEST(TwoSocket, MissingFilesAreUnknown) {
  const auto& t = two_socket();
  EXPECT_EQ(t.cpus[15].core, -1);  // topology/core_id left out on purpose
  EXPECT_EQ(t.cpus[15].package, 1);
  EXPECT_EQ(t.find_nic("eth4")->speed_mbps, -1);  // no speed file
  EXPECT_EQ(t.find_nic("eth3")->speed_mbps, 200000);
}

TEST(TwoSocket, NicsPlacementAndQueues) {
  const auto& t = two_socket();
  std::vector<std::string> names;
  for (const auto& n : t.nics) names.push_back(n.name);
  // bonding_masters is a plain file in /sys/class/net, not an interface.
  EXPECT_EQ(names, (std::vector<std::string>{"eth0", "eth1", "eth2", "eth3", "eth4", "lo"}));
  const std::map<std::string, std::pair<std::string, int>> want = {{"eth0", {"0000:0a:00.0", 0}}, {"eth1", {"0000:06:00.0", 0}},
                                                                   {"eth2", {"0000:46:00.0", 0}}, {"eth3", {"0000:26:00.0", 1}},
                                                                   {"eth4", {"0000:66:00.0", 1}}};
  for (const auto& [name, where] : want) {
    const Nic* n = t.find_nic(name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_EQ(n->pci, where.first) << name;
    EXPECT_EQ(n->numa, where.second) << name;
    EXPECT_EQ(n->rx_queues, 4) << name;
    EXPECT_EQ(n->tx_queues, 4) << name;
    EXPECT_EQ(n->state, "up");
  }
  EXPECT_EQ(t.find_nic("eth1")->mtu, 8244);
  EXPECT_EQ(t.find_nic("eth3")->mac, "02:00:00:00:03:01");
  const Nic* lo = t.find_nic("lo");
  EXPECT_TRUE(lo->is_virtual());
  EXPECT_EQ(lo->numa, -1);
  EXPECT_TRUE(lo->irqs.empty());
}

TEST(TwoSocket, IrqsFoundByEachMethod) {
  const auto& t = two_socket();
  // eth0: only the action name "eth0-TxRx-N"; eth2: only the chip column
  // "PCI-MSIX-<pci>"; eth4: only msi_irqs; eth1/eth3: several methods at once.
  EXPECT_EQ(irq_numbers(*t.find_nic("eth0")), (std::vector<int>{40, 41, 42, 43, 44}));
  EXPECT_EQ(irq_numbers(*t.find_nic("eth1")), (std::vector<int>{45, 46, 47, 48, 49}));
  EXPECT_EQ(irq_numbers(*t.find_nic("eth2")), (std::vector<int>{50, 51, 52, 53, 54}));
  EXPECT_EQ(irq_numbers(*t.find_nic("eth3")), (std::vector<int>{55, 56, 57, 58, 59}));
  EXPECT_EQ(irq_numbers(*t.find_nic("eth4")), (std::vector<int>{60, 61, 62, 63, 64}));
  // GPU interrupts (chip names the GPU's address) belong to no NIC.
  for (const auto& n : t.nics)
    for (const auto& i : n.irqs) EXPECT_NE(i.name, "nvidia");
}

TEST(TwoSocket, IrqAffinityAndCounts) {
  const auto& t = two_socket();
  const Irq& q0 = t.find_nic("eth3")->irqs[0];  // IRQ 55, served by CPU 1 of node 0
  EXPECT_EQ(q0.irq, 55);
  EXPECT_EQ(q0.affinity, (std::vector<int>{1}));
  EXPECT_EQ(q0.chip, "IR-PCI-MSIX-0000:26:00.0");
  EXPECT_EQ(q0.name, "mlx5_comp0@pci:0000:26:00.0");
  ASSERT_EQ(q0.per_cpu.size(), 16u);
  EXPECT_EQ(q0.per_cpu[1], 1055u);
  EXPECT_EQ(q0.total(), 1055u);
  // The seeds' wrong-node case: node-1 NICs' IRQs are all served on node 0.
  for (const char* name : {"eth3", "eth4"})
    for (const auto& i : t.find_nic(name)->irqs) {
      ASSERT_EQ(i.affinity.size(), 1u);
      EXPECT_EQ(t.numa_of_cpu(i.affinity[0]), 0) << name << " IRQ " << i.irq;
    }
  for (const auto& i : t.find_nic("eth1")->irqs) EXPECT_EQ(t.numa_of_cpu(i.affinity.at(0)), 0);
  // eth4's IRQs are in msi_irqs but /proc/interrupts names neither PCI nor NIC.
  EXPECT_EQ(t.find_nic("eth4")->irqs[0].chip, "IR-PCI-MSI");
  EXPECT_EQ(t.find_nic("eth4")->irqs[0].name, "gve-ntfy-blk0");
}

TEST(TwoSocket, MalformedInterruptLinesCountedInOneWarning) {
  const auto& t = two_socket();
  EXPECT_EQ(t.interrupts.malformed_lines, 2);
  EXPECT_EQ(std::count_if(t.warnings.begin(), t.warnings.end(),
                          [](const auto& w) { return w.find("malformed /proc/interrupts") != std::string::npos; }),
            1);
  EXPECT_NE(std::find(t.warnings.begin(), t.warnings.end(), "2 malformed /proc/interrupts line(s) skipped"), t.warnings.end());
  EXPECT_EQ(t.interrupts.named.at("LOC").at(15), 1015u);
  EXPECT_EQ(t.interrupts.named.at("ERR"), (std::vector<std::uint64_t>{0}));
}

TEST(TwoSocket, GpusInPciOrderWithBridgeChains) {
  const auto& t = two_socket();
  ASSERT_EQ(t.gpus.size(), 4u);
  const std::vector<std::pair<std::string, int>> want = {{"0000:05:00.0", 0}, {"0000:09:00.0", 0}, {"0000:25:00.0", 1}, {"0000:29:00.0", 1}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(t.gpus[i].index, static_cast<int>(i));
    EXPECT_EQ(t.gpus[i].pci, want[i].first);
    EXPECT_EQ(t.gpus[i].numa, want[i].second);
    EXPECT_EQ(t.gpus[i].name, "NVIDIA 0x2335");
  }
  const PciDevice* g0 = t.find_pci("0000:05:00.0");
  ASSERT_NE(g0, nullptr);
  EXPECT_EQ(g0->bridges, (std::vector<std::string>{"0000:04:00.0", "0000:03:00.0", "0000:02:00.0", "0000:01:00.0", "0000:00:01.0"}));
  EXPECT_EQ(g0->root_complex, "pci0000:00");
  EXPECT_EQ(g0->class_code, 0x030200u);
  EXPECT_EQ(g0->link_speed, "32.0 GT/s PCIe");
  EXPECT_EQ(g0->link_width, 16);
  EXPECT_EQ(g0->local_cpus, (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  ASSERT_EQ(t.nvlinks.size(), 4u);  // no NVML on a captured tree
  EXPECT_EQ(t.nvlinks[0][1], 0);
}

TEST(TwoSocket, PathClasses) {
  const auto& t = two_socket();
  // A sysfs capture cannot show NVLink: GPU-GPU links are unknown, never a PCIe class.
  const std::vector<std::vector<std::string>> unknown = {
      {"X", "?", "?", "?"}, {"?", "X", "?", "?"}, {"?", "?", "X", "?"}, {"?", "?", "?", "X"}};
  EXPECT_EQ(gpu_gpu_matrix(t), unknown);
  // Once links are known (NVML or nvidia-smi in the capture), the PCIe path shows.
  Topology known = t;
  known.gpu_links_source = "test";
  const auto gg = gpu_gpu_matrix(known);
  const std::vector<std::vector<std::string>> want_gg = {
      {"X", "PXB", "SYS", "SYS"}, {"PXB", "X", "SYS", "SYS"}, {"SYS", "SYS", "X", "PXB"}, {"SYS", "SYS", "PXB", "X"}};
  EXPECT_EQ(gg, want_gg);
  // Columns: eth0 eth1 eth2 eth3 eth4 lo.
  const auto gn = gpu_nic_matrix(t);
  const std::vector<std::vector<std::string>> want_gn = {{"PHB", "PIX", "NODE", "SYS", "SYS", "-"},
                                                         {"PHB", "PXB", "NODE", "SYS", "SYS", "-"},
                                                         {"SYS", "SYS", "SYS", "PIX", "NODE", "-"},
                                                         {"SYS", "SYS", "SYS", "PXB", "NODE", "-"}};
  EXPECT_EQ(gn, want_gn);
  // NVLinks, when known, win over the PCIe path.
  Topology nv = t;
  nv.nvlinks[0][2] = nv.nvlinks[2][0] = 18;
  EXPECT_EQ(path_class(nv, "0000:05:00.0", "0000:25:00.0"), "NV18");
  EXPECT_EQ(path_class(t, "0000:05:00.0", "0000:05:00.0"), "X");
  EXPECT_EQ(path_class(t, "0000:05:00.0", "0000:ff:00.0"), "SYS");  // not on this host
}

TEST(TwoSocket, RdmaRoceGidTable) {
  const auto& t = two_socket();
  ASSERT_EQ(t.rdma.size(), 1u);
  const RdmaDevice& d = t.rdma[0];
  EXPECT_EQ(d.name, "mlx5_0");
  EXPECT_EQ(d.pci, "0000:26:00.0");
  EXPECT_EQ(d.numa, 1);
  EXPECT_EQ(d.netdevs, (std::vector<std::string>{"eth3"}));
  ASSERT_EQ(d.ports.size(), 1u);
  const RdmaPort& p = d.ports[0];
  EXPECT_EQ(p.port, 1);
  EXPECT_EQ(p.state, "4: ACTIVE");
  EXPECT_EQ(p.link_layer, "Ethernet");
  ASSERT_EQ(p.gids.size(), 4u);  // the four zero entries are left out
  EXPECT_EQ(p.gids[0].type, "RoCE v1");
  EXPECT_FALSE(p.gids[0].ipv4_mapped);
  EXPECT_EQ(p.gids[1].type, "RoCE v2");
  EXPECT_EQ(p.gids[2].type, "RoCE v1");
  EXPECT_TRUE(p.gids[2].ipv4_mapped);
  EXPECT_EQ(p.gids[3].index, 3);
  EXPECT_EQ(p.gids[3].type, "RoCE v2");
  EXPECT_TRUE(p.gids[3].ipv4_mapped);
  EXPECT_EQ(p.gids[3].ipv4, "10.0.3.1");
  EXPECT_EQ(p.gids[3].netdev, "eth3");
}

TEST(TwoSocket, JsonDocument) {
  const auto& t = two_socket();
  const auto j = to_json(t);
  for (const char* k : {"cpus", "numa_nodes", "gpus", "nics", "rdma", "gpu_gpu", "gpu_nic", "warnings"}) EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["cpus"][12]["siblings"], nlohmann::json({4, 12}));
  EXPECT_EQ(j["cpus"][12]["package"], 1);
  EXPECT_EQ(j["numa_nodes"][1]["cpus"][0], 4);
  EXPECT_EQ(j["gpus"][2]["pci"], "0000:25:00.0");
  EXPECT_EQ(j["gpus"][2]["numa"], 1);
  EXPECT_EQ(j["nics"][3]["name"], "eth3");
  EXPECT_EQ(j["nics"][3]["numa"], 1);
  EXPECT_EQ(j["nics"][3]["speed_mbps"], 200000);
  EXPECT_EQ(j["nics"][3]["queues"]["rx"], 4);
  EXPECT_EQ(j["nics"][3]["irqs"][0]["irq"], 55);
  EXPECT_EQ(j["nics"][3]["irqs"][0]["affinity"], nlohmann::json({1}));
  EXPECT_EQ(j["nics"][3]["irqs"][0]["count"], 1055);
  EXPECT_EQ(j["gpu_nic"][0][1], "PIX");
  EXPECT_EQ(j["gpu_gpu"][0][2], "?");  // not in the capture
  EXPECT_EQ(j["gpu_links_source"], "unknown (not in capture)");
  EXPECT_EQ(j["default_route_nic"], "eth0");
  EXPECT_EQ(j["rdma"][0]["ports"][0]["gids"][3]["type"], "RoCE v2");
  EXPECT_EQ(j["rdma"][0]["ports"][0]["gids"][3]["ipv4"], "10.0.3.1");
}

TEST(TwoSocket, TextNamesWrongNodeIrqs) {
  const std::string text = to_text(two_socket());
  EXPECT_NE(text.find("NUMA node 1: CPUs 4-7,12-15"), std::string::npos) << text;
  // eth3: every interrupt counted on node 0 CPUs 1-3,8-9 while it sits on node 1.
  const auto at = text.find("\neth3 ");
  ASSERT_NE(at, std::string::npos);
  const std::string row = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  EXPECT_NE(row.find("1-3,8-9"), std::string::npos) << row;
  EXPECT_NE(row.find("NO: 100%"), std::string::npos) << row;
  EXPECT_NE(text.find("2 malformed /proc/interrupts line(s) skipped"), std::string::npos);
  EXPECT_NE(text.find("3 (10.0.3.1)"), std::string::npos);  // RoCE v2 IPv4 GID of mlx5_0
}

}  // namespace
}  // namespace p2pscope::topo
