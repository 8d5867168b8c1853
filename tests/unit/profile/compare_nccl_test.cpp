// `p2pscope compare` on bench nccl runs (issue 44, item 4), on real runs of one H200
// (tests/fixtures/bench-nccl/compare/RUN.txt: two ranks on one GPU, NCCL's sockets
// between them; default settings, and NCCL_MAX_NCHANNELS=1, which halves allreduce's
// rate at 16 and 64 MiB): compare reads the figures the table printed (time, busbw),
// flags the slow runs, finds no change between two default runs at the sizes where
// they agree, prints the level its intervals have (3 runs a side: 75 %), and refuses
// runs of another setup and malformed files by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/compare.hpp"
#include "p2pscope/error.hpp"
#include "support/files.hpp"
#include "support/run_binary.hpp"

namespace fs = std::filesystem;
using namespace p2pscope;

namespace {

std::string fixture(const std::string& name) {
  return (fs::path(P2PSCOPE_FIXTURES_DIR) / "bench-nccl" / "compare" / (name + ".json")).string();
}

// A fixture's document (its first line is NCCL's "NCCL version ..." on stdout).
nlohmann::json fixture_json(const std::string& name) {
  const std::string t = test::slurp(fixture(name));
  return nlohmann::json::parse(t.substr(t.find('{')));
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

const compare::Row* row_of(const compare::Comparison& c, const std::string& op, std::uint64_t size) {
  for (const auto& r : c.rows)
    if (r.subject == op && r.size_bytes == size) return &r;
  return nullptr;
}

constexpr std::uint64_t k16M = 16ull << 20, k64M = 64ull << 20;

class CompareNccl : public ::testing::Test {
 protected:
  void SetUp() override { base_ = test::fresh_test_dir("p2pscope-compare-nccl"); }
  void TearDown() override { fs::remove_all(base_); }
  fs::path base_;
};

}  // namespace

// One run a side: the table's time at 16 and 64 MiB is twice default's (36.38 ms
// against 72.16 at 64 MiB, busbw 1.84 against 0.93 GB/s), beyond both runs' event passes.
TEST_F(CompareNccl, TheTwiceSlowerRunIsFlaggedOnTheTableFigures) {
  const auto c = compare::compare(compare::load(fixture("default-1")), compare::load(fixture("slow-1")));
  ASSERT_EQ(c.rows.size(), 12u);
  for (const auto size : {k16M, k64M}) {
    const auto* r = row_of(c, "allreduce", size);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->verdict, "slower") << size;
    EXPECT_TRUE(r->by_events);
    EXPECT_NEAR(r->delta_pct, 99, 1.5) << size;
    ASSERT_TRUE(r->has_rate);
    EXPECT_NEAR(r->rate_delta_pct, -49.7, 1) << size;
  }
  const auto* r64 = row_of(c, "allreduce", k64M);
  EXPECT_NEAR(r64->a.median, 36378.35e3, 1e3) << "the time bench nccl's table printed, in ns";
  EXPECT_NEAR(r64->b.median, 72163.13e3, 1e3);
  EXPECT_NEAR(r64->a.rate, 1.84, 0.01);
  EXPECT_NEAR(r64->b.rate, 0.93, 0.01);
  for (const std::uint64_t size : {65536ull, 262144ull, 1048576ull}) {
    EXPECT_NE(row_of(c, "allreduce", size)->verdict, "slower") << size << ": latency-bound, one channel or two alike";
  }
  ASSERT_FALSE(c.patterns.empty()) << c.verdict;
  EXPECT_EQ(c.patterns[0].rfind("allreduce slower at 16 MiB, 64 MiB (2 of 6 sizes): time +", 0), 0u) << c.patterns[0];
  EXPECT_NE(c.patterns[0].find(", busbw -"), std::string::npos) << c.patterns[0];
  EXPECT_EQ(c.levels, "95.9 %") << "20 per-iteration events a run: [x(6), x(15)]";
  EXPECT_NE(c.noise.find("event pass"), std::string::npos) << c.noise;

  const auto cmd =
      test::run_binary_split("compare " + fixture("default-1") + " " + fixture("slow-1") + " --fail-on-change");
  EXPECT_EQ(cmd.code, 1) << cmd.out << cmd.err;
  EXPECT_NE(cmd.out.find("\n  allreduce slower at 16 MiB, 64 MiB"), std::string::npos) << cmd.out;
}

