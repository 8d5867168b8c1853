// bench nccl's sweep as a library call (issue 24): rows out of a spec, the formulas of
// nccl-tests applied once, a failure after the first size keeping what was measured,
// the stop flag honoured, and without NCCL the error that says what to do. The ranks
// are a test double: the sweep's own logic needs no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "bench/nccl_sweep.hpp"
#include "p2pscope/error.hpp"

using namespace p2pscope;
using namespace p2pscope::bench;

namespace {

// Two ranks; each iteration takes bytes / 10 GB/s (x1 on rank 0, x3 on rank 1), rank 1
// writes one wrong element at 2 MiB, and the size `fail_at` throws as a dead peer would.
class FakeRanks : public CollectiveRanks {
 public:
  std::uint64_t fail_at = 0;
  std::vector<CollectiveSpec> calls;
  int ranks() const override { return 2; }
  int rank() const override { return 0; }
  std::string rank_name(int r) const override { return "rank " + std::to_string(r) + " GPU 0 (fake)"; }
  CollectiveResult run(const CollectiveSpec& spec) override {
    calls.push_back(spec);
    if (spec.bytes == fail_at) throw Error("rank 1 is gone (peer closed the connection)");
    CollectiveResult r;
    r.bytes = spec.bytes / 8 * 8;                           // whole float elements per rank, as NCCL rounds
    const double ns = static_cast<double>(r.bytes) / 10.0;  // 10 bytes per ns
    for (int i = 0; i < spec.iters; ++i) r.elapsed_ns.push_back(ns * 2);  // mean of 1x and 3x
    r.span_ns = ns * 2.5;  // nccl-tests' span: the gaps between back-to-back ops count
    if (spec.in_place) r.span_in_place_ns = ns * 5;
    r.by_rank_ns = {std::vector<double>(spec.iters, ns), std::vector<double>(spec.iters, 3 * ns)};
    if (spec.bytes == (2u << 20)) r.first_bad = 5, r.bad_rank = 1;
    return r;
  }
};

NcclSweepSpec spec_of(std::vector<std::uint64_t> sizes) {
  NcclSweepSpec s;
  s.collective.op = NcclOp::allreduce;
  s.collective.type = NcclType::float32;
  s.collective.warmup = 1;
  s.collective.iters = 4;
  s.sizes = std::move(sizes);
  return s;
}

}  // namespace

