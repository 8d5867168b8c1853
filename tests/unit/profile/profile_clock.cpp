// The clock sync's bounds, the causality check and batch sizing, on synthetic timer
// data whose truth is known: a biased mapping must be caught, a correct one pass.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "p2pscope/error.hpp"
#include "profile/batching.hpp"
#include "profile/causality.hpp"
#include "profile/clock_map.hpp"
#include "profile/drift.hpp"

using namespace p2pscope;
using namespace p2pscope::profile;

namespace {

constexpr std::int64_t kHost0 = 5'000'000'000'000;            // a host CLOCK_MONOTONIC epoch
constexpr std::int64_t kDev0 = 1'760'000'000'000'000'000;     // a %globaltimer epoch
constexpr double kPpm = 2.5;
constexpr std::int64_t kStep = 32;

// The true device time at a host time (integer: a double holds ~1.8e18 only to 256 ns).
std::int64_t true_device(double host) {
  return kDev0 + static_cast<std::int64_t>(std::floor((host - static_cast<double>(kHost0)) * (1 + kPpm * 1e-6)));
}

// Pokes as device_clock.cpp takes them: the GPU reads its timer (quantised to kStep)
// somewhere inside the host's bracket of `bracket_lo`..`bracket_hi` ns.
std::vector<TimerPoint> pokes(std::mt19937_64& rng, std::int64_t start, double span_ns, int n, double bracket_lo,
                              double bracket_hi) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<TimerPoint> pts;
  for (int i = 0; i < n; ++i) {
    const std::int64_t before = start + static_cast<std::int64_t>(span_ns * i / n);
    const std::int64_t bracket = static_cast<std::int64_t>(bracket_lo + (bracket_hi - bracket_lo) * u(rng));
    const double at = static_cast<double>(before) + static_cast<double>(bracket) * (0.3 + 0.7 * u(rng));
    const auto dev = true_device(at) / kStep * kStep;
    pts.push_back({before + bracket / 2, dev, bracket});
  }
  return pts;
}

}  // namespace

