// Rates, grouping and bad-input handling on hand-built successive snapshot trees
// (tests/fixtures/monitor/basic/{t0,t1}; its README lists what changed).
#include <gtest/gtest.h>

#include <algorithm>

#include "monitor/collect.hpp"

using namespace p2pscope;
using namespace p2pscope::monitor;

namespace {
const std::string kBasic = std::string(P2PSCOPE_FIXTURES_DIR) + "/monitor/basic/";

bool has_note(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(), [&](const auto& n) { return n.find(part) != std::string::npos; });
}

struct Basic {
  FsRoot t0{kBasic + "t0"}, t1{kBasic + "t1"};
  Options opts = [] {
    Options o;
    o.gpus = false;
    o.ethtool = false;
    return o;
  }();
  Collector c{t0, opts};
  Snapshot a = c.collect(t0, 0, 1'000'000'000);
  Snapshot b = c.collect(t1, 1'000'000'000, 2'000'000'000);  // one second later
  Interval iv = diff(a, b, c, 100);
};

const CpuShare& cpu(const Interval& iv, int id) {
  for (const auto& c : iv.cpus)
    if (c.cpu == id) return c;
  throw std::runtime_error("no cpu " + std::to_string(id));
}
const NicRate* nic(const Interval& iv, const std::string& name) {
  for (const auto& n : iv.nics)
    if (n.name == name) return &n;
  return nullptr;
}
}  // namespace

TEST(MonitorParse, ProcStatSkipsAggregateAndMalformedLines) {
  const auto cpus = parse_proc_stat("cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 10 1 20 300 4 5 60 7 0 0\ncpu1 garbage\ncpu7 1 2 3 4 5 6 7\n");
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_EQ(cpus[0].cpu, 0);
  EXPECT_EQ(cpus[0].softirq, 60u);
  EXPECT_EQ(cpus[0].total(), 10u + 1 + 20 + 300 + 4 + 5 + 60 + 7);
  EXPECT_EQ(cpus[1].cpu, 7);  // an old kernel's 7-field line
  EXPECT_EQ(cpus[1].steal, 0u);
}

TEST(MonitorParse, TaskStatNameWithSpacesAndParens) {
  // comm "a) b" (spaces and ')' are legal in thread names); utime 14, stime 15, processor 39.
  std::string line = "4242 (a) b) S 1 2 3 4 5 6 7 8 9 10 170 30 0 0 20 0 1 0 100 200 300";
  for (int f = 25; f <= 38; ++f) line += " 0";
  line += " 9 0 0\n";
  const auto t = parse_task_stat(line);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tid, 4242);
  EXPECT_EQ(t->name, "a) b");
  EXPECT_EQ(t->utime, 170u);
  EXPECT_EQ(t->stime, 30u);
  EXPECT_EQ(t->last_cpu, 9);
  EXPECT_FALSE(parse_task_stat("garbage"));
}

TEST(MonitorFixture, CpuSharesFromTwoSnapshots) {
  Basic f;
  EXPECT_DOUBLE_EQ(cpu(f.iv, 2).softirq_pct, 70);
  EXPECT_DOUBLE_EQ(cpu(f.iv, 2).system_pct, 20);
  EXPECT_DOUBLE_EQ(cpu(f.iv, 2).busy_pct, 100);
  EXPECT_DOUBLE_EQ(cpu(f.iv, 3).softirq_pct, 72);
  EXPECT_DOUBLE_EQ(cpu(f.iv, 0).user_pct, 5);
  EXPECT_DOUBLE_EQ(cpu(f.iv, 0).busy_pct, 5);
  EXPECT_DOUBLE_EQ(cpu(f.iv, 1).busy_pct, 0);
  // Interrupts served per CPU: IRQ 30 +2000 and the new IRQ 32 +500 on CPU 2.
  EXPECT_DOUBLE_EQ(cpu(f.iv, 2).interrupts_per_s, 2500);
  EXPECT_DOUBLE_EQ(cpu(f.iv, 0).interrupts_per_s, 10);
}

