// IRQ plan properties on a two-socket host with hyperthreads (the seeds' shape,
// scaled down), apply/reset on a tree copied to a temp dir, diff and mismatches.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "p2pscope/bindings.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"
#include "read_tree.hpp"
#include "support/files.hpp"

using namespace p2pscope;
using namespace p2pscope::tune;
namespace fs = std::filesystem;
using p2pscope::test::read_tree;

namespace {

// 2 sockets x 8 cores x 2 threads: node 0 = CPUs 0-7,16-23; node 1 = 8-15,24-31
// (sibling of CPU c is c+16). eth1, eth2 on node 0; eth3 on node 1.
topo::Topology two_socket() {
  topo::Topology t;
  t.hostname = "two-socket";
  for (int id = 0; id < 32; ++id) {
    topo::Cpu c;
    c.id = id;
    c.core = id % 16;
    c.numa = (id % 16) < 8 ? 0 : 1;
    c.package = c.numa;
    c.siblings = {id % 16, id % 16 + 16};
    t.cpus.push_back(c);
  }
  int irq = 100;
  auto nic = [&](const std::string& name, int numa, const std::vector<std::string>& queues) {
    topo::Nic n;
    n.name = name;
    n.pci = "0000:" + std::to_string(10 + numa) + ":00." + std::to_string(t.nics.size());
    n.numa = numa;
    n.state = "up";
    for (const auto& q : queues) {
      topo::Irq i;
      i.irq = irq++;
      i.name = name + "-" + q;
      n.irqs.push_back(i);
    }
    t.nics.push_back(n);
  };
  nic("eth1", 0, {"TxRx-0", "TxRx-1", "TxRx-2"});
  nic("eth2", 0, {"tx-0", "rx-0", "tx-1", "rx-1"});
  nic("eth3", 1, {"TxRx-0", "TxRx-1"});
  return t;
}

int numa_of(const topo::Topology& t, int cpu) {
  for (const auto& c : t.cpus)
    if (c.id == cpu) return c.numa;
  return -1;
}

// A minimal /proc tree for the IRQs of two_socket(): every affinity "ffffffff".
fs::path make_tree(const topo::Topology& t) {
  const fs::path root = p2pscope::test::fresh_test_dir("p2pscope-irq", false);
  fs::create_directories(root / "proc/sys/kernel");
  std::ofstream(root / "proc/sys/kernel/hostname") << t.hostname << "\n";
  std::ostringstream intr;
  intr << "           CPU0       CPU1\n";
  for (const auto& n : t.nics)
    for (const auto& i : n.irqs) {
      intr << " " << i.irq << ":          5          7  PCI-MSIX-" << n.pci << "   0-edge      " << i.name << "\n";
      const fs::path d = root / "proc/irq" / std::to_string(i.irq);
      fs::create_directories(d);
      std::ofstream(d / "smp_affinity") << "ffffffff\n";
      std::ofstream(d / "smp_affinity_list") << "0-31\n";
    }
  std::ofstream(root / "proc/interrupts") << intr.str();
  return root;
}

}  // namespace