TEST(ClockSync, PokesBoundTheOffsetWithinAMicrosecondAndTheTruthLiesInside) {
  std::mt19937_64 rng(7);
  auto pts = pokes(rng, kHost0, 30e9, 400, 900, 2500);                // start window, 30 s
  const auto end = pokes(rng, kHost0 + 90'000'000'000, 30e9, 400, 900, 2500);  // end window
  pts.insert(pts.end(), end.begin(), end.end());
  const DriftFit f = fit_timer_points(pts, false, kStep);
  ASSERT_TRUE(f.ok);
  ASSERT_TRUE(f.bounded);
  EXPECT_NEAR(f.ppm(), kPpm, 0.01);
  EXPECT_LE(f.uncertainty_ns(), 1000.0);
  // The mapping of a device time lands within the stated bound of the truth, across the campaign.
  for (double h : {kHost0 + 1e9, kHost0 + 60e9, kHost0 + 119e9}) {
    const auto d = static_cast<std::int64_t>(true_device(h));
    EXPECT_NEAR(f.host_of_device(d), h, f.uncertainty_ns() + 5) << "at host " << h;
  }
}

TEST(ClockSync, MidpointsOfALopsidedBracketAreBiasedButTheBoundsAreNot) {
  // The old method: a kernel launch + synchronize, the read early in a 40 us bracket.
  // Its midpoint is ~15 us late; the bounds still contain the truth.
  std::vector<TimerPoint> pts;
  for (int i = 0; i < 200; ++i) {
    const std::int64_t before = kHost0 + i * 1'000'000LL;
    const std::int64_t bracket = 40'000;
    const auto dev = static_cast<std::int64_t>(true_device(static_cast<double>(before) + 5'000));
    pts.push_back({before + bracket / 2, dev, bracket});
  }
  const DriftFit f = fit_timer_points(pts, true, 0);
  ASSERT_TRUE(f.bounded);
  const double h = kHost0 + 100e6;
  const double err = f.host_of_device(static_cast<std::int64_t>(true_device(h))) - h;
  EXPECT_LE(std::fabs(err), f.uncertainty_ns() + 1);
  EXPECT_GT(f.uncertainty_ns(), 10'000.0);  // and it says how poor it is
}

TEST(ClockSync, ReadingsThatFitNoLineAreReportedNotHidden) {
  std::mt19937_64 rng(3);
  auto pts = pokes(rng, kHost0, 1e9, 100, 900, 1500);
  for (auto& p : pokes(rng, kHost0 + 2'000'000'000, 1e9, 100, 900, 1500)) {
    p.device_ns += 50'000;  // the timer jumped 50 us
    pts.push_back(p);
  }
  const DriftFit f = fit_timer_points(pts, true, kStep);
  ASSERT_TRUE(f.ok);
  EXPECT_FALSE(f.bounded);
  EXPECT_GT(f.inconsistency_ns, 40'000.0);
  EXPECT_GT(f.uncertainty_ns(), 40'000.0);
}

namespace {
// Ops whose true GPU interval starts 3-8 us after the host issue and ends 2-6 us
// before the host sees completion, stamped with the true device clock.
std::vector<OpSpan> ops(std::mt19937_64& rng, int n) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<OpSpan> v;
  for (int i = 0; i < n; ++i) {
    const double hs = kHost0 + 1e9 + i * 200'000.0;
    const double gs = hs + 3'000 + 5'000 * u(rng);
    const double ge = gs + 1'000 + 50'000 * u(rng);
    const double he = ge + 2'000 + 4'000 * u(rng);
    v.push_back({static_cast<std::int64_t>(hs), static_cast<std::int64_t>(he), static_cast<std::int64_t>(true_device(gs)),
                 static_cast<std::int64_t>(true_device(ge)), 0, "op" + std::to_string(i)});
  }
  return v;
}
DriftFit sync_fit(std::mt19937_64& rng) {
  auto pts = pokes(rng, kHost0, 2e9, 200, 900, 2000);
  const auto end = pokes(rng, kHost0 + 60'000'000'000, 2e9, 200, 900, 2000);
  pts.insert(pts.end(), end.begin(), end.end());
  return fit_timer_points(pts, false, kStep);
}
}  // namespace

TEST(Causality, ACorrectClockPassesEveryOpAndNarrowsTheBound) {
  std::mt19937_64 rng(11);
  DriftFit f = sync_fit(rng);
  ASSERT_TRUE(f.bounded);
  const auto spans = ops(rng, 300);
  const CausalityCheck c = check_causality(spans, &f);
  EXPECT_EQ(c.ops_checked, 300u);
  EXPECT_EQ(c.violations, 0u);
  EXPECT_LE(c.uncertainty_after_ns, c.uncertainty_before_ns);
  EXPECT_GT(c.min_start_slack_ns, 0);
  EXPECT_GT(c.min_end_slack_ns, 0);
  const double h = kHost0 + 30e9;  // the narrowed line is still true
  EXPECT_NEAR(f.host_of_device(static_cast<std::int64_t>(true_device(h))), h, f.uncertainty_ns() + 5);
}

TEST(Causality, AClockBiasedBy20usIsCaught) {
  std::mt19937_64 rng(13);
  DriftFit f = sync_fit(rng);
  f.shift_offset(20'000);  // the bug seen on the H100: GPU ops mapped ~20 us early, with bounds that believe it
  const auto spans = ops(rng, 300);
  const CausalityCheck c = check_causality(spans, &f);
  EXPECT_EQ(c.ops_checked, 300u);
  EXPECT_EQ(c.violations, 300u);  // every op starts at least 12 us before its host issue
  EXPECT_GT(c.worst_violation_ns, 12'000.0);
  EXPECT_LT(c.worst_violation_ns, 20'000.0);
  EXPECT_FALSE(c.worst_op.empty());
}

TEST(Causality, StampErrorIsAllowedForButNotMore) {
  std::mt19937_64 rng(17);
  DriftFit f = sync_fit(rng);
  auto spans = ops(rng, 50);
  for (auto& s : spans) s.device_start_ns -= 3'000 + 8'000;  // 11 us early: beyond every op's start slack
  DriftFit g = f;
  EXPECT_GT(check_causality(spans, &g).violations, 0u);
  for (auto& s : spans) s.stamp_error_ns = 12'000;  // a calibration that admits that much
  g = f;
  EXPECT_EQ(check_causality(spans, &g).violations, 0u);
}

TEST(Batching, SizedSoASampleSpansTheMinimum) {
  EXPECT_EQ(batch_size_for(2'000, 50'000), 25);
  EXPECT_EQ(batch_size_for(2'001, 50'000), 25);
  EXPECT_EQ(batch_size_for(1'999, 50'000), 26);
  EXPECT_EQ(batch_size_for(80'000, 50'000), 1);
  EXPECT_EQ(batch_size_for(10, 50'000), kMaxBatch);  // capped: the launch queue
  EXPECT_EQ(batch_size_for(0, 50'000), 1);
  EXPECT_EQ(batch_size_for(NAN, 50'000), 1);
}

TEST(Batching, MinSampleTimeIsCheckedAndSaysWhy) {
  EXPECT_DOUBLE_EQ(parse_min_sample_time("50us"), 50'000);
  EXPECT_DOUBLE_EQ(parse_min_sample_time("1ms"), 1'000'000);
  for (const char* bad : {"0", "0us", "-5us", "2s", "abc", ""}) EXPECT_THROW(parse_min_sample_time(bad), UsageError) << bad;
  try {
    parse_min_sample_time("5s");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("over 1 s"), std::string::npos);
  }
  EXPECT_EQ(parse_timing("batch"), Timing::batch);
  EXPECT_EQ(parse_timing("single"), Timing::single);
  EXPECT_THROW(parse_timing("loop"), UsageError);
}

// The H100 case: the timer's rate wandered from -6.8 to -6.4 ppm over a two-minute
// campaign. One line over all readings misses by microseconds in the middle; the
// piecewise map, fed a 16-poke burst every 0.25 s, stays within 1 us everywhere and
// the truth lies inside its stated bound.
TEST(ClockMap, FollowsARateThatWandersWithinAMicrosecond) {
  constexpr double kSpan = 120e9;
  const auto device_at = [&](double host) {  // ppm(t) = -6.8 + 0.4 t / span
    const double t = host - static_cast<double>(kHost0);
    return kDev0 + static_cast<std::int64_t>(std::floor(t + 1e-6 * (-6.8 * t + 0.4 * t * t / (2 * kSpan))));
  };
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<TimerPoint> pts;
  for (double t = 0; t <= kSpan; t += 250e6)
    for (int k = 0; k < 16; ++k) {
      const auto before = kHost0 + static_cast<std::int64_t>(t) + k * 3'000;
      const auto bracket = static_cast<std::int64_t>(1'900 + 600 * u(rng));
      const auto dev = device_at(static_cast<double>(before) + static_cast<double>(bracket) * (0.3 + 0.7 * u(rng)));
      pts.push_back({before + bracket / 2, dev / kStep * kStep, bracket});
    }
  const DriftFit one = fit_timer_points(pts, false, kStep);
  EXPECT_GT(one.uncertainty_ns(), 1'000.0) << "a single line cannot hold this clock";

  const ClockMap map = build_clock_map(pts, kStep);
  ASSERT_TRUE(map.ok());
  EXPECT_GT(map.pieces.size(), 400u);
  EXPECT_LE(map.uncertainty_max_ns(), 1'000.0);
  for (int i = 0; i < 300; ++i) {
    const double h = static_cast<double>(kHost0) + kSpan * u(rng);
    const auto hint = static_cast<std::int64_t>(h);
    const double mapped = map.host_of_device(hint, device_at(h));
    EXPECT_NEAR(mapped, h, map.at(hint).uncertainty_ns() + 5) << "at " << (h - static_cast<double>(kHost0)) * 1e-9 << " s";
  }
}

TEST(ClockMap, ASinglePieceMapsLikeItsLine) {
  DriftFit f;
  f.ok = true;
  f.host_ref_ns = 1'000;
  f.device_ref_ns = 9'000;
  const ClockMap m = ClockMap::one_line(f);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.piece_index(-5), 0u);
  EXPECT_DOUBLE_EQ(m.host_of_device(123, 10'000), 2'000.0);
  EXPECT_FALSE(ClockMap::one_line(DriftFit{}).ok());
}
