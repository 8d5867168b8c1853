// predict on synthetic campaigns with known alpha and beta: the textbook ring and tree
// formulas come out exactly, the slowest link sets each step, and bad input says why.
#include <cmath>
#include <type_traits>

#include <gtest/gtest.h>

#include "bench/formulas.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/simulate.hpp"
#include "support/run_binary.hpp"
#include "simulate_support.hpp"

namespace p2pscope::simulate {
namespace {

using test::fs::path;

constexpr double kA = 2000, kB = 1e11;  // the uniform4 fixture: alpha ns, beta B/s
double t_link(double n, double a = kA, double b = kB) { return a + n / b * 1e9; }

path uniform4() { return path(P2PSCOPE_FIXTURES_DIR) / "links" / "uniform4"; }

// The links' share of a prediction: without the endpoint delay (1 ns by default), which is
// charged once per step and once per phase (one phase for these flat schedules).
double wire(const Prediction& r) {
  EXPECT_DOUBLE_EQ(r.endpoint_ns, r.steps + 1.0);
  return r.time_ns - r.endpoint_ns;
}

void expect_rel(double got, double want) { EXPECT_NEAR(got, want, 1e-12 * want) << got << " vs " << want; }

TEST(Predict, RingFormulasAreTheTextbookOnesExactly) {
  const Predictor pr(uniform4().string());
  ASSERT_EQ(pr.devices(), (std::vector<int>{0, 1, 2, 3}));
  const double p = 4;
  for (const std::uint64_t S : {std::uint64_t{1024}, std::uint64_t{3000}, std::uint64_t{1} << 20, std::uint64_t{1} << 30}) {
    const double n = static_cast<double>(S);
    const auto ar = pr.predict(Collective::allreduce, Algorithm::ring, S);
    expect_rel(wire(ar), 2 * (p - 1) * (kA + n / p / kB * 1e9));  // 2(p-1) steps of S/p
    EXPECT_EQ(ar.steps, 6);
    expect_rel(ar.busbw_bytes_per_s, n / ar.time_ns * 1e9 * 2 * (p - 1) / p);
    for (const auto op : {Collective::allgather, Collective::reducescatter, Collective::alltoall}) {
      const auto r = pr.predict(op, Algorithm::ring, S);
      expect_rel(wire(r), (p - 1) * (kA + n / p / kB * 1e9));  // (p-1) steps of S/p
      EXPECT_EQ(r.steps, 3);
    }
    // Pipelined chain of p-1 hops in k chunks: (p-2+k)(alpha + S/k / beta), best power of two k.
    double best = INFINITY;
    for (double k = 1; k <= n && k <= (1 << 24); k *= 2) best = std::min(best, (p - 2 + k) * t_link(n / k));
    expect_rel(wire(pr.predict(Collective::broadcast, Algorithm::ring, S)), best);
  }
}

TEST(Predict, TreeFormulas) {
  const Predictor pr(uniform4().string());
  const double n = 1 << 20, p = 4;
  // Recursive doubling / halving: log2 p rounds, alpha each, (p-1)/p S over beta in all.
  expect_rel(wire(pr.predict(Collective::allgather, Algorithm::tree, 1 << 20)), 2 * kA + (p - 1) / p * n / kB * 1e9);
  expect_rel(wire(pr.predict(Collective::reducescatter, Algorithm::tree, 1 << 20)), 2 * kA + (p - 1) / p * n / kB * 1e9);
  // Bruck: 2 rounds of p/2 blocks of S/p.
  expect_rel(wire(pr.predict(Collective::alltoall, Algorithm::tree, 1 << 20)), 2 * t_link(n / 2));
  // Binary tree (parent of i is (i-1)/2: depth floor(log2 4) = 2), up and down, pipelined in k chunks.
  double best = INFINITY;
  for (double k = 1; k <= n && k <= (1 << 24); k *= 2) best = std::min(best, (2 * 2 + k - 1) * t_link(n / k));
  expect_rel(wire(pr.predict(Collective::allreduce, Algorithm::tree, 1 << 20)), best);
}

TEST(Predict, TheSlowestLinkSetsEachStep) {
  test::SyntheticLinks s;
  s.beta = [](int a, int b) { return a == 2 && b == 3 ? 2e10 : kB; };
  const Predictor pr(test::write_links(s).string());
  const double n = 1 << 24;
  const auto r = pr.predict(Collective::allreduce, Algorithm::ring, 1 << 24);
  expect_rel(wire(r), 6 * t_link(n / 4, kA, 2e10));
  EXPECT_EQ(r.bottleneck, "2->3 (NV18)");
  // alltoall: only the step k = 1 uses 2->3.
  expect_rel(wire(pr.predict(Collective::alltoall, Algorithm::ring, 1 << 24)), t_link(n / 4, kA, 2e10) + 2 * t_link(n / 4));
}

TEST(Predict, AOneWayLinkUsesTheReverseModelAndSaysSo) {
  test::SyntheticLinks s;
  s.keep = [](int a, int b) { return !(a == 3 && b == 0); };
  const Predictor pr(test::write_links(s).string());
  ASSERT_FALSE(pr.notes().empty());
  EXPECT_NE(pr.notes().back().find("3->0"), std::string::npos) << pr.notes().back();
  expect_rel(wire(pr.predict(Collective::allreduce, Algorithm::ring, 4096)), 6 * t_link(1024));
}

TEST(Predict, APairMeasuredInNeitherDirectionIsAnErrorOnlyWhereNeeded) {
  test::SyntheticLinks s;
  s.keep = [](int a, int b) { return !((a == 0 && b == 2) || (a == 2 && b == 0)); };
  const Predictor pr(test::write_links(s).string());
  EXPECT_NO_THROW(pr.predict(Collective::allreduce, Algorithm::ring, 4096));  // 0->1->2->3->0
  try {
    pr.predict(Collective::alltoall, Algorithm::ring, 4096);
    FAIL() << "alltoall needs 0->2";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("0->2"), std::string::npos) << e.what();
  }
}

TEST(Predict, BadInput) {
  const auto empty = test::temp_dir("empty");
  std::ofstream(empty / "execution_log.csv") << "config_id,src,dst,size_bytes,duration_ns\n";
  try {
    Predictor pr(empty.string());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("run `p2pscope analyze"), std::string::npos) << e.what();
  }
  test::SyntheticLinks one;
  one.p = 2;
  one.keep = [](int a, int) { return a == 0; };
  EXPECT_NO_THROW(Predictor(test::write_links(one).string()));  // 0->1 only: 1->0 from the reverse
  EXPECT_THROW(Predictor(uniform4().string(), "nccl"), UsageError);  // no such backend
  EXPECT_THROW(parse_collective("bcast"), UsageError);
  EXPECT_THROW(parse_algorithm("butterfly"), UsageError);
  EXPECT_EQ(parse_collective_list("allreduce,alltoall,allreduce").size(), 2u);
  EXPECT_EQ(parse_collective_list("allreduce, alltoall").size(), 2u);  // the one list splitter trims
  EXPECT_THROW(parse_collective_list("allreduce,"), UsageError);
  try {
    parse_collective("reduce");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce, allgather, reducescatter, alltoall, broadcast"), std::string::npos);
  }
}