// Three runs a side: the figures are the samples; 3 give [min, max] at 75 %, which is
// what is printed, never "95 %".
TEST_F(CompareNccl, ThreeRunsASideHave75PercentIntervalsAndSaySo) {
  const auto a = compare::load_side({fixture("default-1"), fixture("default-2"), fixture("default-3")});
  const auto b = compare::load_side({fixture("slow-1"), fixture("slow-2"), fixture("slow-3")});
  const auto c = compare::compare(a, b);
  for (const auto& r : c.rows) {
    EXPECT_EQ(r.a.n, 3u);
    EXPECT_DOUBLE_EQ(r.a.level, 0.75);
    EXPECT_FALSE(r.by_events);
  }
  EXPECT_EQ(c.levels, "75 %");
  for (const auto size : {k16M, k64M}) {
    EXPECT_EQ(row_of(c, "allreduce", size)->verdict, "slower") << size;
  }
  EXPECT_NEAR(row_of(c, "allreduce", k64M)->a.median, 36824.96e3, 1e3) << "default-3's 64 MiB, the middle of three";
  const std::string cmd = "compare " + fixture("default-1") + " " + fixture("default-2") + " " + fixture("default-3") +
                          " vs " + fixture("slow-1") + " " + fixture("slow-2") + " " + fixture("slow-3");
  const auto out = test::run_binary_split(cmd + " --fail-on-change");
  EXPECT_EQ(out.code, 1) << out.err;
  EXPECT_NE(out.out.find("75 % intervals"), std::string::npos) << out.out;
  EXPECT_EQ(out.out.find("95 %"), std::string::npos) << out.out;
  EXPECT_EQ(out.out.find("95%"), std::string::npos) << out.out;
  const auto j = nlohmann::json::parse(test::run_binary_split(cmd + " --format json").out);
  EXPECT_EQ(j["interval_levels"], "75 %");
  EXPECT_EQ(j["rows"][0]["a"]["level"], 0.75);
}

// Two default runs: 16 MiB of allreduce ran 17.8 % slower in default-2, in every event
// of its pass (9.02-9.03 ms against 10.42-11.27): a difference between those runs,
// said as one; nothing else, and nothing at all between default-1 and default-3.
TEST_F(CompareNccl, DefaultRunsAgainstEachOtherChangeLittleOrNothing) {
  const auto one = compare::load(fixture("default-1"));
  const auto c12 = compare::compare(one, compare::load(fixture("default-2")));
  EXPECT_LE(c12.changed(), 1u) << c12.verdict;
  for (const auto& r : c12.rows) {
    if (r.subject != "allreduce" || r.size_bytes != k16M) {
      EXPECT_NE(r.verdict, "slower") << r.subject << " @ " << r.size_bytes;
      EXPECT_NE(r.verdict, "faster") << r.subject << " @ " << r.size_bytes;
    }
  }
  const auto c13 = compare::compare(one, compare::load(fixture("default-3")));
  EXPECT_EQ(c13.changed(), 0u) << c13.verdict;
  EXPECT_EQ(c13.verdict.rfind("no change", 0), 0u) << c13.verdict;
  const auto cmd =
      test::run_binary_split("compare " + fixture("default-1") + " " + fixture("default-3") + " --fail-on-change");
  EXPECT_EQ(cmd.code, 0) << cmd.out << cmd.err;
}