TEST(MonitorFixture, IrqRatesGroupedByNic) {
  Basic f;
  std::map<int, IrqRate> by;
  for (const auto& r : f.iv.irqs) by[r.irq] = r;
  ASSERT_TRUE(by.count(30) && by.count(31) && by.count(40));
  EXPECT_FALSE(by.count(0));  // did not fire
  EXPECT_EQ(by[30].nic, "eth2");
  EXPECT_EQ(by[31].nic, "eth2");
  EXPECT_EQ(by[40].nic, "");  // nvme
  EXPECT_DOUBLE_EQ(by[31].per_s, 3000);
  ASSERT_EQ(by[31].per_cpu_per_s.size(), 1u);
  EXPECT_EQ(by[31].per_cpu_per_s[0].first, 3);
  // IRQ 32 appeared mid-run: matched to eth2 by name, counted from zero, noted.
  ASSERT_TRUE(by.count(32));
  EXPECT_EQ(by[32].nic, "eth2");
  EXPECT_DOUBLE_EQ(by[32].per_s, 500);
  EXPECT_TRUE(has_note(f.iv.notes, "IRQ 32 (eth2-rx-2) appeared"));
  const NicRate* eth2 = nic(f.iv, "eth2");
  ASSERT_TRUE(eth2);
  EXPECT_DOUBLE_EQ(eth2->irq_per_s, 5500);
}

TEST(MonitorFixture, NicRatesResetsAndDisappearance) {
  Basic f;
  const NicRate* eth2 = nic(f.iv, "eth2");
  ASSERT_TRUE(eth2);
  EXPECT_DOUBLE_EQ(eth2->per_s.at("rx_bytes"), 125e6);
  EXPECT_DOUBLE_EQ(eth2->per_s.at("tx_bytes"), 5000);
  EXPECT_EQ(eth2->delta.at("rx_dropped"), 1200u);
  // lo's rx_bytes went 5000 -> 100: a reset, counted as 100 and noted.
  const NicRate* lo = nic(f.iv, "lo");
  ASSERT_TRUE(lo);
  EXPECT_EQ(lo->delta.at("rx_bytes"), 100u);
  EXPECT_EQ(lo->delta.at("tx_bytes"), 100u);
  EXPECT_TRUE(has_note(f.iv.notes, "NIC lo statistics went backwards"));
  // eth3 vanished between the snapshots.
  EXPECT_EQ(nic(f.iv, "eth3"), nullptr);
  EXPECT_TRUE(has_note(f.iv.notes, "NIC eth3 disappeared"));
}

TEST(MonitorFixture, NicFilterKeepsOnlyNamedNics) {
  FsRoot t0(kBasic + "t0");
  Options o;
  o.gpus = o.ethtool = false;
  o.nics = {"eth2", "eth9"};
  Collector c(t0, o);
  EXPECT_TRUE(has_note(c.setup_notes(), "NIC eth9 not found"));
  const auto s = c.collect(t0, 0, 0);
  ASSERT_EQ(s.nics.size(), 1u);
  EXPECT_EQ(s.nics[0].name, "eth2");
}