TEST(NcclSweep, RowsCarryNcclTestsFiguresAndTheCheck) {
  FakeRanks ranks;
  auto spec = spec_of({1001, 1u << 20, 2u << 20});
  std::vector<std::size_t> seen;
  spec.on_row = [&](std::size_t done, std::size_t planned, const NcclSweepRow& row) {
    EXPECT_EQ(planned, 3u);
    seen.push_back(done);
    EXPECT_GT(row.bytes, 0u);
  };
  const auto r = run_nccl_sweep(spec, &ranks);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(seen, (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.gpus, (std::vector<int>{0, 1}));
  ASSERT_EQ(r.rank_names.size(), 2u);
  EXPECT_EQ(r.rows[0].bytes, 1000u);  // the size NCCL ran, not the one asked
  EXPECT_EQ(r.rows[0].count, 250u);
  EXPECT_EQ(r.rows[0].samples_ns.size(), 4u);
  EXPECT_EQ(r.rows[0].by_rank_ns.size(), 2u);
  // The figure is nccl-tests' span, not the event pass: 1 MiB in 2.5 * 1 MiB / 10 ns is
  // algbw 4 GB/s; all-reduce busbw = algbw * 2(n-1)/n = algbw at n = 2. In place: 2 GB/s.
  EXPECT_NEAR(r.rows[1].algbw_GBps, 4.0, 1e-9);
  EXPECT_NEAR(r.rows[1].busbw_GBps, 4.0, 1e-9);
  EXPECT_NEAR(r.rows[1].busbw_in_place_GBps, 2.0, 1e-9);
  EXPECT_NEAR(r.rows[1].time_ns.median, 2.0 * (1u << 20) / 10.0, 1e-6);  // the distribution stays apart
  EXPECT_EQ(r.rows[1].check(), "ok");
  EXPECT_EQ(r.rows[2].check(), "BAD rank 1 @5");
  EXPECT_EQ(r.first_failure(), "allreduce at 2 MiB: rank 1 (rank 1 GPU 0 (fake)) holds a wrong value at element 5");
  EXPECT_TRUE(r.stopped.empty());
  // Every size ran the spec's collective, warmup and iterations.
  ASSERT_EQ(ranks.calls.size(), 3u);
  EXPECT_EQ(ranks.calls[2].bytes, 2u << 20);
  EXPECT_EQ(ranks.calls[2].iters, 4);
  const auto typed = nccl_rows_table(r);
  const auto t = typed.rendered();
  EXPECT_EQ(t.headers()[6], "busbw_GBps");
  EXPECT_EQ(t.rows()[1][6], "4.00");  // busbw_GBps: GB/s = 1e9 bytes/s
  EXPECT_EQ(t.headers()[4], "time_us");
  EXPECT_EQ(t.rows()[1][4], fixed(2.5 * (1u << 20) / 10.0 / 1e3, 2));  // the span in us, not ns
  // The units travel with the figures: JSON of the table says them, csv holds the text's figures.
  const auto tj = typed.to_json();
  EXPECT_EQ(tj["columns"][6]["unit"], "GB/s");
  EXPECT_EQ(tj["columns"][4]["unit"], "us");
  EXPECT_EQ(tj["columns"][13]["unit"], "%");
  EXPECT_NEAR(tj["rows"][1][6].get<double>(), 4.0, 1e-9);
  EXPECT_NE(t.to_csv().find("\n1M,1048576,"), std::string::npos) << t.to_csv();
  EXPECT_EQ(t.rows()[1][9], "2.00");  // ip_busbw_GBps
  EXPECT_EQ(t.rows()[2][14], "BAD rank 1 @5");
  const auto j = nccl_rows_json(r);
  EXPECT_EQ(j[1]["check"], "ok");
  EXPECT_DOUBLE_EQ(j[1]["busbw_GBps"].get<double>(), r.rows[1].busbw_GBps);
  EXPECT_NEAR(j[1]["time_us"].get<double>(), 2.5 * (1u << 20) / 10.0 / 1e3, 1e-9);
  EXPECT_NEAR(j[1]["in_place"]["busbw_GBps"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(j[1]["samples_ns_by_rank"].size(), 2u);
}

TEST(NcclSweep, AFailureAfterTheFirstSizeKeepsTheRowsAndSaysWhere) {
  FakeRanks ranks;
  ranks.fail_at = 4096;
  const auto r = run_nccl_sweep(spec_of({1024, 2048, 4096, 8192}), &ranks);
  EXPECT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.stopped, "stopped at 4 KiB: rank 1 is gone (peer closed the connection)");
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(ranks.calls.size(), 3u) << "nothing runs after the failed size";
  ranks.fail_at = 1024;  // nothing measured: the plain error
  EXPECT_THROW(run_nccl_sweep(spec_of({1024, 2048}), &ranks), Error);
}

TEST(NcclSweep, TheStopFlagEndsTheSweepBeforeTheNextSize) {
  FakeRanks ranks;
  std::atomic<bool> stop{false};
  auto spec = spec_of({1024, 2048, 4096});
  spec.stop = &stop;
  spec.on_row = [&](std::size_t, std::size_t, const NcclSweepRow&) { stop = true; };
  const auto r = run_nccl_sweep(spec, &ranks);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.stopped, "interrupted before 2 KiB: 1 of 3 sizes measured");
  EXPECT_EQ(ranks.calls.size(), 1u);
}

TEST(NcclSweep, WithoutNcclOrGpusTheErrorSaysWhatToDo) {
  if (nccl_collectives_built()) {
    // Built with NCCL: one process over no GPU at all is refused before any NCCL call.
    EXPECT_THROW(run_nccl_sweep(spec_of({1024})), UsageError);
    return;
  }
  try {
    run_nccl_sweep(spec_of({1024}));
    FAIL() << "a sweep ran without NCCL";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("NCCL is not built in"), std::string::npos) << m;
    EXPECT_NE(m.find("P2PSCOPE_WITH_NCCL=ON"), std::string::npos) << "says how to get it: " << m;
  }
}

TEST(NcclSweep, ABadSpecIsAUsageError) {
  FakeRanks ranks;
  EXPECT_THROW(run_nccl_sweep(spec_of({}), &ranks), UsageError);
  auto spec = spec_of({1024});
  spec.collective.iters = 0;
  EXPECT_THROW(run_nccl_sweep(spec, &ranks), UsageError);
  EXPECT_TRUE(ranks.calls.empty());
}

