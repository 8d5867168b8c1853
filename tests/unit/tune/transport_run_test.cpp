// doctor --compare-transports reads each bench nccl run from its JSON (issue 24): the
// figures are data, NCCL's INFO lines say only the transport. A run whose printed text
// holds figures of its own (a progress line, a changed table) must not report them.
#include <gtest/gtest.h>

#include "support/text_file.hpp"
#include "tune/transport_run.hpp"

using namespace p2pscope::tune;
using p2pscope::test::read_text;

namespace {

const std::string kDir = std::string(P2PSCOPE_FIXTURES_DIR) + "/bench-nccl/";
const std::map<std::string, std::string> kEnv = {{"NCCL_DEBUG", "INFO"}, {"NCCL_P2P_DISABLE", "1"}};

// Two ranks, two sizes: peak busbw 180 GB/s.
const char* kTwoRanks = R"({"schema_version": 3, "op": "allreduce", "ranks": 2, "rows": [
    {"size_bytes": 1048576, "count": 262144, "type": "float", "time_ns": {"median": 11650}, "algbw_GBps": 90.0,
     "busbw_GBps": 90.0, "check": "ok"},
    {"size_bytes": 67108864, "count": 16777216, "type": "float", "time_ns": {"median": 372827}, "algbw_GBps": 180.0,
     "busbw_GBps": 180.0, "check": "ok"}]})";

}  // namespace

TEST(TransportRun, ARealRunReadsItsFiguresFromTheJson) {
  const auto r = read_transport_run("default", kEnv, 0, read_text(kDir + "h100x1-allreduce-1rank-info.log"),
                                    read_text(kDir + "h100x1-allreduce-1rank.json"));
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.label, "default");
  EXPECT_EQ(r.env, kEnv);
  EXPECT_EQ(r.log.nccl_version, "2.28.3+cuda13.0");  // NCCL's own lines still read
  ASSERT_EQ(r.log.perf.size(), 1u);
  const auto& p = r.log.perf[0];
  EXPECT_EQ(p.tool, "bench nccl");
  EXPECT_EQ(p.op, "all_reduce");
  ASSERT_EQ(p.rows.size(), 7u);
  EXPECT_EQ(p.rows[6].size_bytes, 67108864u);
  EXPECT_DOUBLE_EQ(p.rows[6].oop_algbw, 1371.1356609153147e9);
  EXPECT_EQ(r.busbw_bytes_per_s, 0);  // one rank: busbw is 0 by nccl-tests' formula, not a failure
}

TEST(TransportRun, FiguresInThePrintedTextAreNotResults) {
  // What a changed bench nccl (or anything else in the child's output) might print:
  // a progress line and an nccl-tests-like table. The text reader takes both for
  // results (that is its job for logs), so the old scraping reported 999 GB/s here.
  const std::string printed = read_text(kDir + "h100x1-allreduce-1rank-info.log") +
                              "bench nccl: 2/2 allreduce 64MiB busbw=999.00 GB/s\n"
                              "#       size         count      type   redop    root     time   algbw   busbw #wrong    "
                              " time   algbw   busbw #wrong\n"
                              "    67108864      16777216     float     sum      -1   100.00  671.09  671.09      0   "
                              "100.00  671.09  671.09      0\n";
  ASSERT_FALSE(parse_nccl_log(printed, "text").perf.empty()) << "the text holds figures a scraper would take";
  const auto r = read_transport_run("NCCL_P2P_DISABLE=1", kEnv, 0, printed, std::string(kTwoRanks));
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_DOUBLE_EQ(r.busbw_bytes_per_s, 180e9);
  ASSERT_EQ(r.log.perf.size(), 1u) << "only the JSON's result";
  EXPECT_EQ(r.log.perf[0].tool, "bench nccl");
  EXPECT_EQ(r.log.perf[0].rows.size(), 2u);
}

TEST(TransportRun, AMissingOrBadResultIsSaidNotGuessed) {
  const std::string out = read_text(kDir + "h100x1-allreduce-1rank-info.log") + "allreduce 64MiB busbw=999.00 GB/s\n";
  const auto none = read_transport_run("default", kEnv, 0, out, std::nullopt);
  EXPECT_EQ(none.error, "bench nccl wrote no JSON result");
  EXPECT_EQ(none.busbw_bytes_per_s, 0);
  EXPECT_TRUE(none.log.perf.empty());
  EXPECT_EQ(none.log.nccl_version, "2.28.3+cuda13.0");
  const auto garbage = read_transport_run("default", kEnv, 0, out, std::string("{\"rows\": [1, 2"));
  EXPECT_NE(garbage.error.find("not JSON"), std::string::npos) << garbage.error;
  EXPECT_EQ(garbage.busbw_bytes_per_s, 0);
  const auto other = read_transport_run("default", kEnv, 0, out, std::string(R"({"busbw_bytes_per_s": 1e11})"));
  EXPECT_NE(other.error.find("is not a `p2pscope bench nccl --format json` document"), std::string::npos)
      << other.error;
  EXPECT_EQ(other.busbw_bytes_per_s, 0);
  // A child that failed says so with the end of its output, even with a partial result.
  const auto failed =
      read_transport_run("default", kEnv, 1, "bench nccl: stopped at 64 MiB: rank 1 died\n", std::string(kTwoRanks));
  EXPECT_EQ(failed.error, "exit 1: bench nccl: stopped at 64 MiB: rank 1 died\n");
  EXPECT_DOUBLE_EQ(failed.busbw_bytes_per_s, 180e9);
}
