// IRQ snapshot, plan and apply/reset on captured fsroot trees (topo::discover).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "p2pscope/bindings.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"
#include "read_tree.hpp"

using namespace p2pscope;
using namespace p2pscope::tune;
namespace fs = std::filesystem;
using p2pscope::test::read_tree;

namespace {
const fs::path kFsroots = fs::path(P2PSCOPE_FIXTURES_DIR) / "fsroot";

topo::Topology load(const fs::path& root) {
  topo::DiscoverOptions o;
  o.use_nvml = false;
  return topo::discover(FsRoot(root), o);
}

// The plan's promises, checked against the topology it was made from.
void expect_plan_properties(const topo::Topology& t, const IrqPlan& p, const std::set<int>& reserved) {
  std::map<int, const topo::Cpu*> cpu;
  for (const auto& c : t.cpus) cpu[c.id] = &c;
  std::map<int, std::set<int>> used_by_node;
  for (const auto& n : p.nics) {
    SCOPED_TRACE(n.name);
    ASSERT_FALSE(n.tx_cpus.empty());
    ASSERT_FALSE(n.rx_cpus.empty());
    for (const auto* set : {&n.tx_cpus, &n.rx_cpus})
      for (int c : *set) {
        ASSERT_TRUE(cpu.count(c));
        if (cpu[c]->numa >= 0) {
          EXPECT_EQ(cpu[c]->numa, n.numa) << "CPU " << c;
        }
        EXPECT_FALSE(reserved.count(c)) << "reserved CPU " << c;
        for (int s : cpu[c]->siblings) EXPECT_NE(std::find(set->begin(), set->end(), s), set->end()) << c << "/" << s;
      }
    for (int c : n.tx_cpus) EXPECT_EQ(std::find(n.rx_cpus.begin(), n.rx_cpus.end(), c), n.rx_cpus.end());
    for (const auto& i : n.irqs) EXPECT_EQ(parse_cpumask(i.mask), i.cpus);
    if (p.warnings.empty()) {
      for (const auto* set : {&n.tx_cpus, &n.rx_cpus})
        for (int c : *set) EXPECT_TRUE(used_by_node[n.numa].insert(c).second) << "CPU " << c << " shared";
    }
  }
  const auto tx = parse_bindings(p.tx_bindings);
  ASSERT_EQ(tx.size(), p.nics.size());
  for (std::size_t i = 0; i < tx.size(); ++i) EXPECT_EQ(tx[i].cpus, p.nics[i].tx_cpus);
}
}  // namespace

TEST(IrqFixture, H200SnapshotFindsTheNicIrqs) {
  const FsRoot root(kFsroots / "h200x2");
  const auto s = take_snapshot(root);
  EXPECT_EQ(s.cpu_columns.size(), 32u);
  int nic_irqs = 0;
  for (const auto& r : s.irqs) {
    nic_irqs += r.is_nic && r.device == "eth0";
    EXPECT_FALSE(r.affinity.empty()) << "IRQ " << r.irq;
  }
  EXPECT_EQ(nic_irqs, 3);
  const auto back = snapshot_from_json(to_json(s));
  EXPECT_EQ(back.irqs.size(), s.irqs.size());
  EXPECT_TRUE(diff(s, back).irqs.empty());  // same counts: nothing happened
}

TEST(IrqFixture, H200PlanApplyResetOnACopy) {
  const fs::path copy = fs::temp_directory_path() / ("p2pscope-h200x2-" + std::to_string(::getpid()));
  fs::remove_all(copy);
  fs::copy(kFsroots / "h200x2", copy, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const auto before = read_tree(copy);
  const FsRoot root(copy);
  const auto t = load(copy);
  const auto plan = make_plan(t, {{"eth0"}, parse_cpulist("0-3")});
  expect_plan_properties(t, plan, {0, 1, 2, 3});
  const std::string backup = copy.string() + "-backup.json";
  const auto r = apply_plan(root, plan_from_json(to_json(plan)), false, backup);
  EXPECT_EQ(r.applied.size(), 3u);
  EXPECT_TRUE(r.refused.empty());
  EXPECT_NE(read_tree(copy), before);
  reset_from_backup(root, read_backup_file(backup), false);
  EXPECT_EQ(read_tree(copy), before);
  fs::remove(backup);
  fs::remove_all(copy);
}

TEST(IrqFixture, TwoSocketPlanProperties) {
  const fs::path dir = kFsroots / "two-socket";
  if (!fs::exists(dir)) GTEST_SKIP() << "fixture tests/fixtures/fsroot/two-socket not present yet";
  const auto t = load(dir);
  const auto p = make_plan(t, {.nics = {}, .reserve = parse_cpulist("0-1"), .style = "per-nic"});
  ASSERT_FALSE(p.nics.empty());
  std::set<int> reserved{0, 1};
  for (const auto& c : t.cpus)  // a reserved CPU takes its whole core out
    if (c.id == 0 || c.id == 1) reserved.insert(c.siblings.begin(), c.siblings.end());
  expect_plan_properties(t, p, reserved);
  std::set<int> nodes;
  for (const auto& n : p.nics) nodes.insert(n.numa);
  EXPECT_GE(nodes.size(), 2u) << "NICs on both nodes";
  // The NIC whose IRQs are served from the wrong node is a mismatch.
  EXPECT_FALSE(diff(IrqSnapshot{}, take_snapshot(FsRoot(dir))).mismatches.empty());
}