// Another rank count or dtype is refused naming both files and the setups; another op
// set, size set or machine is said in the notes.
TEST_F(CompareNccl, AnotherSetupIsRefusedAndAnotherMachineOrSizeSetSaid) {
  auto j = fixture_json("slow-1");
  j["ops"][0]["ranks"] = 4;
  write_text(base_ / "ranks4.json", j.dump());
  const auto bad = test::run_binary_split("compare " + fixture("default-1") + " " + (base_ / "ranks4.json").string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("default-1.json' ran allreduce of float over 2 ranks"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("ranks4.json' allreduce of float over 4 ranks"), std::string::npos) << bad.err;
  j = fixture_json("slow-1");
  j["ops"][1]["dtype"] = "half";
  write_text(base_ / "half.json", j.dump());
  EXPECT_THROW(compare::compare(compare::load(fixture("default-1")), compare::load((base_ / "half.json").string())),
               UsageError);
  // A side's runs must agree too.
  EXPECT_THROW(compare::load_side({fixture("default-1"), (base_ / "half.json").string()}), UsageError);

  j = fixture_json("slow-1");
  j["metadata"]["hostname"] = "other-host";
  j["ops"].erase(1);             // no sendrecv
  j["ops"][0]["rows"].erase(0);  // no 64 KiB
  write_text(base_ / "other.json", j.dump());
  const auto c = compare::compare(compare::load(fixture("default-1")), compare::load((base_ / "other.json").string()));
  std::string notes;
  for (const auto& n : c.notes) notes += n + "\n";
  EXPECT_NE(notes.find("sendrecv only in A"), std::string::npos) << notes;
  EXPECT_NE(notes.find("A ran on host vm, NVIDIA H200 x 1, NCCL 2.28.3, B on host other-host"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("1 points only in A (allreduce @ 64 KiB)"), std::string::npos) << notes;
  j["ops"][0]["op"] = "allgather";
  write_text(base_ / "gather.json", j.dump());
  try {
    compare::compare(compare::load(fixture("default-1")), compare::load((base_ / "gather.json").string()));
    ADD_FAILURE() << "no refusal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("no op in common"), std::string::npos) << e.what();
  }
}

// Malformed input: exit 2, a message naming the file and what is wrong, no library text.
TEST_F(CompareNccl, BadInputIsNamedByFileWithExit2AndNoLibraryText) {
  const std::string good = fixture("default-1");
  std::string text = test::slurp(good);
  struct Case {
    std::string name, content, expect;
  };
  const std::string row =
      R"({"ops": [{"op": "allreduce", "ranks": 2, "rows": [{"size_bytes": SIZE, "time_us": TIME}]}]})";
  const auto with = [&](const std::string& size, const std::string& time) {
    std::string s = row;
    s.replace(s.find("SIZE"), 4, size);
    s.replace(s.find("TIME"), 4, time);
    return s;
  };
  std::vector<Case> cases = {
      {"garbled.json", std::string(text).replace(text.find("\"schema_version\": 1,"), 20, "\"schema_version\": 1,,"),
       "is not valid JSON: it breaks at line 3, column"},
      {"cut.json", text.substr(0, text.size() / 2), "ends before its JSON does"},
      {"nan.json", with("65536", "NaN"), "is not valid JSON"},
      {"negative.json", with("-65536", "12.5"), "size_bytes is -65536, not a size in bytes"},
      {"fraction.json", with("65.5", "12.5"), "size_bytes is 65.5"},
      {"zero-time.json", with("65536", "0"), "allreduce @ 64 KiB: time_us is 0, not a positive number"},
      {"text-time.json", with("65536", "\"fast\""), "time_us is \"fast\""},
      {"deep.json", std::string(100000, '[') + std::string(100000, ']'), "is none of the results compare reads"},
      {"deep-object.json", "{\"a\":" + std::string(1000, '[') + std::string(1000, ']') + "}", "nested deeper than 64"},
      {"binary.json", std::string("{\0\1\2\3", 5), "is a binary file"},
      {"wrong-type.json", R"({"ops": [{"op": "allreduce", "ranks": 2, "rows": 5}]})",
       "an op without its name and rows"},
  };
  std::string many = R"({"ops": [{"op": "allreduce", "ranks": 2, "rows": [)";
  for (int i = 1; i <= 5000; ++i) many += fmt::format("{}{{\"size_bytes\": {}, \"time_us\": 1}}", i > 1 ? "," : "", i);
  cases.push_back({"rows.json", many + "]}]}", "allreduce has 5000 rows, past the 4096 that compare reads"});
  for (const auto& k : cases) write_text(base_ / k.name, k.content);
  fs::create_directories(base_ / "a-directory");
  cases.push_back({"a-directory", "", "is a directory"});
  for (const auto& k : cases) {
    const std::string path = (base_ / k.name).string();
    const auto r = test::run_binary_split("compare " + path + " " + good);
    EXPECT_EQ(r.code, 2) << k.name << ": " << r.err;
    EXPECT_NE(r.err.find("'" + path + "'"), std::string::npos) << k.name << ": " << r.err;
    EXPECT_NE(r.err.find(k.expect), std::string::npos) << k.name << ": " << r.err;
    EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << k.name << ": " << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << k.name << ": " << r.err;
  }
  // bench nccl's text table (its NCCL INFO lines first): its JSON is what compare reads.
  const std::string table = (fs::path(P2PSCOPE_FIXTURES_DIR) / "bench-nccl" / "compare" / "default-text.text").string();
  const auto text_table = test::run_binary_split("compare " + table + " " + good);
  EXPECT_EQ(text_table.code, 2) << text_table.err;
  EXPECT_NE(text_table.err.find("default-text.text' is bench nccl's text table"), std::string::npos) << text_table.err;
  // Several files a side: each must be bench nccl JSON.
  const auto side = test::run_binary_split("compare " + good + " " + (base_ / "a-directory").string() + " vs " + good);
  EXPECT_EQ(side.code, 2) << side.err;
  EXPECT_NE(side.err.find("is a directory"), std::string::npos) << side.err;
}
