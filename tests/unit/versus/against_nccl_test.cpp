// bench tcp|net --against-nccl: NCCL's shape read from a real log, the verdict from the
// three rates, and rank 0's JSON read as data (src/versus/).
#include <gtest/gtest.h>

#include "p2pscope/tune.hpp"
#include "versus/against_nccl.hpp"
#include "versus/nccl_pair_run.hpp"

namespace p2pscope::versus {
namespace {

std::string fixture(const std::string& name) { return std::string(P2PSCOPE_FIXTURES_DIR) + "/nccl-logs/" + name; }

bool any_has(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

PathShape side(const char* who, double gbps, int channels, int sockets, std::uint64_t chunk, int window) {
  PathShape s;
  s.who = who;
  s.transport = "NET/Socket";
  s.channels = channels;
  s.sockets_per_channel = sockets;
  s.chunk_bytes = chunk;
  s.window = window;
  s.bytes_per_s = gbps * 1e9;
  return s;
}

// A real NCCL 2.28 log of two ranks on one H200 (NCCL_HOSTID stand-in), with
// NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1: its send/recv used p2p channels 04-07.
TEST(AgainstNccl, NcclsShapeIsReadFromItsOwnLog) {
  const auto log = tune::read_nccl_log_file(fixture("faults/socket-threads-1.log"));
  const PathShape s = nccl_shape_from_log(log, 0, 1, {});
  EXPECT_EQ(s.transport, "NET/Socket");
  EXPECT_EQ(s.channels, 4);
  EXPECT_EQ(s.sockets_per_channel, 1);
  EXPECT_EQ(s.threads_per_channel, 1);
  EXPECT_EQ(s.chunk_bytes, 131072u);
  EXPECT_EQ(s.window, 8);
  EXPECT_NE(s.memory.find("staged through host memory"), std::string::npos) << s.memory;
  EXPECT_NE(s.cpus.find("0-15"), std::string::npos) << s.cpus;
  ASSERT_FALSE(s.nics.empty());
  EXPECT_EQ(s.nics.front(), "eth0");
  // The other direction was never used for data by this run's send/recv: not 4 channels of it.
  EXPECT_NE(nccl_shape_from_log(log, 5, 6, {}).channels, 4);
}

// Rank 0's log of a real --against-nccl run (bench tcp --loopback --gpus 0, one H200,
// 2026-12-02): NCCL's defaults, which do not log their socket threads.
TEST(AgainstNccl, ARealAgainstNcclRunsLogGivesTwoChannelsOverLo) {
  const auto log = tune::read_nccl_log_file(fixture("against-nccl/sockets-rank0.log"));
  const PathShape s = nccl_shape_from_log(log, 0, 1, nccl_env_for_sockets({"lo"}));
  EXPECT_EQ(s.transport, "NET/Socket");
  EXPECT_EQ(s.channels, 2);
  EXPECT_EQ(s.sockets_per_channel, -1);  // not logged, not set: unknown, never guessed
  EXPECT_EQ(s.chunk_bytes, 131072u);
  ASSERT_EQ(s.nics.size(), 1u);
  EXPECT_EQ(s.nics[0], "lo");
  const auto plug = tune::read_nccl_log_file(fixture("against-nccl/refnet-rank0.log"));
  EXPECT_EQ(nccl_shape_from_log(plug, 0, 1, {}).transport, "NET/p2pscope-refnet");
}

TEST(AgainstNccl, WhenTheEngineAtNcclsShapeMovesWhatNcclMovesTheSettingsAreTheGap) {
  const auto a = compare_with_nccl(side("engine", 11.6, 4, 1, 1 << 20, 8), side("nccl", 2.7, 2, 1, 128 << 10, 8),
                                   side("shaped", 2.9, 2, 1, 128 << 10, 8));
  ASSERT_GE(a.verdict.size(), 2u);
  EXPECT_NE(a.verdict[0].find("4.30x faster"), std::string::npos) << a.verdict[0];
  EXPECT_TRUE(any_has(a.verdict, "the settings explain the gap")) << a.verdict[1];
  EXPECT_TRUE(any_has(a.differences, "flows")) << a.differences.front();
  EXPECT_TRUE(any_has(a.nccl_settings, "NCCL_NCHANNELS_PER_NET_PEER=4"));
  EXPECT_TRUE(any_has(a.nccl_settings, "NCCL_P2P_NET_CHUNKSIZE=1048576"));
}

TEST(AgainstNccl, WhenTheEngineAtNcclsShapeIsStillFasterTheRestIsNcclsOwnPath) {
  // gap 10 - 2 = 8; at NCCL's shape 6: (6 - 2) / 8 = 50 % of it is NCCL's path.
  const auto a = compare_with_nccl(side("engine", 10, 4, 1, 1 << 20, 8), side("nccl", 2, 2, 1, 128 << 10, 8),
                                   side("shaped", 6, 2, 1, 128 << 10, 8));
  EXPECT_TRUE(any_has(a.verdict, "50 % of the gap is NCCL's own path")) << a.verdict[1];
}

TEST(AgainstNccl, WhenNcclsShapeIsNoWorseForTheEngineAllOfTheGapIsNcclsPath) {
  // Measured on one H200 with 1 channel: the engine 4.8, NCCL 2.7, the engine at NCCL's 2 channels 5.1.
  const auto a = compare_with_nccl(side("engine", 4.8, 1, 1, 1 << 20, 8), side("nccl", 2.7, 2, 1, 128 << 10, 8),
                                   side("shaped", 5.1, 2, 1, 128 << 10, 8));
  EXPECT_TRUE(any_has(a.verdict, "all of the gap is NCCL's own path")) << a.verdict[1];
  // NCCL's socket count was not known (-1 in the real default log): no socket advice is made up.
  const auto unknown = compare_with_nccl(side("engine", 4.8, 4, 1, 1 << 20, 8), side("nccl", 2.7, 2, -1, 128 << 10, 8),
                                         side("shaped", 4.3, 2, 1, 128 << 10, 8));
  EXPECT_FALSE(any_has(unknown.nccl_settings, "NCCL_SOCKET_NTHREADS"));
  EXPECT_TRUE(any_has(unknown.nccl_settings, "NCCL_NCHANNELS_PER_NET_PEER=4"));
  EXPECT_FALSE(any_has(a.verdict, "100 %"));
}

TEST(AgainstNccl, EqualRatesSayTheTransportIsTheLimitAndAMissingFigureIsNamed) {
  const auto same = compare_with_nccl(side("engine", 2.0, 2, 1, 128 << 10, 8), side("nccl", 1.9, 2, 1, 128 << 10, 8),
                                      std::nullopt);
  EXPECT_NE(same.verdict[0].find("the same within 15 %"), std::string::npos) << same.verdict[0];
  const auto none = compare_with_nccl(side("engine", 2.0, 2, 1, 0, 8), side("nccl", 0, -1, -1, 0, 8), std::nullopt);
  EXPECT_NE(none.verdict[0].find("NCCL's run gave no figure"), std::string::npos) << none.verdict[0];
  EXPECT_NE(format_against_nccl(none).find("not measured"), std::string::npos);
}

TEST(AgainstNccl, RankZerosJsonIsReadAsDataAndABadOneIsNamed) {
  NcclPairRun run;
  const std::string ok = R"({"rows":[{"src":0,"dst":1,"size_bytes":268435456,"supported":true,
      "time_ns":{"n":10,"median":100000000,"p5":80000000,"p95":125000000},"check":"ok"}]})";
  EXPECT_EQ(read_pair_json(ok, run), "");
  EXPECT_DOUBLE_EQ(run.bytes_per_s, 268435456 / 0.1);
  EXPECT_DOUBLE_EQ(run.lo_bytes_per_s, 268435456 / 0.125);  // the slowest time is the lowest rate
  EXPECT_DOUBLE_EQ(run.hi_bytes_per_s, 268435456 / 0.08);
  EXPECT_EQ(run.iters, 10);
  NcclPairRun bad;
  EXPECT_NE(read_pair_json("{\"rows\":[", bad), "");
  EXPECT_NE(read_pair_json(R"({"rows":[{"supported":false,"reason":"no peer"}]})", bad).find("no peer"), std::string::npos);
  EXPECT_NE(read_pair_json(R"({"rows":[{"supported":true,"size_bytes":8,"time_ns":{"median":-1}}]})", bad), "");
  EXPECT_EQ(bad.bytes_per_s, 0);
}

TEST(AgainstNccl, TheSocketEnvironmentNamesExactlyTheEnginesInterfaces) {
  const auto env = nccl_env_for_sockets({"eth1", "eth2"});
  EXPECT_EQ(env.at("NCCL_SOCKET_IFNAME"), "=eth1,eth2");
  EXPECT_EQ(env.at("NCCL_NET"), "Socket");
  EXPECT_EQ(env.at("NCCL_P2P_DISABLE"), "1");
  const auto plug = nccl_env_for_plugin("/x/libnccl-net-p2pscope.so", "p2pscope-refnet");
  EXPECT_EQ(plug.at("NCCL_NET"), "p2pscope-refnet");
}

}  // namespace
}  // namespace p2pscope::versus
