// /proc/interrupts parsing, the captured trees (this VM and the H200 pair), files that
// are missing or malformed, and `p2pscope topo` end to end.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "p2pscope/error.hpp"
#include "p2pscope/topo.hpp"
#include "support/run_binary.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;

namespace p2pscope::topo {
namespace {
std::string fixture(const std::string& name) { return std::string(P2PSCOPE_FIXTURES_DIR) + "/fsroot/" + name; }

TEST(ParseInterrupts, NewAndOldChipFormatsAndNamedLines) {
  const auto t = parse_interrupts(
      "           CPU0       CPU2\n"
      "  0:         50          1   IO-APIC   2-edge      timer\n"
      " 37:          0          7   PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n"
      " 88:          3          4   PCI-MSI-edge      eth0-TxRx-0\n"
      " 90:          1          2   IR-PCI-MSI 1048576-edge      ehci_hcd:usb1, uhci_hcd:usb2\n"
      "NMI:          0          0   Non-maskable interrupts\n"
      "ERR:          5\n");
  EXPECT_EQ(t.cpu_columns, (std::vector<int>{0, 2}));
  EXPECT_EQ(t.malformed_lines, 0);
  ASSERT_EQ(t.irqs.size(), 4u);
  EXPECT_EQ(t.irqs[1].irq, 37);
  EXPECT_EQ(t.irqs[1].chip, "PCI-MSIX-0000:00:03.0");
  EXPECT_EQ(t.irqs[1].name, "virtio2-input.0");
  EXPECT_EQ(t.irqs[1].per_cpu, (std::vector<std::uint64_t>{0, 7}));
  EXPECT_EQ(t.irqs[1].cpu_columns, (std::vector<int>{0, 2}));
  EXPECT_EQ(t.irqs[2].chip, "PCI-MSI-edge");  // old kernels: no hwirq column
  EXPECT_EQ(t.irqs[2].name, "eth0-TxRx-0");
  EXPECT_EQ(t.irqs[3].name, "ehci_hcd:usb1, uhci_hcd:usb2");
  EXPECT_EQ(t.irqs[3].total(), 3u);
  EXPECT_EQ(t.named.at("ERR"), (std::vector<std::uint64_t>{5}));
  EXPECT_EQ(t.named.at("NMI").size(), 2u);
}

TEST(ParseInterrupts, MalformedLinesSkippedAndCounted) {
  const auto t = parse_interrupts(
      "           CPU0       CPU1\n"
      " 10:          1          2   IO-APIC   2-edge  ok\n"
      " 11:          1\n"                                   // torn
      " 1x:          1          2   IO-APIC   2-edge  bad\n"  // not a number
      "no colon here\n"
      " 12:          1   abc   IO-APIC\n"                     // junk in a count column
      " 13:  99999999999999999999999  1  IO-APIC 1-edge big\n"  // count overflows
      "\n");
  EXPECT_EQ(t.irqs.size(), 1u);
  EXPECT_EQ(t.malformed_lines, 5);
  EXPECT_EQ(parse_interrupts("").irqs.size(), 0u);
  EXPECT_EQ(parse_interrupts("garbage header\n 1: 2 3\n").malformed_lines, 2);
}

// The fuzzer's find (CI, stop 10): a CPU column number too long for an int threw
// std::out_of_range out of the parser. Such a header is malformed, so are IRQ numbers
// of that length; nothing throws.
TEST(ParseInterrupts, NumbersTooLongForAnIdAreMalformedNotAThrow) {
  InterruptTable t;
  ASSERT_NO_THROW(t = parse_interrupts("  CPU0  CPU37777777777777777777777777777777\n 24:  1  2  IO-APIC  1-edge x\n"));
  EXPECT_TRUE(t.cpu_columns.empty());
  EXPECT_EQ(t.malformed_lines, 2);  // the header, then the line with no columns to count
  ASSERT_NO_THROW(t = parse_interrupts("  CPU0  CPU1\n 123456789012:  1  2  IO-APIC  1-edge x\n 7:  3  4  IO-APIC  2-edge y\n"));
  ASSERT_EQ(t.irqs.size(), 1u);
  EXPECT_EQ(t.irqs[0].irq, 7);
  EXPECT_EQ(t.malformed_lines, 1);
}

TEST(CpuVm, CapturedVirtioMachine) {
  const Topology t = discover(FsRoot(fixture("cpu-vm")));
  ASSERT_EQ(t.cpus.size(), 2u);
  EXPECT_EQ(t.cpus[1].numa, 0);
  ASSERT_EQ(t.numa_nodes.size(), 1u);
  const Nic* eth0 = t.find_nic("eth0");
  ASSERT_NE(eth0, nullptr);
  EXPECT_EQ(eth0->pci, "0000:00:03.0");  // virtio2/net/eth0: nearest PCI ancestor
  EXPECT_EQ(eth0->numa, 0);              // numa_node -1 on a one-node machine means node 0
  EXPECT_EQ(eth0->mtu, 1400);
  std::vector<int> irqs;
  for (const auto& i : eth0->irqs) irqs.push_back(i.irq);
  EXPECT_EQ(irqs, (std::vector<int>{37, 38, 39}));
  EXPECT_EQ(eth0->irqs[1].name, "virtio2-input.0");
  EXPECT_EQ(eth0->irqs[1].affinity.empty(), false);
  EXPECT_TRUE(t.find_nic("lo")->is_virtual());
  EXPECT_TRUE(t.find_nic("ifb0")->is_virtual());
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_TRUE(t.rdma.empty());
  EXPECT_TRUE(gpu_nic_matrix(t).empty());
}

TEST(H200x2, TwoGpusOnTheRootBus) {
  const Topology t = discover(FsRoot(fixture("h200x2")));
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].pci, "0000:00:06.0");
  EXPECT_EQ(t.gpus[1].pci, "0000:00:07.0");
  EXPECT_EQ(t.gpus[0].numa, 0);
  EXPECT_EQ(t.cpus.size(), 32u);
  // The capture carries the machine's `nvidia-smi topo -m` (p2pscope/): NV18, and the
  // names from nvidia-smi instead of "NVIDIA 0x2335".
  EXPECT_EQ(gpu_gpu_matrix(t)[0][1], "NV18");
  EXPECT_EQ(t.gpus[0].name, "NVIDIA H200");
  // The PCIe path alone: both on pci0000:00, no bridges.
  Topology pcie = t;
  pcie.nvlinks = {{0, 0}, {0, 0}};
  EXPECT_EQ(path_class(pcie, t.gpus[0].pci, t.gpus[1].pci), "PHB");
  Topology nv = t;
  nv.nvlinks = {{0, 18}, {18, 0}};
  EXPECT_EQ(gpu_gpu_matrix(nv)[0][1], "NV18");
  const Nic* eth0 = t.find_nic("eth0");
  ASSERT_NE(eth0, nullptr);
  EXPECT_EQ(eth0->pci, "0000:00:03.0");
  EXPECT_EQ(eth0->irqs.size(), 3u);  // 34-36: PCI-MSIX-0000:00:03.0
}

