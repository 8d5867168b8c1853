// A campaign measured by several processes one after the other (--processes K) or
// resumed: its clocks are fitted to every session's readings, kept in the campaign
// directory. Synthetic readings of a timer whose rate wanders (as an H100's did), so
// the truth is known: two sessions with a gap between them must be placed as tightly
// as one session spanning the same rows, where the last session's readings alone
// (the alignment before clock_readings-NNN.json) extrapolate the first one's rows.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "p2pscope/error.hpp"
#include "profile/alignment.hpp"
#include "profile/clock_readings.hpp"
#include "support/files.hpp"

using namespace p2pscope;
using namespace p2pscope::profile;

namespace {

constexpr std::int64_t kHost0 = 5'000'000'000'000;         // a host CLOCK_MONOTONIC epoch
constexpr std::int64_t kDev0 = 1'760'000'000'000'000'000;  // a %globaltimer epoch
constexpr std::int64_t kStep = 32;
constexpr std::int64_t kS = 1'000'000'000;

// ppm(t) = -6.8 + 0.4 t / 120 s, as on the H100.
std::int64_t device_at(double host) {
  const double t = host - static_cast<double>(kHost0);
  return kDev0 + static_cast<std::int64_t>(std::floor(t + 1e-6 * (-6.8 * t + 0.4 * t * t / (2 * 120e9))));
}

class Clock {
 public:
  // A burst of 16 pokes at host time `at`, each read somewhere in its 1.9-2.5 us bracket.
  void burst(TimerSamples& s, std::int64_t at) {
    std::uniform_real_distribution<double> u(0, 1);
    for (int k = 0; k < 16; ++k) {
      const auto before = at + k * 3'000;
      const auto bracket = static_cast<std::int64_t>(1'900 + 600 * u(rng_));
      const auto dev = device_at(static_cast<double>(before) + static_cast<double>(bracket) * (0.3 + 0.7 * u(rng_)));
      s.points.push_back({before + bracket / 2, dev / kStep * kStep, bracket});
    }
    s.step_ns = kStep;
    s.method = "synthetic";
  }
  // A drift window: a burst every 10 ms for `span`.
  DriftWindow window(std::int64_t from, std::int64_t span) {
    DriftWindow w;
    w.window_s = static_cast<double>(span) * 1e-9;
    for (std::int64_t t = from; t < from + span; t += 10'000'000) burst(w.samples[0], t);
    return w;
  }
  // The bursts every 0.25 s while measuring.
  DriftWindow during(std::int64_t from, std::int64_t to) {
    DriftWindow w;
    for (std::int64_t t = from; t <= to; t += 250'000'000) burst(w.samples[0], t);
    return w;
  }

 private:
  std::mt19937_64 rng_{11};
};

// Batch records of device 0, one every 50 ms from `from` to `to`: 20 us on the host,
// the GPU stamps 2 us inside.
void add_rows(std::vector<LogRow>& rows, std::int64_t from, std::int64_t to) {
  for (std::int64_t t = from + 1'000'000; t < to; t += 50'000'000) {
    LogRow r;
    r.config_id = 0;
    r.src = r.dst = 0;
    r.size_bytes = 1024;
    r.repetition = static_cast<int>(rows.size());
    r.backend = "ce";
    r.ts_start_ns = t;
    r.ts_end_ns = t + 20'000;
    r.duration_ns = 20'000;
    r.gpu_ts_start_ns = device_at(static_cast<double>(t + 2'000));
    r.gpu_ts_end_ns = device_at(static_cast<double>(t + 18'000));
    r.gpu_duration_ns = static_cast<double>(r.gpu_ts_end_ns - r.gpu_ts_start_ns);
    r.batch = 1;
    r.timing = "batch";
    rows.push_back(r);
  }
}

Plan one_config_plan(int reps) {
  Plan p;
  p.backends = {"ce"};
  p.devices = {0};
  p.sizes = {1024};
  p.reps = reps;
  p.configs = {{0, "ce", 0, 0, 1024}};
  p.order = {0};
  return p;
}

double bound_ns(const Alignment& a) { return a.report["alignment"]["offset_uncertainty_ns_max"].get<double>(); }

Alignment align(const DriftWindow& start, const DriftWindow& during, const DriftWindow& end,
                const std::vector<LogRow>& rows) {
  return align_clocks(
      "ce", start, during, end, one_config_plan(static_cast<int>(rows.size())), rows, [](int src, int) { return src; },
      0.0);
}

// Session A: start window at 0 s, measures 1-20 s, end window at 20.1 s; 4.3 s later
// (the next process starts, warms up) session B: start window at 25 s, measures
// 26-45 s, end window at 45.1 s. Each window is 0.67 s (--drift 2s over 3 processes).
struct TwoSessions {
  Clock clock;
  SessionReadings a, b;
  std::vector<LogRow> rows;
  TwoSessions() {
    const std::int64_t w = 670'000'000;
    a = {clock.window(kHost0, w), clock.during(kHost0 + 1 * kS, kHost0 + 20 * kS),
         clock.window(kHost0 + 20 * kS + kS / 10, w)};
    b = {clock.window(kHost0 + 25 * kS, w), clock.during(kHost0 + 26 * kS, kHost0 + 45 * kS),
         clock.window(kHost0 + 45 * kS + kS / 10, w)};
    add_rows(rows, kHost0 + 1 * kS, kHost0 + 20 * kS);
    add_rows(rows, kHost0 + 26 * kS, kHost0 + 45 * kS);
  }
};

}  // namespace

TEST(ClockSessions, TwoSessionsWithAGapAreBoundLikeOneSessionSpanningTheSameRows) {
  TwoSessions s;
  const MergedReadings m = merge_session_readings({{0, s.a}}, s.b);
  EXPECT_EQ(m.sessions, 2u);
  const Alignment merged = align(m.start, m.during, m.end, s.rows);

  // One process over the same rows: A's start window, bursts every 0.25 s through the gap, B's end window.
  Clock clock;
  const Alignment one = align(s.a.start, clock.during(kHost0 + 1 * kS, kHost0 + 45 * kS), s.b.end, s.rows);

  // What summaries() did before: the last session's readings alone.
  const Alignment last_only = align(s.b.start, s.b.during, s.b.end, s.rows);

  RecordProperty("merged_ns", std::to_string(bound_ns(merged)));
  RecordProperty("one_session_ns", std::to_string(bound_ns(one)));
  RecordProperty("last_session_only_ns", std::to_string(bound_ns(last_only)));
  ASSERT_EQ(merged.report["alignment"]["ops_checked"].get<std::size_t>(), s.rows.size());
  EXPECT_EQ(merged.report["alignment"]["causality_violations"].get<std::size_t>(), 0u);
  EXPECT_LE(bound_ns(one), 1'000.0);
  EXPECT_NEAR(bound_ns(merged), bound_ns(one), 0.1 * bound_ns(one))
      << "merged " << bound_ns(merged) << " ns, one session " << bound_ns(one) << " ns";
  // The goal (<= 1 us) is met with every session's readings and missed with the last one's
  // (here 0.40 vs 2.0 us; 0.41 us for one session).
  EXPECT_LE(bound_ns(merged), 1'000.0);
  EXPECT_GT(bound_ns(last_only), 1'000.0);
  EXPECT_GT(bound_ns(last_only), 4 * bound_ns(merged))
      << "last session only " << bound_ns(last_only) << " ns, merged " << bound_ns(merged) << " ns";

  // The merged map places session A's GPU stamps within its bound of the truth.
  const auto& map = merged.to_host.at(0);
  for (const auto& r : s.rows) {
    const double truth = static_cast<double>(r.ts_start_ns + 2'000);
    EXPECT_NEAR(map.host_of_device(r.ts_start_ns, r.gpu_ts_start_ns), truth,
                map.at(r.ts_start_ns).uncertainty_ns() + 5);
  }
}

TEST(ClockSessions, ReadingsRoundTripThroughTheCampaignDirectoryAndDamageIsNamed) {
  TwoSessions s;
  const auto dir = test::fresh_test_dir("p2pscope-clock");
  save_session_readings(dir.string(), 0, s.a);
  save_session_readings(dir.string(), 1, s.b);
  ASSERT_TRUE(std::filesystem::exists(dir / "clock_readings-000.json"));
  std::vector<std::string> notes;
  const auto others = load_other_session_readings(dir.string(), 1, notes);
  EXPECT_TRUE(notes.empty());
  ASSERT_EQ(others.size(), 1u);
  ASSERT_EQ(others.at(0).during.samples.at(0).points.size(), s.a.during.samples.at(0).points.size());
  const auto& p = others.at(0).during.samples.at(0).points[7];
  const auto& q = s.a.during.samples.at(0).points[7];
  EXPECT_EQ(p.host_ns, q.host_ns);
  EXPECT_EQ(p.device_ns, q.device_ns);  // ~1.76e18: must survive JSON exactly
  EXPECT_EQ(p.bracket_ns, q.bracket_ns);
  EXPECT_EQ(others.at(0).start.window_s, s.a.start.window_s);

  // A damaged file is left out with a note naming it; the others still load.
  std::ofstream(dir / "clock_readings-002.json") << "{\"start\": [1, 2";
  std::ofstream(dir / "clock_readings-x.json") << "not ours";
  notes.clear();
  const auto again = load_other_session_readings(dir.string(), 1, notes);
  EXPECT_EQ(again.size(), 1u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("clock_readings-002.json"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("session 2"), std::string::npos) << notes[0];
  std::filesystem::remove_all(dir);
}

TEST(ClockSessions, MergeTakesTheEarliestStartThisEndAndEverythingElseAsDuring) {
  TwoSessions s;
  // The order of the files does not decide which start is the campaign's.
  const MergedReadings m = merge_session_readings({{1, s.b}}, s.a);
  EXPECT_EQ(m.start.samples.at(0).points.front().host_ns, s.a.start.samples.at(0).points.front().host_ns);
  EXPECT_EQ(m.end.samples.at(0).points.front().host_ns, s.a.end.samples.at(0).points.front().host_ns);
  const auto n = [](const DriftWindow& w) { return w.samples.at(0).points.size(); };
  EXPECT_EQ(n(m.during), n(s.a.during) + n(s.b.during) + n(s.b.start) + n(s.b.end));
  // Alone, a session is its own readings.
  const MergedReadings alone = merge_session_readings({}, s.a);
  EXPECT_EQ(alone.sessions, 1u);
  EXPECT_EQ(n(alone.during), n(s.a.during));
}

// A resume after a reboot: CLOCK_MONOTONIC restarted, %globaltimer did not, so the earlier
// session's readings put the timer an hour away from this one's. Fitting them together
// would bend every piece near them; they are left out and the warning says why.
TEST(ClockSessions, ReadingsOfAnotherClockEpochAreLeftOutWithTheReason) {
  TwoSessions s;
  SessionReadings before_reboot = s.a;
  for (DriftWindow* w : {&before_reboot.start, &before_reboot.during, &before_reboot.end})
    for (auto& p : w->samples.at(0).points) p.host_ns += 3'600 * kS;
  const MergedReadings m = merge_session_readings({{4, before_reboot}}, s.b);
  EXPECT_EQ(m.sessions, 1u);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("session 4"), std::string::npos) << m.notes[0];
  EXPECT_NE(m.notes[0].find("reboot"), std::string::npos) << m.notes[0];
  EXPECT_EQ(m.during.samples.at(0).points.size(), s.b.during.samples.at(0).points.size());
  // Sessions of one epoch, 25 s and a few ppm apart, are kept.
  EXPECT_TRUE(merge_session_readings({{0, s.a}}, s.b).notes.empty());
}
