// irq apply and reset under --root that cannot be led out of the tree (issue 43 item 5).
// The old code opened the root again by path for every read and write (a root moved
// aside and replaced took all the writes), followed hard links (st_nlink > 1: the same
// file under another name, outside the tree), read the backup's files through symlinks
// and hard links (the backup held the bytes of a file outside the tree), and wrote the
// backup 0644 (world-readable).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "p2pscope/error.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

using namespace p2pscope;
using namespace p2pscope::tune;
namespace fs = std::filesystem;

namespace {
const fs::path kHoldTree = fs::path(P2PSCOPE_FIXTURES_DIR) / "fsroot" / "h200x2";

std::string hold_slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// base/tree (a copy of a captured machine) and room beside it for files "outside".
struct HoldTree {
  fs::path base, tree;
  explicit HoldTree(const std::string& tag) {
    base = fs::temp_directory_path() / ("p2pscope-rootheld-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    tree = base / "tree";
    fs::copy(kHoldTree, tree, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  ~HoldTree() { fs::remove_all(base); }
  fs::path attr(int irq, const char* name) const { return tree / "proc" / "irq" / std::to_string(irq) / name; }
};

IrqPlan hold_plan(const fs::path& root) {
  topo::DiscoverOptions o;
  o.use_nvml = false;
  const auto t = topo::discover(FsRoot(root), o);
  return plan_from_json(to_json(make_plan(t, {{"eth0"}, parse_cpulist("0-3")})));
}

// Every IRQ's two affinity files under `tree`, by path: what a write would change.
std::map<std::string, std::string> irq_files(const fs::path& tree) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(tree / "proc" / "irq"))
    if (e.is_regular_file()) out[fs::relative(e.path(), tree).string()] = hold_slurp(e.path());
  return out;
}

std::string refusal_of(const ApplyResult& r, int irq) {
  for (const auto& x : r.refused)
    if (x.irq == irq) return x.reason;
  return "";
}

// A umask of 022 for the test's life, so that a 0644 backup reads as such wherever it runs.
struct Umask022 {
  mode_t old = ::umask(022);
  ~Umask022() { ::umask(old); }
};

}  // namespace

// Before: the write went through the hard link and changed the file outside the tree.
TEST(IrqRootHold, AHardLinkedAttributeIsRefusedByNameAndItsOtherNameUntouched) {
  HoldTree t("hardlink");
  const auto plan = hold_plan(t.tree);
  ASSERT_FALSE(plan.nics.empty());
  ASSERT_GE(plan.nics[0].irqs.size(), 2u);
  const int irq = plan.nics[0].irqs[0].irq;
  const fs::path outside = t.base / "outside-mask";
  {
    std::ofstream(outside) << hold_slurp(t.attr(irq, "smp_affinity"));  // reads see the same mask
  }
  fs::remove(t.attr(irq, "smp_affinity"));
  fs::create_hard_link(outside, t.attr(irq, "smp_affinity"));
  const std::string before = hold_slurp(outside);
  const ApplyResult r = apply_plan(FsRoot(t.tree), plan, false, (t.base / "backup.json").string());
  EXPECT_EQ(hold_slurp(outside), before) << "irq apply wrote through a hard link to a file outside the tree";
  const std::string why = refusal_of(r, irq);
  EXPECT_NE(why.find("hard link"), std::string::npos) << "IRQ " << irq << " not refused as a hard link: '" << why << "'";
  EXPECT_FALSE(r.applied.empty());  // the plain files of the tree were written

  // reset: an attribute hard-linked after the apply is refused the same way.
  HoldTree u("hardlink-reset");
  const auto plan2 = hold_plan(u.tree);
  const std::string backup = (u.base / "backup.json").string();
  apply_plan(FsRoot(u.tree), plan2, false, backup);
  const fs::path outside2 = u.base / "outside-mask";
  {
    std::ofstream(outside2) << hold_slurp(u.attr(irq, "smp_affinity"));  // the applied mask: reset would change it
  }
  fs::remove(u.attr(irq, "smp_affinity"));
  fs::create_hard_link(outside2, u.attr(irq, "smp_affinity"));
  const std::string before2 = hold_slurp(outside2);
  const ApplyResult back = reset_from_backup(FsRoot(u.tree), read_backup_file(backup), false);
  EXPECT_EQ(hold_slurp(outside2), before2) << "irq reset wrote through a hard link to a file outside the tree";
  EXPECT_NE(refusal_of(back, irq).find("hard link"), std::string::npos) << refusal_of(back, irq);
}

// Before: every write opened root/proc/irq/N/... by path again, so the tree put at the
// root's path after it was opened (a rename, a symlink swap) took all of them.
TEST(IrqRootHold, ARootSwappedAfterItWasOpenedStillTakesEveryWrite) {
  HoldTree t("swap");
  const auto plan = hold_plan(t.tree);
  const FsRoot root(t.tree);  // opened here, as `irq apply --root` opens it at its start
  const fs::path opened = t.base / "opened";
  fs::rename(t.tree, opened);
  fs::copy(kHoldTree, t.tree, fs::copy_options::recursive | fs::copy_options::copy_symlinks);  // the decoy
  const auto decoy = irq_files(t.tree);
  const auto before = irq_files(opened);
  const ApplyResult r = apply_plan(root, plan, false, (t.base / "backup.json").string());
  EXPECT_TRUE(r.refused.empty()) << r.refused.front().reason;
  ASSERT_FALSE(r.applied.empty());
  EXPECT_EQ(irq_files(t.tree), decoy) << "writes landed in the directory now at the root's path";
  EXPECT_NE(irq_files(opened), before) << "the tree that was opened got no write";
  for (const auto& c : r.changes) {
    const auto mask = parse_cpumask(hold_slurp(opened / "proc" / "irq" / std::to_string(c.irq) / "smp_affinity"));
    EXPECT_EQ(mask, c.to_cpus) << "IRQ " << c.irq << " of the opened tree is not as planned";
  }
  // reset reads and writes the opened tree too.
  const FsRoot again(opened);
  fs::rename(opened, t.base / "opened-2");
  fs::create_directory_symlink(t.tree, opened);  // the decoy, behind a link at the path
  reset_from_backup(again, read_backup_file((t.base / "backup.json").string()), false);
  EXPECT_EQ(irq_files(t.tree), decoy) << "reset wrote into the directory now at the root's path";
  EXPECT_EQ(irq_files(t.base / "opened-2"), before) << "reset did not restore the tree it opened";
}

// Before: the backup copied whatever the tree's links led to (here smp_affinity_list and
// the hostname through symlinks, another list through a hard link, all to files outside
// the tree) into a 0644 file.
TEST(IrqRootHold, TheBackupIsPrivateAndHoldsNoByteFromOutsideTheTree) {
  const Umask022 umask_for_test;
  HoldTree t("backup");
  auto plan = hold_plan(t.tree);
  ASSERT_GE(plan.nics[0].irqs.size(), 3u);
  plan.hostname = "";  // the host check is not what this test is about
  const int a = plan.nics[0].irqs[0].irq, b = plan.nics[0].irqs[1].irq;
  const fs::path secret = t.base / "secret", secret2 = t.base / "secret2", secret3 = t.base / "secret3";
  std::ofstream(secret) << "SECRET-one-outside-the-tree\n";
  std::ofstream(secret2) << "SECRET-two-outside-the-tree\n";
  std::ofstream(secret3) << "SECRET-host\n";
  fs::remove(t.attr(a, "smp_affinity_list"));
  fs::create_symlink(secret, t.attr(a, "smp_affinity_list"));
  fs::remove(t.attr(b, "smp_affinity_list"));
  fs::create_hard_link(secret2, t.attr(b, "smp_affinity_list"));
  const fs::path host = t.tree / "proc" / "sys" / "kernel" / "hostname";
  fs::remove(host);
  fs::create_symlink(secret3, host);

  const fs::path backup = t.base / "backup.json";
  const ApplyResult r = apply_plan(FsRoot(t.tree), plan, false, backup.string());
  const std::string text = hold_slurp(backup);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find("SECRET"), std::string::npos) << "the backup holds bytes from outside the tree:\n" << text;
  struct stat st {};
  ASSERT_EQ(::stat(backup.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "backup mode " << std::oct << (st.st_mode & 0777);
  EXPECT_EQ(hold_slurp(secret), "SECRET-one-outside-the-tree\n");
  EXPECT_EQ(hold_slurp(secret2), "SECRET-two-outside-the-tree\n");
  EXPECT_NE(refusal_of(r, a).find("symlink"), std::string::npos) << refusal_of(r, a);
  EXPECT_NE(refusal_of(r, b).find("hard link"), std::string::npos) << refusal_of(r, b);
  EXPECT_FALSE(r.applied.empty());
}