TEST(IrqPlan, PropertiesOnTwoSockets) {
  const auto t = two_socket();
  // reserve CPUs 0-1 (cores 0 and 1 with siblings); the disjoint-per-NIC style
  const auto p = make_plan(t, {.nics = {}, .reserve = parse_cpulist("0-1"), .style = "per-nic"});
  ASSERT_EQ(p.nics.size(), 3u);
  std::set<int> used_node0;
  for (const auto& n : p.nics) {
    SCOPED_TRACE(n.name);
    ASSERT_FALSE(n.tx_cpus.empty());
    ASSERT_FALSE(n.rx_cpus.empty());
    for (const auto* set : {&n.tx_cpus, &n.rx_cpus})
      for (int cpu : *set) {
        EXPECT_EQ(numa_of(t, cpu), n.numa) << "CPU " << cpu << " not on the NIC's node";  // NUMA-local
        EXPECT_FALSE(cpu == 0 || cpu == 1 || cpu == 16 || cpu == 17) << "reserved core used: " << cpu;
        const int sib = cpu < 16 ? cpu + 16 : cpu - 16;  // siblings together
        EXPECT_NE(std::find(set->begin(), set->end(), sib), set->end()) << cpu << " without sibling " << sib;
      }
    for (int cpu : n.tx_cpus)  // TX and RX disjoint
      EXPECT_EQ(std::find(n.rx_cpus.begin(), n.rx_cpus.end(), cpu), n.rx_cpus.end());
    if (n.numa == 0) {
      for (const auto* set : {&n.tx_cpus, &n.rx_cpus})
        for (int cpu : *set) EXPECT_TRUE(used_node0.insert(cpu).second) << "CPU " << cpu << " given to two NICs";
    }
    for (const auto& i : n.irqs) {
      EXPECT_EQ(parse_cpumask(i.mask), i.cpus);  // masks decode to the sets
      const auto& want = i.role == "tx" ? n.tx_cpus : n.rx_cpus;
      for (int cpu : i.cpus) EXPECT_NE(std::find(want.begin(), want.end(), cpu), want.end());
      EXPECT_EQ(i.cpus.size(), 2u);  // one whole core
    }
  }
  // Node 0: 6 free cores (no system share beyond --reserve), a third for TX and a third
  // for RX split over 2 NICs -> 1 + 1 core each; eth3 alone on node 1: 8 / 3 -> 2 + 2.
  EXPECT_EQ(p.nics[0].tx_cpus.size() + p.nics[0].rx_cpus.size(), 4u);
  EXPECT_EQ(p.nics[1].tx_cpus.size() + p.nics[1].rx_cpus.size(), 4u);
  EXPECT_EQ(p.nics[2].tx_cpus.size() + p.nics[2].rx_cpus.size(), 8u);
  // Binding strings parse back to the sets.
  const auto tx = parse_bindings(p.tx_bindings);
  const auto rx = parse_bindings(p.rx_bindings);
  ASSERT_EQ(tx.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(tx[i].nic, p.nics[i].name);
    EXPECT_EQ(tx[i].cpus, p.nics[i].tx_cpus);
    EXPECT_EQ(rx[i].cpus, p.nics[i].rx_cpus);
  }
  EXPECT_EQ(p.tx_bindings, "eth1:2,18;eth2:4,20;eth3:8-9,24-25");
  // eth2's tx queues go to TX cores, rx queues to RX cores.
  EXPECT_EQ(p.nics[1].irqs[0].role, "tx");
  EXPECT_EQ(p.nics[1].irqs[1].role, "rx");
  // JSON round trip, in the shape of the issue.
  const auto j = to_json(p);
  EXPECT_TRUE(j["nics"][0].contains("tx_cpus"));
  EXPECT_TRUE(j["nics"][0]["irqs"][0].contains("mask"));
  EXPECT_EQ(j["env"]["NCCL_GPUDIRECTTCPX_TX_BINDINGS"], p.tx_bindings);
  const auto back = plan_from_json(j);
  EXPECT_EQ(back.nics[2].rx_cpus, p.nics[2].rx_cpus);
}

TEST(IrqPlan, BadRequestsAreRefusedWithReasons) {
  const auto t = two_socket();
  try {
    make_plan(t, {{"eth9"}, {}});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("eth9"), std::string::npos);
  }
  EXPECT_THROW(make_plan(t, {{"eth3"}, parse_cpulist("8-14")}), UsageError);  // one core left on node 1
  // Few cores for many NICs: shared sets, with a warning.
  const auto p = make_plan(t, {.nics = {"eth1", "eth2"}, .reserve = parse_cpulist("0-4"), .style = "per-nic"});
  EXPECT_FALSE(p.warnings.empty());
  EXPECT_EQ(p.nics[0].tx_cpus, p.nics[1].tx_cpus);
}