// The CI failure of MonitorLive.LoopbackBytesShowInLoCounters: with --nics lo, a NIC
// whose IRQs fired during the run (the CI machine's eth0) entered the summary through
// its interrupts. IRQ lines stay (per-CPU load), but only wanted NICs are grouped.
TEST(MonitorFixture, NicFilterAlsoAppliesToIrqGrouping) {
  FsRoot t0(kBasic + "t0"), t1(kBasic + "t1");
  Options o;
  o.gpus = o.ethtool = false;
  o.nics = {"lo"};
  Collector c(t0, o);
  const Snapshot a = c.collect(t0, 0, 1'000'000'000);
  const Snapshot b = c.collect(t1, 1'000'000'000, 2'000'000'000);
  const Interval iv = diff(a, b, c, 100);
  std::map<int, IrqRate> by;
  for (const auto& r : iv.irqs) by[r.irq] = r;
  ASSERT_TRUE(by.count(30) && by.count(32));
  EXPECT_DOUBLE_EQ(by[30].per_s, 2000);
  EXPECT_EQ(by[30].nic, "");
  EXPECT_EQ(by[32].nic, "");  // appeared mid-run, still not grouped to eth2
  EXPECT_DOUBLE_EQ(cpu(iv, 2).interrupts_per_s, 2500);
  SummaryBuilder sb;
  sb.add(iv);
  const Summary s = sb.finish(1.0, 0);
  ASSERT_EQ(s.nics.size(), 1u);
  EXPECT_EQ(s.nics[0].name, "lo");
}

TEST(MonitorFixture, SummaryAndVerdicts) {
  Basic f;
  SummaryBuilder sb;
  sb.add(f.iv);
  // A GPU held at its power cap in 2 of 3 samples (0x4), one idle sample (0x1, harmless).
  nvml::GpuSample g;
  g.index = 3;
  g.temperature_c = 70;
  g.sm_clock_mhz = 1500;
  g.throttle_reasons = 0x4;
  Interval gpu_iv;
  gpu_iv.seconds = 0;
  gpu_iv.gpus = {g, g};
  gpu_iv.gpus[1].throttle_reasons = 0x1;
  sb.add_gpus({g});
  sb.add_gpus(gpu_iv.gpus);
  const Summary s = sb.finish(1.0, 0);
  const auto v = verdict_lines(s);
  auto has = [&](const std::string& line) { return std::find(v.begin(), v.end(), line) != v.end(); };
  EXPECT_TRUE(has("CPU-bound on CPUs 2-3 (softirq 71%, system 22%)")) << ::testing::PrintToString(v);
  EXPECT_TRUE(has("NIC eth2 dropped 1.2k packets (rx 1.2k, tx 0)")) << ::testing::PrintToString(v);
  EXPECT_TRUE(has("GPU 3 throttled: power cap (2 of 3 samples)")) << ::testing::PrintToString(v);
  // CPU 0 at 5% and lo are not worth a verdict.
  EXPECT_EQ(v.size(), 3u) << ::testing::PrintToString(v);

  const auto j = summary_to_json(s, 2);
  ASSERT_EQ(j["busiest_cpus"].size(), 2u);
  EXPECT_EQ(j["busiest_cpus"][0]["busy_pct"].get<double>(), 100);
  EXPECT_NEAR(j["softirq_pct_all_cpus"].get<double>(), (70 + 72) / 4.0, 1e-9);
  bool saw_eth2 = false;
  for (const auto& n : j["nics"])
    if (n["name"] == "eth2") {
      saw_eth2 = true;
      EXPECT_DOUBLE_EQ(n["irq_per_s"].get<double>(), 5500);
      EXPECT_DOUBLE_EQ(n["irq_per_s_by_cpu"]["2"].get<double>(), 2500);
      EXPECT_EQ(n["totals"]["rx_dropped"].get<int>(), 1200);
    }
  EXPECT_TRUE(saw_eth2);
  EXPECT_EQ(j["gpus"][0]["throttled_samples"]["power cap"].get<int>(), 2);
  EXPECT_EQ(j["verdicts"].size(), 3u);
  EXPECT_FALSE(j["notes"].empty());
}

TEST(MonitorFixture, CsvRowsAreLongFormat) {
  Basic f;
  std::string rows;
  append_csv_rows(f.iv, rows);
  EXPECT_NE(rows.find("2000000000,cpu2,softirq_pct,70.00\n"), std::string::npos);
  EXPECT_NE(rows.find("2000000000,irq31,cpu3_per_s,3000.0\n"), std::string::npos);
  EXPECT_NE(rows.find("2000000000,nic:eth2,rx_bytes_per_s,125000000.0\n"), std::string::npos);
  EXPECT_NE(rows.find("2000000000,nic:eth2,rx_dropped,1200\n"), std::string::npos);
  EXPECT_NE(rows.find("2000000000,nic:eth2,irq_per_s,5500.0\n"), std::string::npos);
  EXPECT_EQ(rows.find("irq0,"), std::string::npos);  // silent lines are left out
  // Every row has exactly four fields.
  std::size_t start = 0;
  while (start < rows.size()) {
    const auto end = rows.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    EXPECT_EQ(std::count(rows.begin() + static_cast<long>(start), rows.begin() + static_cast<long>(end), ','), 3)
        << rows.substr(start, end - start);
    start = end + 1;
  }
}

TEST(MonitorFixture, EmptyRootGivesNotesNotCrashes) {
  const auto dir = std::filesystem::temp_directory_path() / ("p2ps-mon-empty-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  FsRoot empty(dir);
  Options o;
  o.gpus = o.ethtool = false;
  Collector c(empty, o);
  const auto a = c.collect(empty, 0, 0);
  const auto b = c.collect(empty, 1'000'000'000, 1);
  const Interval iv = diff(a, b, c, 100);
  EXPECT_TRUE(iv.cpus.empty());
  EXPECT_TRUE(has_note(iv.notes, "/proc/stat unreadable"));
  std::filesystem::remove_all(dir);
}

TEST(MonitorFormat, Counts) {
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1200), "1.2k");
  EXPECT_EQ(format_count(5.6e6), "5.6M");
}

// Driver (ethtool -S) counters between two hand-made snapshots: deltas by name, a
// reset noted, a changed counter count or a driver that stopped answering skipped.
TEST(MonitorDriverCounters, DeltasResetsAndChangedCounts) {
  FsRoot t0(kBasic + "t0");
  Options o;
  o.gpus = o.ethtool = false;
  Collector c(t0, o);
  c.set_driver_names("eth2", {"rx_queue_0_packets", "tx_queue_0_packets", "rx_discards_phy"});
  auto snap = [](std::int64_t t, std::vector<std::uint64_t> driver, bool ok) {
    Snapshot s;
    s.mono_ns = s.real_ns = t;
    NicCounters n;
    n.name = "eth2";
    n.stats["rx_bytes"] = 1000;
    n.driver = std::move(driver);
    n.driver_ok = ok;
    s.nics.push_back(n);
    return s;
  };
  const Snapshot a = snap(0, {100, 5, 7}, true);
  const Snapshot b = snap(1'000'000'000, {300, 5, 9}, true);
  Interval iv = diff(a, b, c, 100);
  ASSERT_EQ(iv.nics.size(), 1u);
  EXPECT_EQ(iv.nics[0].driver_delta.at("rx_queue_0_packets"), 200u);
  EXPECT_EQ(iv.nics[0].driver_delta.count("tx_queue_0_packets"), 0u);  // did not move: left out
  EXPECT_EQ(iv.nics[0].driver_delta.at("rx_discards_phy"), 2u);
  EXPECT_TRUE(iv.notes.empty()) << ::testing::PrintToString(iv.notes);

  SummaryBuilder sb;
  sb.add(iv);
  // The driver reset its counters (module reload): new value taken as the increase, noted.
  const Snapshot reset = snap(2'000'000'000, {50, 1, 4}, true);
  iv = diff(b, reset, c, 100);
  EXPECT_EQ(iv.nics[0].driver_delta.at("rx_queue_0_packets"), 50u);
  EXPECT_TRUE(has_note(iv.notes, "NIC eth2 driver counters went backwards"));
  sb.add(iv);
  // Channels changed (4 counters now) and then the driver stopped answering: skipped.
  iv = diff(reset, snap(3'000'000'000, {1, 2, 3, 4}, true), c, 100);
  EXPECT_TRUE(iv.nics[0].driver_delta.empty());
  iv = diff(reset, snap(3'000'000'000, {}, false), c, 100);
  EXPECT_TRUE(iv.nics[0].driver_delta.empty());
  EXPECT_EQ(iv.nics[0].delta.at("rx_bytes"), 0u);  // the statistics counters still count
  sb.add(iv);
  const Summary s = sb.finish(1.0, 0);
  ASSERT_EQ(s.nics.size(), 1u);
  EXPECT_EQ(s.nics[0].driver_totals.at("rx_discards_phy"), 2u + 4u);
  EXPECT_TRUE(s.nics[0].driver_stats);
  const auto v = verdict_lines(s);
  EXPECT_NE(std::find(v.begin(), v.end(), "NIC eth2 driver counters moved: rx_discards_phy +6"), v.end())
      << ::testing::PrintToString(v);
}

// A NIC that disappears and comes back (driver reload): the interval without it is
// noted, the one it returns in is noted too, and counting resumes after that.
TEST(MonitorDriverCounters, NicGoneAndBack) {
  FsRoot t0(kBasic + "t0");
  Options o;
  o.gpus = o.ethtool = false;
  Collector c(t0, o);
  Snapshot with, without;
  NicCounters n;
  n.name = "eth9";
  n.stats["rx_bytes"] = 10;
  with.nics.push_back(n);
  without.mono_ns = 1'000'000'000;
  Interval iv = diff(with, without, c, 100);
  EXPECT_TRUE(iv.nics.empty());
  EXPECT_TRUE(has_note(iv.notes, "NIC eth9 disappeared"));
  with.mono_ns = 2'000'000'000;
  iv = diff(without, with, c, 100);
  EXPECT_TRUE(iv.nics.empty());
  EXPECT_TRUE(has_note(iv.notes, "NIC eth9 appeared"));
}