namespace {

// Every span takes bytes / 10 GB/s, except in calls that `disturbed` names: 3x there, as a
// host pause of tens of milliseconds makes every span of a size taken back to back.
class PausingRanks : public CollectiveRanks {
 public:
  std::vector<CollectiveSpec> calls;
  std::vector<std::size_t> disturbed;
  std::size_t fail_at_call = SIZE_MAX;
  int ranks() const override { return 2; }
  int rank() const override { return 0; }
  std::string rank_name(int r) const override { return "rank " + std::to_string(r); }
  CollectiveResult run(const CollectiveSpec& spec) override {
    const std::size_t call = calls.size();
    calls.push_back(spec);
    if (call == fail_at_call) throw Error("rank 1 is gone");
    const bool slow = std::find(disturbed.begin(), disturbed.end(), call) != disturbed.end();
    CollectiveResult r;
    r.bytes = spec.bytes;
    const double ns = static_cast<double>(spec.bytes) / 10.0 * (slow ? 3 : 1);
    for (int k = 0; k < spec.spans; ++k) r.spans_ns.push_back(ns);
    r.span_ns = ns;
    if (spec.in_place) r.span_in_place_ns = 2 * ns;
    r.elapsed_ns.assign(static_cast<std::size_t>(spec.iters), ns);
    return r;
  }
};

}  // namespace

TEST(NcclSweep, SmallSizesTakeTheirSpansInPassesSoOnePauseCannotMakeTheFigure) {
  PausingRanks ranks;
  ranks.disturbed = {0, 1};  // a pause over the first two sizes of the first pass
  auto spec = spec_of({1000, 2000, 16u << 20});
  spec.collective.spans = 3;
  const auto r = run_nccl_sweep(spec, &ranks);
  ASSERT_EQ(r.rows.size(), 3u);
  // Pass 1: every size once (16 MiB with its 3 spans back to back); passes 2 and 3: the
  // two sizes up to 8 MiB again, unchecked, without the event pass, one span each.
  ASSERT_EQ(ranks.calls.size(), 7u);
  EXPECT_EQ(ranks.calls[0].spans, 1);
  EXPECT_EQ(ranks.calls[2].spans, 3);
  EXPECT_EQ(ranks.calls[3].bytes, 1000u);
  EXPECT_EQ(ranks.calls[6].bytes, 2000u);
  EXPECT_FALSE(ranks.calls[4].check);
  EXPECT_FALSE(ranks.calls[4].per_iteration);
  EXPECT_TRUE(ranks.calls[0].check);
  for (std::size_t i : {0u, 1u}) {
    const auto& row = r.rows[i];
    EXPECT_TRUE(row.spans_spread);
    ASSERT_EQ(row.spans_ns.size(), 3u);
    EXPECT_DOUBLE_EQ(row.spans_ns[0], 3 * row.bytes / 10.0) << "the paused span is kept in the list";
    EXPECT_DOUBLE_EQ(row.span_ns, row.bytes / 10.0) << "the median is the two undisturbed spans'";
    EXPECT_DOUBLE_EQ(row.span_in_place_ns, 2 * row.bytes / 10.0);
    // The rates follow the median: S / t = 10 GB/s, busbw = algbw at 2 ranks.
    EXPECT_NEAR(row.algbw_GBps, 10.0, 1e-9);
    EXPECT_NEAR(row.busbw_GBps, 10.0, 1e-9);
    EXPECT_NEAR(row.busbw_in_place_GBps, 5.0, 1e-9);
  }
  EXPECT_FALSE(r.rows[2].spans_spread);
  EXPECT_EQ(r.rows[2].spans_ns.size(), 3u);
  EXPECT_EQ(nccl_rows_json(r)[0]["spans_spread"], true);

  // Back to back (spreading off), the same pause makes both sizes' figures.
  PausingRanks back;
  back.disturbed = {0, 1};
  spec.spread_spans_max_bytes = 0;
  const auto b = run_nccl_sweep(spec, &back);
  EXPECT_EQ(back.calls.size(), 3u);
  EXPECT_DOUBLE_EQ(b.rows[0].span_ns, 3 * 1000 / 10.0);
  EXPECT_FALSE(b.rows[0].spans_spread);
}

