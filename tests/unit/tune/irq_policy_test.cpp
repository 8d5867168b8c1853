// irq plan's stated policy on the generated A3-high tree: NCCL's reference bindings
// exactly, the management NIC left out, IRQs left alone unless asked, and the knobs
// (--reserve, sizes, per-nic) still there.
#include <gtest/gtest.h>

#include <set>

#include "a3_tree.hpp"
#include "p2pscope/bindings.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

using namespace p2pscope;
using namespace p2pscope::tune;

namespace {
const topo::Topology& a3() {
  static const topo::Topology t = [] {
    topo::DiscoverOptions o;
    o.use_nvml = false;
    return topo::discover(FsRoot(test::a3_high_tree()), o);
  }();
  return t;
}
#define NEED_A3() \
  if (test::a3_high_tree().empty()) GTEST_SKIP() << "python3 missing: cannot generate the A3-high tree"

const char* kTx = "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177";
const char* kRx = "eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191";
}  // namespace

TEST(IrqPolicy, A3HighGivesNcclsReferenceStringsExactly) {
  NEED_A3();
  const auto& t = a3();
  ASSERT_EQ(t.cpus.size(), 208u);
  const auto p = make_plan(t, {.nics = {"eth1", "eth2", "eth3", "eth4"}, .plan_irqs = false});
  EXPECT_EQ(p.tx_bindings, kTx);
  EXPECT_EQ(p.rx_bindings, kRx);
  // The shares: 8 system cores, 14 TX, 14 RX, 16 for the application per node.
  ASSERT_EQ(p.nodes.size(), 2u);
  EXPECT_EQ(format_cpulist(p.nodes[0].system), "0-7,104-111");
  EXPECT_EQ(format_cpulist(p.nodes[0].application), "36-51,140-155");
  EXPECT_EQ(format_cpulist(p.nodes[1].system), "52-59,156-163");
  EXPECT_EQ(format_cpulist(p.nodes[1].application), "88-103,192-207");
  // IRQs stay where they are (NCCL's own behaviour), and the policy says so.
  for (const auto& n : p.nics) EXPECT_TRUE(n.irqs.empty()) << n.name;
  EXPECT_FALSE(p.irqs_planned);
  EXPECT_NE(p.policy.find("1/6"), std::string::npos) << p.policy;
  EXPECT_NE(p.policy.find("left at their defaults"), std::string::npos) << p.policy;
  // JSON carries the policy and the shares.
  const auto j = to_json(p);
  EXPECT_EQ(j["policy"], p.policy);
  EXPECT_EQ(j["nodes"][1]["tx"], "60-73,164-177");
  EXPECT_EQ(j["env"]["NCCL_GPUDIRECTTCPX_RX_BINDINGS"], kRx);
}

TEST(IrqPolicy, ManagementNicLeftOutByDefault) {
  NEED_A3();
  const auto& t = a3();
  EXPECT_EQ(management_nic(t), "eth0");  // default route, PHB to GPUs 0/1: no GPU behind its switch
  const auto p = make_plan(t, {});
  ASSERT_EQ(p.nics.size(), 4u);
  for (const auto& n : p.nics) EXPECT_NE(n.name, "eth0");
  ASSERT_EQ(p.excluded.size(), 1u);
  EXPECT_EQ(p.excluded[0].rfind("eth0: management NIC", 0), 0u) << p.excluded[0];
  EXPECT_EQ(p.tx_bindings, kTx);
  // Named, it is planned.
  const auto with = make_plan(t, {.nics = {"eth0", "eth1"}});
  EXPECT_EQ(with.nics[0].name, "eth0");
  // The NICs fit for NCCL_SOCKET_IFNAME leave it out too.
  const auto ifs = socket_interfaces(t);
  EXPECT_EQ(ifs, (std::vector<std::string>{"eth1", "eth2", "eth3", "eth4"}));
}

TEST(IrqPolicy, KnobsStayAvailable) {
  NEED_A3();
  const auto& t = a3();
  // --reserve replaces the system share: TX starts right after the reserved cores.
  const auto r = make_plan(t, {.nics = {"eth1"}, .reserve = parse_cpulist("0-3")});
  EXPECT_TRUE(r.nodes[0].system.empty());
  EXPECT_EQ(format_cpulist(r.nodes[0].reserved), "0-3,104-107");
  EXPECT_EQ(r.nics[0].tx_cpus.front(), 4);
  // Sizes.
  const auto s = make_plan(t, {.nics = {"eth1", "eth2"}, .tx_cores = 4, .rx_cores = 2});
  EXPECT_EQ(s.tx_bindings, "eth1:8-11,112-115;eth2:8-11,112-115");
  EXPECT_EQ(s.rx_bindings, "eth1:12-13,116-117;eth2:12-13,116-117");
  // Disjoint per NIC.
  const auto d = make_plan(t, {.nics = {"eth1", "eth2"}, .style = "per-nic"});
  std::set<int> seen;
  for (const auto& n : d.nics)
    for (const auto* v : {&n.tx_cpus, &n.rx_cpus})
      for (int c : *v) EXPECT_TRUE(seen.insert(c).second) << "CPU " << c << " shared in per-nic style";
  // Moving IRQs is an option: then every IRQ of the NIC gets one core of its sets.
  const auto m = make_plan(t, {.nics = {"eth3"}, .plan_irqs = true});
  ASSERT_EQ(m.nics[0].irqs.size(), 17u);
  for (const auto& i : m.nics[0].irqs)
    for (int c : i.cpus) EXPECT_EQ(t.numa_of_cpu(c), 1) << "IRQ " << i.irq << " to CPU " << c;
  EXPECT_THROW(make_plan(t, {.style = "round-robin"}), UsageError);
}

TEST(IrqPolicy, OnlyNicIsPlannedEvenWhenItCarriesTheDefaultRoute) {
  topo::DiscoverOptions o;
  o.use_nvml = false;
  const auto t = topo::discover(FsRoot(std::string(P2PSCOPE_FIXTURES_DIR) + "/fsroot/h100x1"), o);
  EXPECT_EQ(management_nic(t), "eth0");  // default route, PHB to the GPU
  const auto p = make_plan(t, {});
  ASSERT_EQ(p.nics.size(), 1u);
  EXPECT_EQ(p.nics[0].name, "eth0");
  EXPECT_TRUE(p.excluded.empty());
  EXPECT_FALSE(p.warnings.empty());
}
