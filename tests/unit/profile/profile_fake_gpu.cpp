// The campaign's clock and batch paths end to end, on a test double of a GPU whose
// truth is known: its timer runs at host CLOCK_MONOTONIC + 1 ms + 3 ppm, a poke's
// reading lies inside the host's bracket as a real poke's does, and a transfer costs
// 2 us in a batch but 10 us alone (launch overhead). A correct GPU must give 0
// causality violations and a bound under 1 us; one whose stamps are 20 us early (the
// bug seen on an H100) must be caught on every op; batches must span the minimum.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/profile.hpp"
#include "profile/alignment.hpp"
#include "profile/execution_log.hpp"
#include "profile/thermal.hpp"
#include "support/campaign.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;
using namespace p2pscope;
using namespace p2pscope::bench;

namespace {

class FakeGpu final : public Backend, public DeviceTimer {
 public:
  explicit FakeGpu(std::int64_t stamp_bias_ns, bool timer_readable = true, bool faster_after_large = false)
      : bias_(stamp_bias_ns), readable_(timer_readable), faster_after_large_(faster_after_large), t0_(monotonic_ns()) {}
  std::string name() const override { return "fake-gpu"; }
  BackendCaps capabilities() const override { return kGpuCaps; }
  int device_count() const override { return 2; }
  std::string device_name(int d) const override { return "fake GPU " + std::to_string(d); }
  PairSupport support(int, int) const override { return {}; }
  void prepare(const std::vector<int>&, std::uint64_t) override {}
  BatchResult run_batch(const BatchSpec&) override {
    BatchResult r;
    r.elapsed_ns = {1000.0};
    return r;
  }
  OpTiming run_blocking(int s, int d, std::uint64_t n) override { return run_blocking_batch(s, d, n, 1); }
  OpTiming run_blocking_batch(int, int, std::uint64_t n, int count) override {
    // Optionally a path with state: transfers right after a large one cost 1.9 us, not 2.
    const double base = faster_after_large_ && last_large_ ? 1'900.0 : 2'000.0;
    last_large_ = n >= (1u << 20);
    const double gpu_ns = (count == 1 ? 8'000.0 : 0.0) + count * (base + static_cast<double>(n) / 100.0);
    OpTiming t;
    t.host_start_ns = monotonic_ns();
    // The GPU starts 300 ns after the host issues and ends 300 ns before the host sees it.
    const std::int64_t gpu_start = t.host_start_ns + 300;
    const auto gpu_end = gpu_start + static_cast<std::int64_t>(gpu_ns);
    while (monotonic_ns() < gpu_end + 300) {}
    t.host_end_ns = monotonic_ns();
    t.device_duration_ns = gpu_ns;
    t.device_start_ns = timer_at(gpu_start) - bias_;
    t.device_end_ns = timer_at(gpu_end) - bias_;
    return t;
  }
  std::int64_t verify(int, int, std::uint64_t) override { return -1; }
  DeviceTimer* device_timer() override { return this; }
  TimerReading read_device_timer(int d) override {
    const TimerBurst b = read_device_timer_burst(d, 1);
    return b.readings.empty() ? TimerReading{} : b.readings[0];
  }
  TimerBurst read_device_timer_burst(int, int count) override {
    TimerBurst b;
    if (!readable_) {
      b.note = "fake: the timer cannot be read";
      return b;
    }
    b.method = "fake poke";
    b.step_ns = 32;
    for (int i = 0; i < count; ++i) {
      TimerReading r;
      r.host_before_ns = monotonic_ns();
      while (monotonic_ns() < r.host_before_ns + 400) {}
      r.device_ns = timer_at(monotonic_ns()) / 32 * 32;
      while (monotonic_ns() < r.host_before_ns + 800) {}
      r.host_after_ns = monotonic_ns();
      b.readings.push_back(r);
    }
    return b;
  }

 private:
  std::int64_t timer_at(std::int64_t host_ns) const {
    return host_ns + 1'000'000 + (host_ns - t0_) * 3 / 1'000'000;
  }
  std::int64_t bias_;
  bool readable_, faster_after_large_, last_large_ = false;
  std::int64_t t0_;
};

struct Campaign {
  nlohmann::json drift, meta, trace;
  std::vector<profile::LogRow> rows;
};

Campaign run(std::int64_t bias_ns, const std::string& tag, bool timer_readable = true, bool faster_after_large = false) {
  const fs::path dir = test::fresh_temp_dir("p2pscope_fakegpu", tag, false);
  profile::Params p = test::small_campaign_params(dir, "fake-gpu");
  p.make_backend = [bias_ns, timer_readable, faster_after_large](const std::string&) {
    return std::make_unique<FakeGpu>(bias_ns, timer_readable, faster_after_large);
  };
  p.min_sample_ns = 50'000;
  const auto r = profile::run_campaign(p);
  EXPECT_TRUE(r.complete);
  Campaign c;
  c.drift = nlohmann::json::parse(std::ifstream(dir / "clock_drift.json"));
  c.meta = nlohmann::json::parse(std::ifstream(dir / "metadata.json"));
  c.rows = profile::read_log((dir / "execution_log.csv").string()).rows;
  c.trace = nlohmann::json::parse(std::ifstream(dir / "trace.json"));
  fs::remove_all(dir);
  return c;
}

}  // namespace

TEST(FakeGpuCampaign, ACorrectTimerPassesEveryOpWithinAMicrosecond) {
  const Campaign c = run(0, "ok");
  const auto& a = c.drift["alignment"];
  EXPECT_EQ(a["ops_checked"], 18);
  EXPECT_EQ(a["causality_violations"], 0);
  EXPECT_LE(a["offset_uncertainty_ns_max"].get<double>(), 1000.0) << c.drift.dump(1);
  EXPECT_TRUE(a["unaligned_devices"].empty());
  ASSERT_EQ(c.drift["devices"].size(), 2u);
  EXPECT_GE(c.drift["devices"][0]["clock_map"]["sync_bursts_during_run"].get<int>(), 1);
  // metadata.json carries each GPU's bound too.
  ASSERT_EQ(c.meta["clock_alignment"]["per_device"].size(), 2u);
  for (const auto& d : c.meta["clock_alignment"]["per_device"]) {
    EXPECT_EQ(d["ops_checked"], 9);
    EXPECT_LE(d["offset_uncertainty_ns"].get<double>(), 1000.0);
  }
}

TEST(FakeGpuCampaign, StampsTwentyMicrosecondsEarlyAreCaughtOnEveryOp) {
  const Campaign c = run(20'000, "biased");
  const auto& a = c.drift["alignment"];
  EXPECT_EQ(a["ops_checked"], 18);
  EXPECT_EQ(a["causality_violations"], 18);
  EXPECT_GT(a["worst_violation_ns"].get<double>(), 15'000.0);
  bool said = false;
  for (const auto& w : c.meta["warnings"]) said = said || w.get<std::string>().find("not the hardware") != std::string::npos;
  EXPECT_TRUE(said) << c.meta["warnings"].dump();
}

TEST(FakeGpuCampaign, BatchesAreSizedFromTheBatchAndSpanTheMinimum) {
  // Alone a 1-byte transfer takes 10 us (5 would do), in a batch 2 us: 25 are needed.
  const Campaign c = run(0, "batch");
  for (const auto& r : c.rows) {
    EXPECT_EQ(r.timing, "batch");
    if (r.size_bytes == 1) {
      EXPECT_EQ(r.batch, 25);
    }
    if (r.batch > 1) {
      EXPECT_GE(r.gpu_duration_ns, 50'000.0) << r.size_bytes << " B x " << r.batch;
    }
  }
}

TEST(FakeGpuCampaign, ATimerThatCannotBeReadLeavesTheLaneUnalignedNotGuessed) {
  const Campaign c = run(0, "notimer", false);
  EXPECT_EQ(c.rows.size(), 18u) << "the campaign still measures";
  const auto& a = c.drift["alignment"];
  EXPECT_EQ(a["ops_checked"], 0);
  ASSERT_EQ(a["unaligned_devices"].size(), 2u);
  EXPECT_NE(a["unaligned_devices"]["0"].get<std::string>().find("cannot be read"), std::string::npos);
  int unaligned_lanes = 0, unaligned_events = 0;
  for (const auto& e : c.trace["traceEvents"]) {
    if (e["ph"] == "M" && e["args"]["name"].get<std::string>().find("UNALIGNED") != std::string::npos) ++unaligned_lanes;
    if (e["ph"] == "X" && e["args"].contains("aligned") && e["args"]["aligned"] == false) ++unaligned_events;
  }
  EXPECT_EQ(unaligned_lanes, 2);
  EXPECT_EQ(unaligned_events, 18);
  bool said = false;
  for (const auto& w : c.meta["warnings"]) said = said || w.get<std::string>().find("alignment unavailable") != std::string::npos;
  EXPECT_TRUE(said) << c.meta["warnings"].dump();
}

TEST(FakeGpuCampaign, EachBatchIsTimedInItsOwnStateNotTheOneTheShuffleLeft) {
  // The shuffled order puts small configs after the 1 MiB ones in some repetitions;
  // the unlogged batch before each record means every small record sees its own state.
  const Campaign c = run(0, "state", true, true);
  std::size_t small = 0;
  for (const auto& r : c.rows) {
    if (r.size_bytes >= (1u << 20)) continue;
    ++small;
    EXPECT_NEAR(r.per_transfer_ns(), 2'000.0 + static_cast<double>(r.size_bytes) / 100.0, 0.01)
        << r.size_bytes << " B rep " << r.repetition << " was timed in the state a large transfer left";
  }
  EXPECT_EQ(small, 12u);
  EXPECT_TRUE(c.meta["timing"].contains("prewarm"));
}

// --processes 3 as the parent runs it: three sessions one after the other, the later two
// resuming. Each keeps its clock readings in the campaign directory, and the last one's
// alignment fits all three (before, it fitted its own and extrapolated the others' rows).
TEST(FakeGpuCampaign, ASplitCampaignIsAlignedWithEverySessionsReadings) {
  const fs::path dir = test::fresh_temp_dir("p2pscope_fakegpu", "sessions", false);
  const auto backend = [](const std::string&) { return std::make_unique<FakeGpu>(0); };
  profile::Params first = test::small_campaign_params(dir, "fake-gpu");
  first.make_backend = backend;
  first.min_sample_ns = 50'000;
  first.share = {0, 3};
  profile::run_campaign(first);
  for (int i = 1; i < 3; ++i) {
    profile::Params p;
    p.argv = first.argv;
    p.resume_dir = dir.string();
    p.drift_s = 0;
    p.temp_interval_s = 0;
    p.make_backend = backend;
    p.min_sample_ns = 50'000;
    p.share = {i, 3};
    const auto r = profile::run_campaign(p);
    EXPECT_EQ(r.complete, i == 2);
  }
  for (const char* f : {"clock_readings-000.json", "clock_readings-001.json", "clock_readings-002.json"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  const auto drift = nlohmann::json::parse(std::ifstream(dir / "clock_drift.json"));
  EXPECT_EQ(drift["sessions_with_readings"], 3);
  EXPECT_EQ(drift["sessions_in_log"], 3);
  const auto& a = drift["alignment"];
  EXPECT_EQ(a["ops_checked"], 18);
  EXPECT_EQ(a["causality_violations"], 0);
  EXPECT_LE(a["offset_uncertainty_ns_max"].get<double>(), 1000.0) << drift.dump(1);
  // The first session's start window is the campaign's: its bursts are among the readings.
  const auto first_readings = nlohmann::json::parse(std::ifstream(dir / "clock_readings-000.json"));
  EXPECT_FALSE(first_readings["start"]["devices"]["0"]["points"].empty());
  EXPECT_GE(drift["devices"][0]["clock_map"]["pieces_with_ops"].get<int>(), 3) << drift["devices"][0].dump(1);
  fs::remove_all(dir);
}

// A backend that offers no timer and no heater (host memory): the drift window names
// each device "no device timer", as before these became optional parts, and the
// warm-up has nothing to heat, so it returns at once instead of running its time.
TEST(FakeGpu, ABackendWithoutATimerOrHeaterIsSkippedWithTheReason) {
  auto host = make_backend("host");
  ASSERT_EQ(host->device_timer(), nullptr);
  const auto w = profile::measure_drift(*host, {0}, 0.5, nullptr);
  EXPECT_TRUE(w.samples.empty());
  EXPECT_EQ(w.no_timer.at(0), "no device timer");
  const auto heat = profile::heat_until(*host, nullptr, {}, {0}, 80, 30, nullptr);
  EXPECT_LT(heat.seconds, 5.0);
  // The fake GPU offers a timer: its window has readings.
  FakeGpu gpu(0);
  const auto g = profile::measure_drift(gpu, {0, 1}, 0, nullptr);
  EXPECT_EQ(g.samples.size(), 2u);
  EXPECT_TRUE(g.no_timer.empty());
}