// A scratch tree for files that are missing or malformed.
class ScratchTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = p2pscope::test::fresh_test_dir("p2pscope-topo");
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  fs::path root_;
};

TEST_F(ScratchTree, EmptyRootIsAllUnknownNotACrash) {
  const Topology t = discover(FsRoot(root_));
  EXPECT_TRUE(t.cpus.empty());
  EXPECT_TRUE(t.nics.empty());
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.hostname, "");
  EXPECT_GE(t.warnings.size(), 2u);  // no CPUs; /proc/interrupts unreadable
  EXPECT_NO_THROW(to_json(t));
  EXPECT_NO_THROW(to_text(t));
}

TEST_F(ScratchTree, MalformedFilesBecomeUnknown) {
  put("sys/devices/system/cpu/online", "0-1\n");
  put("sys/devices/system/cpu/cpu0/topology/core_id", "zero\n");
  put("sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "3-1\n");
  put("sys/devices/system/cpu/cpu1/topology/core_id", "1\n");
  put("sys/devices/virtual/net/dummy0/mtu", "\n");
  put("sys/devices/virtual/net/dummy0/speed", "-1\n");
  fs::create_directories(root_ / "sys/class/net");
  fs::create_symlink("../../devices/virtual/net/dummy0", root_ / "sys/class/net/dummy0");
  fs::create_symlink("../../devices/virtual/net/gone", root_ / "sys/class/net/dangling");
  put("proc/interrupts", "CPU0 CPU1\n 5: 1\n");
  const Topology t = discover(FsRoot(root_));
  ASSERT_EQ(t.cpus.size(), 2u);
  EXPECT_EQ(t.cpus[0].core, -1);
  EXPECT_TRUE(t.cpus[0].siblings.empty());
  EXPECT_EQ(t.cpus[1].core, 1);
  EXPECT_EQ(t.cpus[0].numa, -1);  // no node directory
  ASSERT_EQ(t.nics.size(), 1u);   // the dangling link is not a directory
  EXPECT_EQ(t.nics[0].mtu, -1);
  EXPECT_EQ(t.nics[0].speed_mbps, -1);
  EXPECT_EQ(t.interrupts.malformed_lines, 1);
}

TEST(FsRootArg, NotADirectoryIsUsageError) {
  EXPECT_THROW(FsRoot("/nonexistent/p2pscope-root"), UsageError);
}

// End to end through the built binary.
using CmdResult = p2pscope::test::Result;
CmdResult run(const std::string& args) { return p2pscope::test::run_binary(args); }

TEST(TopoCommand, JsonOnTwoSocketFixture) {
  const CmdResult r = run("topo --root " + fixture("two-socket") + " --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["nics"].size(), 6u);
  EXPECT_EQ(j["gpus"].size(), 4u);
  EXPECT_EQ(j["gpu_nic"][2][3], "PIX");
  EXPECT_EQ(j["metadata"]["schema_version"], 1);
  EXPECT_TRUE(j["metadata"]["argv"].is_array());
  EXPECT_TRUE(j["metadata"].contains("versions"));
  EXPECT_EQ(j["cpus"].size(), 16u);
}

TEST(TopoCommand, TextAndOutFile) {
  const CmdResult r = run("topo --root " + fixture("two-socket"));
  ASSERT_EQ(r.code, 0) << r.out;
  // GPU-GPU links unknown in a sysfs-only capture; GPU-NIC paths from the PCIe tree.
  EXPECT_NE(r.out.find("GPU0  X     ?     ?     ?     PHB   PIX"), std::string::npos) << r.out;
  const fs::path out = fs::temp_directory_path() / ("p2pscope-topo-out-" + std::to_string(::getpid()) + ".json");
  const CmdResult w = run("topo --root " + fixture("cpu-vm") + " --format json --out " + out.string());
  ASSERT_EQ(w.code, 0) << w.out;
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["nics"][0]["name"], "eth0");
  fs::remove(out);
}

TEST(TopoCommand, BadInputExitsTwo) {
  const CmdResult a = run("topo --root /nonexistent/p2pscope-root");
  EXPECT_EQ(a.code, 2);
  EXPECT_NE(a.out.find("is not a directory"), std::string::npos) << a.out;
  const CmdResult b = run("topo --root " + fixture("two-socket/proc/interrupts"));  // a file
  EXPECT_EQ(b.code, 2) << b.out;
  // A tree's proc/ given for its top: no CPUs there, said with the folder to give instead.
  const CmdResult p = run("topo --root " + fixture("two-socket/proc"));
  EXPECT_EQ(p.code, 2) << p.out;
  EXPECT_NE(p.out.find("holds no CPUs"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("give the tree's top"), std::string::npos) << p.out;
  const CmdResult c = run("topo --format xml");
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.out.find("--format"), std::string::npos) << c.out;
  const CmdResult d = run("topo --bogus");
  EXPECT_EQ(d.code, 2);
  const CmdResult e = run("topo --out /nonexistent-dir/x.json --root " + fixture("cpu-vm"));
  EXPECT_EQ(e.code, 1);
  EXPECT_NE(e.out.find("cannot write"), std::string::npos) << e.out;
}

}  // namespace
}  // namespace p2pscope::topo