// An even count of spans: the median is the mean of the two middle ones (core/stats'
// median), not the upper one. --spans 2 of 300 and 100 ns give 200 ns.
TEST(NcclSweep, TheMedianOfAnEvenCountOfSpansIsTheMeanOfTheTwoMiddles) {
  PausingRanks ranks;
  ranks.disturbed = {0};  // the first span of 1000 B: 3 x 100 ns
  auto spec = spec_of({1000});
  spec.collective.spans = 2;
  spec.collective.in_place = false;
  const auto r = run_nccl_sweep(spec, &ranks);
  ASSERT_EQ(r.rows.size(), 1u);
  ASSERT_EQ(r.rows[0].spans_ns.size(), 2u);
  EXPECT_DOUBLE_EQ(r.rows[0].span_ns, 200.0) << "the upper middle would be 300";
  EXPECT_NEAR(r.rows[0].algbw_GBps, 1000 / 200.0, 1e-9);
}

TEST(NcclSweep, AFailureInALaterPassKeepsEverySpanTaken) {
  PausingRanks ranks;
  ranks.fail_at_call = 3;  // 2000 B in pass 2 (calls: 1000, 2000, then 1000, 2000 again)
  auto spec = spec_of({1000, 2000});
  spec.collective.spans = 3;
  const auto r = run_nccl_sweep(spec, &ranks);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.stopped.rfind("stopped in pass 2 of 3 at ", 0), 0u) << r.stopped;
  EXPECT_NE(r.stopped.find(": rank 1 is gone"), std::string::npos) << r.stopped;
  EXPECT_EQ(ranks.calls.size(), 4u) << "nothing runs after the failure";
  EXPECT_EQ(r.rows[0].spans_ns.size(), 2u);
  EXPECT_EQ(r.rows[1].spans_ns.size(), 1u);
  EXPECT_DOUBLE_EQ(r.rows[1].span_ns, 2000 / 10.0);
}

namespace {
// PausingRanks as one process's GPUs (the calibration's and predict --measure's case).
class LocalPausingRanks : public PausingRanks {
 public:
  std::vector<int> local_gpus() const override { return {0, 1}; }
};
}  // namespace

// NcclSweepSpec::span_target_ns: a size whose 20 iterations would outlast the target runs
// the fewest that fill it, estimated from the size before it. Known answer at 10 GB/s an
// iteration and a 20 ms target: 8 MiB (0.84 ms) keeps 20; 32 MiB (3.36 ms from 8 MiB's
// figure x 4) needs ceil(5.96) = 6; 128 MiB (13.4 ms) would need 2 and gets the floor, 5.
TEST(NcclSweep, ASpanTargetCutsTheIterationsOfLongSizesOnly) {
  auto spec = spec_of({8u << 20, 32u << 20, 128u << 20});
  spec.collective.iters = 20;
  spec.collective.spans = 3;
  spec.span_target_ns = 20e6;
  LocalPausingRanks local;
  const auto r = run_nccl_sweep(spec, &local);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].iters, 20);
  EXPECT_EQ(r.rows[1].iters, 6);
  EXPECT_EQ(r.rows[2].iters, kMinSpanIters);
  EXPECT_EQ(nccl_rows_json(r)[1]["iters"], 6);
  // 8 MiB's later spans (passes 2 and 3) run as its first did: 20 iterations, not the
  // count the last size left behind.
  ASSERT_EQ(local.calls.size(), 5u);
  EXPECT_EQ(local.calls[3].bytes, 8u << 20);
  EXPECT_EQ(local.calls[3].iters, 20);
  EXPECT_EQ(local.calls[4].iters, 20);
  // The time per iteration does not depend on the count: the figure is the same.
  EXPECT_DOUBLE_EQ(r.rows[2].span_ns, static_cast<double>(128u << 20) / 10.0);

  // Off (nccl-tests), or ranks of a launch (each times its own spans and could choose
  // another count, leaving NCCL calls unmatched): every size keeps 20.
  for (const bool launched : {false, true}) {
    auto s = spec;
    if (!launched) s.span_target_ns = 0;
    LocalPausingRanks one;
    PausingRanks ranks;
    const auto o = launched ? run_nccl_sweep(s, &ranks) : run_nccl_sweep(s, &one);
    for (const auto& row : o.rows) EXPECT_EQ(row.iters, 20) << launched;
  }
}
