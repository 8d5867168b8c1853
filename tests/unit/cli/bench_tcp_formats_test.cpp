// `bench tcp` and `bench net` through the built binary in every format (issue 33 item 2,
// issue 31 item 8): CSV a program reads as is, JSON that starts with schema_version and
// the run metadata (as bench gpu's), --out that refuses to replace a file without
// --force, and a bad --format refused before any session, naming the flag.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "p2pscope/files.hpp"
#include "support/csv_rows.hpp"
#include "support/run_binary.hpp"

namespace fs = std::filesystem;
using p2pscope::test::csv_header;
using p2pscope::test::csv_rows;
using p2pscope::test::run_binary_split;

namespace {

const std::string kTcp = "bench tcp --loopback --channels 2 --size 2M --chunk 256K --iters 2 --warmup 0";

class BenchTcpFormats : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (make build)";
    dir_ = fs::temp_directory_path() / ("p2pscope-tcp-formats-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// bench net over the reference plugin built beside the binary; "" where it is not built.
std::string bench_net() {
  const fs::path refnet = fs::path(P2PSCOPE_BINARY).parent_path() / "lib" / "libnccl-net-p2pscope.so";
  if (!fs::exists(refnet)) return "";
  return "bench net --plugin " + refnet.string() + " --loopback --channels 2 --size 2M --chunk 256K --iters 2 --warmup 0";
}
const char* kRefnetEnv = "P2PSCOPE_REFNET_IFS=lo";

// The first two keys as printed, in order.
std::pair<std::string, std::string> head_keys(const std::string& json) {
  const auto j = nlohmann::ordered_json::parse(json);
  auto it = j.begin();
  const std::string first = it.key();
  return {first, (++it).key()};
}

}  // namespace

TEST_F(BenchTcpFormats, CsvIsOneHeaderAndTheChannelNicAndTotalRows) {
  const auto r = run_binary_split(kTcp + " --format csv");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(csv_header(r.out).front(), "table");
  EXPECT_EQ(r.out.find('#'), std::string::npos) << "no comment lines:\n" << r.out;
  EXPECT_EQ(r.out.find("Per channel"), std::string::npos) << "text in the CSV:\n" << r.out;
  std::map<std::string, int> tables;
  std::map<std::string, double> channel_sum;  // by side
  for (const auto& row : csv_rows(r.out)) {
    ++tables[row.at("table")];
    const std::string rate = row.at("table") == "total" ? row.at(row.at("side") == "client" ? "send_GB/s" : "recv_GB/s")
                                                         : row.at("GB/s");
    // A channel may get no chunk of a round when the other takes them all (8 chunks of
    // 2 channels, on a loaded machine): its rate is 0, the channels' sum is not.
    if (row.at("table") == "channel") {
      EXPECT_GE(std::stod(rate), 0) << row.at("side");
      channel_sum[row.at("side")] += std::stod(rate);
    } else {
      EXPECT_GT(std::stod(rate), 0) << row.at("table") << " " << row.at("side");
    }
  }
  for (const char* side : {"client", "server"}) EXPECT_GT(channel_sum[side], 0) << side;
  EXPECT_EQ(tables, (std::map<std::string, int>{{"channel", 4}, {"nic", 2}, {"total", 2}})) << r.out;
}

// schema_version first, then the metadata block: as bench gpu, bench nccl and compare.
TEST_F(BenchTcpFormats, JsonStartsWithSchemaVersionThenRunMetadata) {
  for (const std::string& args : {kTcp + " --format json", kTcp + " -J", std::string("bench gpu --backend host --warmup 0 "
                                                                                    "--iters 1 --pairs 0:1 --sizes 4K --format json")}) {
    const auto r = run_binary_split(args);
    ASSERT_EQ(r.code, 0) << args << ": " << r.err;
    EXPECT_EQ(head_keys(r.out), std::make_pair(std::string("schema_version"), std::string("metadata"))) << args;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["schema_version"], 1);
    EXPECT_TRUE(j["metadata"].contains("argv")) << args;
  }
}

TEST_F(BenchTcpFormats, BenchNetPrintsTheSameFormats) {
  const std::string net = bench_net();
  if (net.empty()) GTEST_SKIP() << "reference plugin not built";
  const auto js = run_binary_split(net + " --format json", kRefnetEnv);
  ASSERT_EQ(js.code, 0) << js.err;
  EXPECT_EQ(head_keys(js.out).first, "schema_version");
  EXPECT_TRUE(nlohmann::json::parse(js.out).contains("plugin"));
  const auto csv = run_binary_split(net + " --format csv", kRefnetEnv);
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv_rows(csv.out).size(), 8u) << csv.out;  // 4 channel rows, 2 NICs, 2 totals
  EXPECT_EQ(csv.out.find("data path:"), std::string::npos) << "a note for people in the CSV";
  const auto bad = run_binary_split(net + " --format xml", kRefnetEnv);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--format 'xml': use text, csv or json"), std::string::npos) << bad.err;
}

// --out FILE: written whole; an existing file is kept unless --force (exit 2, naming it).
TEST_F(BenchTcpFormats, OutRefusesToReplaceAFileWithoutForce) {
  const fs::path file = dir_ / "tcp.csv";
  auto r = run_binary_split(kTcp + " --format csv --out " + file.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "") << "the results went to the file";
  const std::string first = p2pscope::read_regular_file(file);
  EXPECT_EQ(csv_header(first).front(), "table");
  r = run_binary_split(kTcp + " --format csv --out " + file.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(p2pscope::read_regular_file(file), first) << "replaced without --force";
  r = run_binary_split(kTcp + " --out " + file.string() + " --force");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(p2pscope::read_regular_file(file).find("Per channel"), std::string::npos) << "--force replaces it (text now)";
  // One file holds one session: a server of several is refused before it listens.
  r = run_binary_split("bench tcp --server --port 0 --sessions 2 --out " + (dir_ / "s.json").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
}

TEST_F(BenchTcpFormats, BadFormatIsExitTwoNamingTheFlagBeforeAnySession) {
  auto r = run_binary_split("bench tcp --loopback --format xml");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--format 'xml': use text, csv or json"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  r = run_binary_split("bench tcp --loopback -J --format csv");  // iperf3's -J and another format: as before
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("-J/--json and --format csv disagree"), std::string::npos) << r.err;
}
