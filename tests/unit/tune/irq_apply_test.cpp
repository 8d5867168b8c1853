// irq apply against a copied tree that fights back (issue 21 items 7 and 8): an
// existing backup is never replaced, and a fifo in the tree does not hang a dry run
// nor discovery.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/fifo.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"
#include "support/run_binary.hpp"
#include "read_tree.hpp"

using namespace p2pscope;
using namespace p2pscope::tune;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using p2pscope::test::read_tree;

namespace {
const fs::path kH200 = fs::path(P2PSCOPE_FIXTURES_DIR) / "fsroot" / "h200x2";

struct TreeCopy {
  fs::path dir;
  explicit TreeCopy(const std::string& tag) {
    dir = fs::temp_directory_path() / ("p2pscope-irqapply-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::copy(kH200, dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  ~TreeCopy() {
    fs::remove_all(dir);
    fs::remove(dir.string() + "-backup.json");
  }
};

IrqPlan eth0_plan(const fs::path& root) {
  topo::DiscoverOptions o;
  o.use_nvml = false;
  const auto t = topo::discover(FsRoot(root), o);
  return plan_from_json(to_json(make_plan(t, {{"eth0"}, parse_cpulist("0-3")})));
}

// Runs `f` on a thread; if it is still blocked after 5 s, opens the fifo's other
// end until it returns, so that a failing test ends instead of hanging ctest.
using p2pscope::test::finishes_without_help;
}  // namespace

// Before: the second apply replaced the backup with the first apply's affinities,
// and reset could no longer bring the machine's own back.
TEST(IrqApplyBackup, ASecondApplyNeverReplacesTheBackupAndResetStillRestoresTheOriginal) {
  TreeCopy copy("twice");
  const auto original = read_tree(copy.dir);
  const FsRoot root(copy.dir);
  const auto plan = eth0_plan(copy.dir);
  const std::string backup = copy.dir.string() + "-backup.json";
  ASSERT_EQ(apply_plan(root, plan, false, backup).applied.size(), 3u);
  const auto after_first = read_tree(copy.dir);
  std::ifstream in(backup);
  const std::string first_backup((std::istreambuf_iterator<char>(in)), {});
  try {
    apply_plan(root, plan, false, backup);
    FAIL() << "the second apply replaced " << backup;
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("already exists"), std::string::npos) << m;
    EXPECT_NE(m.find("irq reset --backup " + backup), std::string::npos) << m;
  }
  std::ifstream again(backup);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(again)), {}), first_backup);
  EXPECT_EQ(read_tree(copy.dir), after_first);  // refused before touching anything
  reset_from_backup(root, read_backup_file(backup), false);
  EXPECT_EQ(read_tree(copy.dir), original);
}

TEST(IrqApplyBackup, ABackupPathThatIsASymlinkIsNotWrittenThrough) {
  TreeCopy copy("link");
  const FsRoot root(copy.dir);
  const std::string backup = copy.dir.string() + "-backup.json";
  const fs::path victim = copy.dir / "victim";
  std::ofstream(victim) << "keep\n";
  fs::create_symlink(victim, backup);
  EXPECT_THROW(apply_plan(root, eth0_plan(copy.dir), false, backup), UsageError);
  std::ifstream in(victim);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "keep\n");
}

// Before: opening the fifo waited for a writer forever, in a dry run too.
TEST(IrqApplyHostileTree, AFifoInTheTreeDoesNotHangADryRunNorDiscovery) {
  TreeCopy copy("fifo");
  const auto plan = eth0_plan(copy.dir);
  ASSERT_FALSE(plan.nics.empty());
  ASSERT_FALSE(plan.nics[0].irqs.empty());
  const fs::path irq_file =
      copy.dir / "proc/irq" / std::to_string(plan.nics[0].irqs[0].irq) / "smp_affinity";
  fs::remove(irq_file);
  ASSERT_EQ(::mkfifo(irq_file.c_str(), 0600), 0);
  const FsRoot root(copy.dir);
  bool refused = false;
  EXPECT_TRUE(finishes_without_help(irq_file, O_WRONLY, [&] {
    try {
      apply_plan(root, plan, true);
    } catch (const Error&) {
      refused = true;  // the IRQ's affinity cannot be read: said, not waited for
    }
  })) << "irq apply --dry-run blocked on a fifo";
  EXPECT_TRUE(refused);

  const fs::path speed = copy.dir / "sys/class/net/eth0/speed";
  const fs::path real = fs::canonical(speed);
  fs::remove(real);
  ASSERT_EQ(::mkfifo(real.c_str(), 0600), 0);
  EXPECT_TRUE(finishes_without_help(real, O_WRONLY, [&] {
    topo::DiscoverOptions o;
    o.use_nvml = false;
    topo::discover(root, o);
  })) << "topo discovery blocked on a fifo";
}