// A contention run saved next to the campaign (profile --pattern --out DIR/sub) is
// quoted where a flow together fell well below itself alone.
TEST(Predict, QuotesContentionMeasuredNextToTheCampaign) {
  const auto dir = test::copy_fixture("links/uniform4");
  test::fs::create_directories(dir / "fanin");
  nlohmann::json j = {{"kind", "p2pscope_contention"}, {"pattern", "fan-in"}, {"backend", "ce"},
                      {"summary", {{{"size_bytes", 1 << 24}, {"src", 1}, {"dst", 0}, {"flows", 3},
                                    {"alone_bytes_per_s", 1e11}, {"together_bytes_per_s", 4e10}},
                                   {{"size_bytes", 1 << 24}, {"src", 2}, {"dst", 0}, {"flows", 3},
                                    {"alone_bytes_per_s", 1e11}, {"together_bytes_per_s", 9.5e10}}}}};
  std::ofstream(dir / "fanin" / "contention.json") << j.dump();
  const Predictor pr(dir.string());
  std::string all;
  for (const auto& n : pr.notes()) all += n + "\n";
  EXPECT_NE(all.find("contention (fan-in on ce, fanin/contention.json): 1->0 at 16 MiB with 3 flows at once ran at 40%"),
            std::string::npos) << all;
  const auto e = export_campaign(dir.string(), ExportFormat::astra_sim);
  EXPECT_NE(e.text.find("# contention (fan-in"), std::string::npos) << e.text;
}

// Issue 24: a size of 0 is refused; sizes beyond the measured ones are marked.
TEST(Predict, RefusesZeroAndMarksExtrapolatedSizes) {
  const Predictor pr(uniform4().string());  // measured 1 B .. 1 GiB
  EXPECT_THROW(pr.predict(Collective::allreduce, Algorithm::ring, 0), UsageError);
  EXPECT_FALSE(pr.predict(Collective::allreduce, Algorithm::ring, std::uint64_t{4} << 30).extrapolated);  // 1 GiB steps
  EXPECT_TRUE(pr.predict(Collective::allreduce, Algorithm::ring, std::uint64_t{8} << 30).extrapolated);
  auto r = test::run_binary("predict " + uniform4().string() + " --ops allreduce --sizes 0,1K");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("is 0 bytes: it measures nothing"), std::string::npos) << r.out;
  r = test::run_binary("predict " + uniform4().string() + " --ops allreduce --sizes 1G,8G --format csv");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(",no\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",yes\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 2 rows are extrapolated"), std::string::npos) << r.out;
}

