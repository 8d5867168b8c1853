// analyze against logs that lie (issues 21 item 6 and 24 item 2): duplicate
// (config, repetition) rows are not extra samples, a campaign is complete only when
// the plan's every row is there and the last line is whole, garbage in the backend
// column is no new link.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "analyze/campaign.hpp"
#include "p2pscope/error.hpp"
#include "support/files.hpp"

using namespace p2pscope;
using namespace p2pscope::analyze;
namespace fs = std::filesystem;

namespace {

constexpr const char* kHeader =
    "config_id,src,dst,size_bytes,repetition,backend,ts_start_ns,ts_end_ns,duration_ns,gpu_duration_ns,"
    "gpu_ts_start_ns,gpu_ts_end_ns,batch,timing,per_transfer_ns\n";

std::string row(int cfg, int rep, const std::string& backend = "ce", int dur = 5000) {
  const std::uint64_t size = cfg == 0 ? 1024 : 4096;
  return std::to_string(cfg) + ",0,1," + std::to_string(size) + "," + std::to_string(rep) + "," + backend + ",100," +
         std::to_string(100 + dur) + "," + std::to_string(dur) + ",,,,1,single," + std::to_string(dur) + ".00\n";
}

struct CampaignDir {
  fs::path dir;
  CampaignDir(const std::string& log, const std::string& status = "complete") {
    dir = p2pscope::test::fresh_test_dir("p2pscope-integrity");
    std::ofstream(dir / "execution_log.csv", std::ios::binary) << log;
    nlohmann::json plan = {{"backends", {"ce"}}, {"reps", 3},
                           {"configs", {{{"id", 0}, {"backend", "ce"}, {"src", 0}, {"dst", 1}, {"size_bytes", 1024}},
                                        {{"id", 1}, {"backend", "ce"}, {"src", 0}, {"dst", 1}, {"size_bytes", 4096}}}}};
    std::ofstream(dir / "metadata.json") << nlohmann::json{{"plan", plan}, {"status", status}}.dump();
  }
  ~CampaignDir() { fs::remove_all(dir); }
};

std::string all_rows() {
  std::string s = kHeader;
  for (int rep = 0; rep < 3; ++rep)
    for (int cfg = 0; cfg < 2; ++cfg) s += row(cfg, rep);
  return s;
}

bool has_note(const Campaign& c, const std::string& part) {
  for (const auto& n : c.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(AnalyzeIntegrity, AWholeLogOfEveryPlannedRowIsComplete) {
  CampaignDir d(all_rows());
  const Campaign c = read_campaign(d.dir.string());
  EXPECT_EQ(c.ops.size(), 6u);
  EXPECT_EQ(c.completeness.rfind("complete", 0), 0u) << c.completeness;
}

// Before: the second writer's rows counted as samples (n = 6 for a config of 3 reps).
TEST(AnalyzeIntegrity, DuplicateRowsAreFlaggedAndNotCountedAsSamples) {
  std::string log = all_rows();
  log += row(0, 1, "ce", 9000) + row(1, 2, "ce", 9000);
  CampaignDir d(log);
  const Campaign c = read_campaign(d.dir.string());
  EXPECT_EQ(c.ops.size(), 6u);
  EXPECT_EQ(c.rows_duplicate, 2u);
  for (const auto& op : c.ops) EXPECT_EQ(op.duration_ns, 5000) << "a duplicate replaced the first row";
  EXPECT_TRUE(has_note(c, "2 duplicate (config, repetition) rows")) << "no note about duplicates";
  EXPECT_TRUE(has_note(c, "line 8 repeats config 0 rep 1 of line 4"));
  const auto s = summarize_configs(c, OutlierRule::none);
  ASSERT_EQ(s.size(), 2u);
  for (const auto& x : s) EXPECT_EQ(x.n_raw, 3u);
}

// Before: "0 garbled rows, campaign status: complete" for a log cut mid-line, and a
// missing repetition went unsaid.
TEST(AnalyzeIntegrity, ALogCutMidLineOrMissingRowsIsNotComplete) {
  std::string log = all_rows();
  log.resize(log.size() - 4);  // "...,5000.00\n" -> "...,5000." : the last row cut
  CampaignDir cut(log);
  const Campaign c = read_campaign(cut.dir.string());
  EXPECT_FALSE(c.last_line_whole);
  EXPECT_EQ(c.ops.size(), 5u);  // the cut row is no sample
  EXPECT_EQ(c.completeness.rfind("incomplete", 0), 0u) << c.completeness;
  EXPECT_NE(c.completeness.find("mid-line"), std::string::npos) << c.completeness;
  EXPECT_NE(c.completeness.find("config 1 rep 2"), std::string::npos) << c.completeness;
  EXPECT_TRUE(has_note(c, "incomplete"));

  std::string gap = kHeader;
  for (int rep = 0; rep < 3; ++rep)
    for (int cfg = 0; cfg < 2; ++cfg)
      if (!(cfg == 0 && rep == 1)) gap += row(cfg, rep);
  CampaignDir missing(gap);
  const Campaign m = read_campaign(missing.dir.string());
  EXPECT_TRUE(m.last_line_whole);
  EXPECT_NE(m.completeness.find("1 of 6 planned"), std::string::npos) << m.completeness;
  EXPECT_NE(m.completeness.find("config 0 rep 1"), std::string::npos) << m.completeness;
}

// Before: "c3" (a flipped byte) became a link of its own.
TEST(AnalyzeIntegrity, UnknownBackendNamesAreRefusedNotNewLinks) {
  std::string log = all_rows();
  log += row(0, 0, "c3") + row(1, 0, "ce;rm") + row(1, 1, "sm-pull");
  CampaignDir d(log);
  const Campaign c = read_campaign(d.dir.string());
  for (const auto& op : c.ops) EXPECT_EQ(op.backend, "ce");
  EXPECT_EQ(c.rows_skipped, 3u);  // sm-pull is a backend, but not of this plan

  // Without a plan, p2pscope's backend names (and their variants) are the known ones.
  Campaign free;
  parse_execution_log(std::string(kHeader) + row(0, 0, "sm-pull") + row(0, 1, "ce@4") + row(0, 2, "nccl") +
                          row(1, 0, "ce+host") + row(1, 1, "xyz") + row(1, 2, "cee"),
                      "log", &free);
  EXPECT_EQ(free.ops.size(), 4u);
  EXPECT_EQ(free.rows_skipped, 2u);
}