TEST(IrqApply, ApplyThenResetIsByteIdentical) {
  const auto t = two_socket();
  const fs::path root = make_tree(t);
  const auto before = read_tree(root);
  const FsRoot fsr(root);
  const auto plan = make_plan(t, {{}, {}});
  const auto dry = apply_plan(fsr, plan, true);
  EXPECT_EQ(dry.changes.size(), 9u);
  EXPECT_EQ(read_tree(root), before);  // dry run writes nothing
  const std::string backup = (root.parent_path() / (root.filename().string() + "-backup.json")).string();
  const auto r = apply_plan(fsr, plan, false, backup);
  EXPECT_EQ(r.applied.size(), 9u);
  EXPECT_TRUE(r.refused.empty());
  EXPECT_EQ(*fsr.read_line("/proc/irq/100/smp_affinity"), plan.nics[0].irqs[0].mask);
  EXPECT_EQ(*fsr.read_line("/proc/irq/100/smp_affinity_list"), format_cpulist(plan.nics[0].irqs[0].cpus));
  EXPECT_NE(read_tree(root), before);
  const auto b = read_backup_file(backup);
  EXPECT_EQ(b.entries.size(), 9u);
  const auto rr = reset_from_backup(fsr, b, false);
  EXPECT_TRUE(rr.refused.empty());
  EXPECT_EQ(read_tree(root), before);
  fs::remove(backup);
  fs::remove_all(root);
}

TEST(IrqApply, RefusesMissingIrqsAndForeignPlansAndBackups) {
  const auto t = two_socket();
  const fs::path root = make_tree(t);
  const FsRoot fsr(root);
  auto plan = make_plan(t, {{}, {}});
  auto bad = plan;
  bad.nics[0].irqs[0].irq = 999;
  try {
    apply_plan(fsr, bad, true);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("999"), std::string::npos);
  }
  auto renamed = plan;
  renamed.nics[0].irqs[0].name = "mlx5_comp0";
  EXPECT_THROW(apply_plan(fsr, renamed, true), UsageError);
  auto other_host = plan;
  other_host.hostname = "elsewhere";
  EXPECT_THROW(apply_plan(fsr, other_host, true), UsageError);

  IrqBackup b = read_backup(fsr, {100});
  b.hostname = "elsewhere";
  EXPECT_THROW(reset_from_backup(fsr, b, true), UsageError);
  b = read_backup(fsr, {100});
  b.entries[0].name = "not-this-irq";
  EXPECT_THROW(reset_from_backup(fsr, b, true), UsageError);

  fs::remove_all(root);
}

TEST(IrqDiff, RatesImbalanceAndNumaMismatch) {
  IrqSnapshot a;
  a.hostname = "h";
  a.time_ns = 1'000'000'000;
  a.cpu_columns = {0, 1, 2, 3};
  a.cpu_numa = {{0, 0}, {1, 0}, {2, 1}, {3, 1}};
  IrqRecord eth3{200, "PCI-MSIX", "eth3-TxRx-0", "eth3", true, 1, {0, 1}, {10, 10, 0, 0}};
  IrqRecord eth1{201, "PCI-MSIX", "eth1-TxRx-0", "eth1", true, 0, {0}, {0, 0, 0, 0}};
  a.irqs = {eth3, eth1};
  IrqSnapshot b = a;
  b.time_ns = 3'000'000'000;
  b.irqs[0].per_cpu = {410, 10, 0, 0};   // eth3 (node 1) served by CPU 0 (node 0): 400 in 2 s
  b.irqs[1].per_cpu = {100, 0, 0, 0};    // eth1 local
  const auto d = diff(a, b);
  EXPECT_DOUBLE_EQ(d.interval_s, 2.0);
  ASSERT_EQ(d.irqs.size(), 2u);
  EXPECT_EQ(d.irqs[0].irq, 200);  // busiest first
  EXPECT_EQ(d.irqs[0].count, 400u);
  EXPECT_DOUBLE_EQ(d.irqs[0].per_s, 200.0);
  EXPECT_EQ(d.cpus[0].cpu, 0);
  EXPECT_EQ(d.cpus[0].count, 500u);
  EXPECT_DOUBLE_EQ(d.imbalance, 4.0);  // 500 / (500 / 4)
  ASSERT_EQ(d.mismatches.size(), 1u);
  EXPECT_EQ(d.mismatches[0].nic, "eth3");
  EXPECT_DOUBLE_EQ(d.mismatches[0].remote_share, 1.0);
  // Snapshot JSON round trip keeps what diff needs.
  const auto back = snapshot_from_json(to_json(b));
  EXPECT_EQ(diff(a, back).irqs[0].count, 400u);
  // Since boot: affinity-only mismatch is found by the doctor's IRQ check.
  const auto f = irq_findings(b);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].id, "irq.numa_mismatch");
  EXPECT_THROW(snapshot_from_json(nlohmann::json{{"irqs", 3}}), UsageError);
}