// Issue 21: links.json with impossible values is refused with what is wrong, exit 2.
TEST(Predict, ImpossibleModelsAreRefused) {
  const auto good = nlohmann::json::parse(test::slurp(uniform4() / "links.json"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/links/0/alpha_beta/beta_bytes_per_s", "0"},
      {"/links/0/alpha_beta/alpha_ns", "1e999"},
      {"/links/0/src", "-2147483648"},
      {"/links/0/alpha_beta/alpha_ns", "\"fast\""},
      {"/links/0/points/3/median_ns", "-5"},
      {"/links/0/link_class", "42"}};
  for (const auto& [where, value] : cases) {
    const auto d = test::temp_dir("bad");
    std::string text = good.dump(1);
    auto j = good;
    j[nlohmann::json::json_pointer(where)] = 12345.678;  // a marker to replace as text
    text = j.dump(1);
    const auto at = text.find("12345.678");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 9, value);
    std::ofstream(d / "links.json") << text;
    std::string what;
    try {
      Predictor pr(d.string());
      what = "accepted";
    } catch (const UsageError& e) {
      what = e.what();
    }
    const std::string key = where.substr(where.rfind('/') + 1);
    EXPECT_TRUE(what.find(key) != std::string::npos || what.find("number overflow") != std::string::npos) << where << " = " << value << ": " << what;
    for (const char* cmd : {"predict ", "export "}) {
      const auto r = test::run_binary(cmd + d.string() + (cmd[0] == 'e' ? " --to astra-sim" : " --ops allreduce"));
      EXPECT_EQ(r.code, 2) << cmd << where << " = " << value << ": " << r.out;
      EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
    }
  }
}

TEST(Predict, BatchOverEveryOpAndSize) {
  PredictOptions o;
  o.ops = parse_collective_list("allreduce,allgather,reducescatter,alltoall,broadcast");
  o.sizes = {1024, 1 << 20};
  const auto r = predict(uniform4().string(), o);
  EXPECT_EQ(r.rows.size(), 10u);
  EXPECT_EQ(r.backend, "ce");
  EXPECT_FALSE(r.assumptions.empty());
  for (const auto& row : r.rows) EXPECT_GT(row.time_ns, 0);
}

// One op table (issue 33): each collective is the bench's op of the same name, with its
// busbw factor; the figures are nccl-tests' (2(n-1)/n, (n-1)/n, 1) at n = 8.
TEST(Predict, CollectivesAreTheBenchOpsWithTheirBusbwFactor) {
  const std::pair<Collective, double> known[] = {{Collective::allreduce, 1.75},
                                                 {Collective::allgather, 0.875},
                                                 {Collective::reducescatter, 0.875},
                                                 {Collective::alltoall, 0.875},
                                                 {Collective::broadcast, 1.0}};
  for (const auto& [c, factor] : known) {
    const std::string name = to_string(c);
    SCOPED_TRACE(name);
    EXPECT_EQ(parse_collective(name), c);
    EXPECT_DOUBLE_EQ(busbw_factor(c, 8), factor);
    EXPECT_DOUBLE_EQ(busbw_factor(c, 8), bench::busbw_factor(bench::parse_nccl_op(name), 8));
  }
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::allreduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::alltoall, 4), 0.75);
}

}  // namespace
// One collective enum (issue 33): bench's NcclOp and the simulator's Collective are the
// same type, read from one table; the simulator refuses the op it has no schedule for.
TEST(Predict, OneCollectiveEnumForBenchAndSimulator) {
  static_assert(std::is_same_v<Collective, bench::NcclOp>, "one enum, two names");
  for (const auto& row : kCollectiveOps) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_EQ(to_string(row.value), bench::to_string(row.value));
    EXPECT_EQ(busbw_formula_text(row.value), std::string(row.formula));
    if (row.value == Collective::sendrecv) continue;
    EXPECT_EQ(parse_collective(std::string(row.name)), row.value);
  }
  try {
    parse_collective("sendrecv");
    ADD_FAILURE() << "predict has no schedule for sendrecv";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce, allgather, reducescatter, alltoall, broadcast"), std::string::npos)
        << e.what();
  }
  const Predictor pr(uniform4().string());
  EXPECT_THROW(pr.predict(Collective::sendrecv, Algorithm::ring, 1024), UsageError);
  // The factors in the formulas' words, at n = 4: 2(n-1)/n = 1.5, (n-1)/n = 0.75, 1.
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::allreduce, 4), 1.5);
  EXPECT_NE(busbw_formula_text(Collective::allreduce).find("2(n-1)/n"), std::string::npos);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::reducescatter, 4), 0.75);
  EXPECT_NE(busbw_formula_text(Collective::reducescatter).find("(n-1)/n"), std::string::npos);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::sendrecv, 4), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::allreduce, 0), 0.0);
}

}  // namespace p2pscope::simulate
