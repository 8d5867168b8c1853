// The sampler's own /proc/interrupts parser and file reads must agree with the
// reference parser (topo::parse_interrupts) and FsRoot on real captured trees.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "monitor/fast_read.hpp"

using namespace p2pscope;

namespace {
void expect_same(const std::string& text, const std::string& what) {
  const topo::InterruptTable ref = topo::parse_interrupts(text);
  topo::InterruptTable fast;
  fast.irqs.push_back({});  // stale content is replaced
  monitor::parse_interrupt_counts(text, fast);
  EXPECT_EQ(fast.cpu_columns, ref.cpu_columns) << what;
  ASSERT_EQ(fast.irqs.size(), ref.irqs.size()) << what;
  for (std::size_t i = 0; i < ref.irqs.size(); ++i) {
    const auto& a = fast.irqs[i];
    const auto& b = ref.irqs[i];
    EXPECT_EQ(a.irq, b.irq) << what;
    EXPECT_EQ(a.per_cpu, b.per_cpu) << what << " irq " << b.irq;
    EXPECT_EQ(a.chip, b.chip) << what << " irq " << b.irq;
    EXPECT_EQ(a.name, b.name) << what << " irq " << b.irq;
    EXPECT_TRUE(a.cpu_columns.empty());
  }
  EXPECT_EQ(fast.malformed_lines, ref.malformed_lines) << what;
}
}  // namespace

TEST(MonitorFastRead, InterruptsMatchTopoParserOnFixturesAndThisMachine) {
  const std::string fx = P2PSCOPE_FIXTURES_DIR;
  int trees = 0;
  for (const char* tree : {"/fsroot/h200x2", "/fsroot/two-socket", "/fsroot/cpu-vm", "/monitor/basic/t0", "/monitor/basic/t1"}) {
    FsRoot fs(fx + tree);
    std::string text;
    ASSERT_TRUE(monitor::read_into(fs, "/proc/interrupts", text)) << tree;
    EXPECT_EQ(text, *fs.read("/proc/interrupts"));
    expect_same(text, tree);
    ++trees;
  }
  EXPECT_EQ(trees, 5);
  std::string live;
  if (monitor::read_into(FsRoot("/"), "/proc/interrupts", live)) expect_same(live, "/proc/interrupts");
}

TEST(MonitorFastRead, TornAndDamagedLines) {
  const std::string text =
      "           CPU0       CPU2\n"
      "  5:         10         20   IO-APIC   5-edge      eth1-rx-0\n"
      "  6:         10\n"                       // torn: fewer counts than columns
      " 7x:          1          2   IO-APIC   7-edge   x\n"  // damaged number
      "  8:         1a          2   IO-APIC   8-edge   y\n"  // damaged count
      "  9: 99999999999999999999999 1 IO-APIC 9-edge z\n"     // overflows u64
      "NMI:          0          0   Non-maskable interrupts\n"
      "garbage without a colon\n"
      " 10:          3          4   PCI-MSIX-0000:17:00.0  1-edge  mlx5_comp0@pci:0000:17:00.0\n";
  expect_same(text, "damaged");
  topo::InterruptTable t;
  monitor::parse_interrupt_counts(text, t);
  ASSERT_EQ(t.irqs.size(), 2u);
  EXPECT_EQ(t.cpu_columns, (std::vector<int>{0, 2}));
  EXPECT_EQ(t.irqs[1].name, "mlx5_comp0@pci:0000:17:00.0");
  EXPECT_EQ(t.malformed_lines, 5);
}

TEST(MonitorFastRead, SmallCounterFiles) {
  const std::string fx = std::string(P2PSCOPE_FIXTURES_DIR) + "/monitor/basic/t1";
  FsRoot fs(fx);
  const auto v = monitor::read_u64(fs, "/sys/class/net/eth2/statistics/rx_bytes");
  ASSERT_TRUE(v);
  EXPECT_EQ(static_cast<std::int64_t>(*v), *fs.read_int("/sys/class/net/eth2/statistics/rx_bytes"));
  EXPECT_FALSE(monitor::read_u64(fs, "/sys/class/net/eth9/statistics/rx_bytes"));
  std::string out = "stale";
  EXPECT_FALSE(monitor::read_into(fs, "/no/such/file", out));
}

TEST(MonitorFastRead, FileCacheKeepsLiveFilesOpenAndSweepsUnused) {
  const FsRoot live("/");
  monitor::FileCache cache(true);
  std::string a, b;
  ASSERT_TRUE(cache.read(live, "/proc/stat", a));
  ASSERT_TRUE(cache.read(live, "/proc/stat", b));  // the same fd, read again from offset 0
  EXPECT_EQ(a.rfind("cpu ", 0), 0u);
  EXPECT_EQ(b.rfind("cpu ", 0), 0u);
  EXPECT_EQ(cache.open_files(), 1u);
  // A counter file rewritten in place is re-read through the kept fd.
  const std::string path = "/tmp/p2ps-filecache-" + std::to_string(getpid());
  { std::ofstream(path) << "41\n"; }
  EXPECT_EQ(cache.read_u64(live, path), std::optional<std::uint64_t>(41));
  { std::ofstream(path) << "42\n"; }
  EXPECT_EQ(cache.read_u64(live, path), std::optional<std::uint64_t>(42));
  EXPECT_EQ(cache.open_files(), 2u);
  EXPECT_FALSE(cache.read(live, "/no/such/file", a));
  cache.sweep();  // both were read since the last sweep: kept
  EXPECT_EQ(cache.open_files(), 2u);
  ASSERT_TRUE(cache.read(live, "/proc/stat", a));
  cache.sweep();  // the counter file was not: closed
  EXPECT_EQ(cache.open_files(), 1u);
  std::remove(path.c_str());
  // A captured tree is never kept open (its files are replaced, not regenerated).
  monitor::FileCache fixture_cache(true);
  const FsRoot fx(std::string(P2PSCOPE_FIXTURES_DIR) + "/monitor/basic/t1");
  ASSERT_TRUE(fixture_cache.read(fx, "/proc/stat", a));
  EXPECT_EQ(fixture_cache.open_files(), 0u);
}
