// A crafted --root tree (issue 32, item 5): `irq apply --root TREE --yes` must write
// nothing outside TREE, whatever links the tree holds. The old FsRoot::write opened
// root/proc/irq/N/smp_affinity with open(2), following an absolute symlink (or one
// through "..") out of the tree: as root it overwrote a file elsewhere.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "p2pscope/error.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

using namespace p2pscope;
using namespace p2pscope::tune;
namespace fs = std::filesystem;

namespace {
const fs::path kH200 = fs::path(P2PSCOPE_FIXTURES_DIR) / "fsroot" / "h200x2";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

struct Crafted {
  fs::path base, tree, outside;
  explicit Crafted(const std::string& tag) {
    base = fs::temp_directory_path() / ("p2pscope-rootesc-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    tree = base / "tree";
    outside = base / "outside";
    fs::copy(kH200, tree, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  ~Crafted() { fs::remove_all(base); }
};

IrqPlan eth0_plan(const fs::path& root) {
  topo::DiscoverOptions o;
  o.use_nvml = false;
  const auto t = topo::discover(FsRoot(root), o);
  return plan_from_json(to_json(make_plan(t, {{"eth0"}, parse_cpulist("0-3")})));
}

}  // namespace

TEST(IrqRootEscape, ApplyWritesNothingThroughAnAbsoluteOrDotDotSymlink) {
  for (const bool absolute : {true, false}) {
    Crafted c(absolute ? "abs" : "rel");
    const auto plan = eth0_plan(c.tree);
    ASSERT_FALSE(plan.nics.empty());
    ASSERT_GE(plan.nics[0].irqs.size(), 2u);
    const int irq = plan.nics[0].irqs[0].irq;
    const fs::path attr = c.tree / "proc" / "irq" / std::to_string(irq) / "smp_affinity";
    const std::string mask = slurp(attr);
    {
      std::ofstream(c.outside) << mask;  // the victim holds what the attribute held: reads see no difference
    }
    fs::remove(attr);
    // "../../../.." climbs from tree/proc/irq/N to base.
    fs::create_symlink(absolute ? c.outside : fs::path("../../../../outside"), attr);
    const std::string before = slurp(c.outside);
    const ApplyResult r = apply_plan(FsRoot(c.tree), plan, false, (c.base / "backup.json").string());
    EXPECT_EQ(slurp(c.outside), before) << "irq apply wrote outside the tree through a symlink";
    bool refused = false;
    for (const auto& x : r.refused)
      if (x.irq == irq) {
        refused = true;
        EXPECT_NE(x.reason.find("symlink"), std::string::npos) << x.reason;
      }
    EXPECT_TRUE(refused) << "IRQ " << irq << " was not refused";
    EXPECT_FALSE(r.applied.empty());  // the other IRQs, plain files in the tree, were written
  }
}

TEST(IrqRootEscape, AWriteThroughASymlinkedDirectoryIsRefusedToo) {
  Crafted c("dir");
  fs::create_directories(c.base / "elsewhere");
  std::ofstream(c.base / "elsewhere" / "smp_affinity") << "f\n";
  fs::create_directories(c.tree / "proc" / "irq");
  fs::create_symlink(c.base / "elsewhere", c.tree / "proc" / "irq" / "9999");
  const FsRoot root(c.tree);
  EXPECT_THROW(root.write("/proc/irq/9999/smp_affinity", "1\n"), Error);
  EXPECT_EQ(slurp(c.base / "elsewhere" / "smp_affinity"), "f\n");
  root.write("/proc/irq/24/smp_affinity_list", "0-1\n");  // a plain file of the tree still is written
  EXPECT_EQ(slurp(c.tree / "proc" / "irq" / "24" / "smp_affinity_list"), "0-1\n");
}

// A 100 MB mask would have become hundreds of millions of CPU ids; masks are refused by
// their length and by the CPUs the tree has.
TEST(IrqRootEscape, HugeMasksAreRefusedNotExpanded) {
  std::string huge;
  for (int i = 0; i < 100000; ++i) huge += "ffffffff,";
  huge += "ffffffff";
  EXPECT_THROW(parse_cpumask(huge), UsageError);
  EXPECT_EQ(parse_cpumask("00000000,00000003", 8), (std::vector<int>{0, 1}));
  EXPECT_THROW(parse_cpumask("1,00000000", 8), UsageError);  // CPU 32 of an 8-CPU tree
  Crafted c("mask");
  const FsRoot root(c.tree);
  const int cpus = root.cpu_limit();
  EXPECT_GT(cpus, 1);
  EXPECT_LT(cpus, kMaxCpus);
}