// The CLI end to end: a named output is not replaced without --force, and --force
// replaces a symlink planted there instead of writing through it.
TEST(IrqCliOutputs, PlanOutRefusesAnExistingFileUnlessForcedAndNeverFollowsALink) {
  const fs::path out = fs::temp_directory_path() / ("p2pscope-irqplan-" + std::to_string(::getpid()) + ".json");
  const fs::path victim = out.string() + ".victim";
  fs::remove(out);
  const std::string cmd = "irq plan --root " + kH200.string() + " --format json --out " + out.string();
  auto r = test::run_binary(cmd);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto first = fs::file_size(out);
  std::ofstream(out, std::ios::trunc) << "mine\n";
  r = test::run_binary(cmd);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("already exists"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--force"), std::string::npos) << r.out;
  std::ifstream mine(out);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(mine)), {}), "mine\n");
  fs::remove(out);
  std::ofstream(victim) << "precious\n";
  fs::create_symlink(victim, out);
  r = test::run_binary(cmd + " --force");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::is_symlink(out));
  EXPECT_EQ(fs::file_size(out), first);
  std::ifstream v(victim);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(v)), {}), "precious\n");
  fs::remove(out);
  fs::remove(victim);
}

TEST(IrqCliOutputs, ApplyTwiceWithOneBackupNameIsRefusedBeforeAnyChange) {
  TreeCopy copy("cli");
  const fs::path plan = copy.dir.string() + "-plan.json";
  const std::string backup = copy.dir.string() + "-backup.json";
  auto r = test::run_binary("irq plan --root " + copy.dir.string() + " --nics eth0 --reserve 0-3 --format json --out " +
                            plan.string());
  ASSERT_EQ(r.code, 0) << r.out;
  r = test::run_binary("irq apply " + plan.string() + " --yes --root " + copy.dir.string() + " --backup " + backup);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto after_first = read_tree(copy.dir);
  r = test::run_binary("irq apply " + plan.string() + " --yes --root " + copy.dir.string() + " --backup " + backup);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("already exists"), std::string::npos) << r.out;
  EXPECT_EQ(read_tree(copy.dir), after_first);
  fs::remove(plan);
}

// issue 32 item 15: the table says what happened (a refused IRQ kept its CPUs: REFUSED,
// not "yes"), and reset does not fail (exit 3) on an IRQ that never changed. A list file
// turned into a directory makes the tree refuse writes to that IRQ, as root too.
TEST(IrqCliOutputs, ARefusedIrqIsSaidAsRefusedAndResetPassesOverOneThatNeverChanged) {
  TreeCopy copy("refused");
  const fs::path plan = copy.dir.string() + "-plan.json";
  const std::string backup = copy.dir.string() + "-backup.json";
  auto r = test::run_binary("irq plan --root " + copy.dir.string() + " --nics eth0 --reserve 0-3 --move-irqs --format json --out " +
                            plan.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const IrqPlan p = plan_from_json(nlohmann::json::parse(std::ifstream(plan)));
  ASSERT_GE(p.nics.size(), 1u);
  ASSERT_GE(p.nics[0].irqs.size(), 2u);
  const int bad = p.nics[0].irqs[0].irq, same = p.nics[0].irqs[1].irq;
  const fs::path irq = copy.dir / "proc" / "irq";
  // `bad` refuses every write; `same` already has the plan's CPUs and refuses too.
  fs::remove(irq / std::to_string(bad) / "smp_affinity_list");
  fs::create_directory(irq / std::to_string(bad) / "smp_affinity_list");
  std::ofstream(irq / std::to_string(same) / "smp_affinity", std::ios::trunc)
      << format_cpumask(p.nics[0].irqs[1].cpus) << "\n";
  fs::remove(irq / std::to_string(same) / "smp_affinity_list");
  fs::create_directory(irq / std::to_string(same) / "smp_affinity_list");

  r = test::run_binary("irq apply " + plan.string() + " --yes --root " + copy.dir.string() + " --backup " + backup);
  EXPECT_EQ(r.code, 3) << r.out;
  bool said = false;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first != std::to_string(bad)) continue;
    EXPECT_NE(line.find("REFUSED"), std::string::npos) << line;
    EXPECT_EQ(line.find(" yes"), std::string::npos) << line;
    said = true;
  }
  EXPECT_TRUE(said) << r.out;

  // Reset: `same` never changed, so its refusal is no failure; `bad`'s mask was written
  // before its list failed, so restoring it is refused, said, exit 3. Drop `bad` from the
  // backup to see `same` alone.
  auto b = read_backup_file(backup);
  std::erase_if(b.entries, [&](const IrqBackup::Entry& e) { return e.irq == bad; });
  const auto reset = reset_from_backup(FsRoot(copy.dir), b, false);
  for (const auto& x : reset.refused) EXPECT_NE(x.irq, same) << x.reason;
  fs::remove(plan);
}
