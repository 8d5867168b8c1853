// The words users of nccl-tests, nvbandwidth and iperf3 already type: each anchor's
// example line runs (or, without a GPU, gets past the parser and the option checks to
// the "no GPU" error), each unmappable habit gets the p2pscope flag to use, and the
// arguments CLI11 does not expect are listed in the order typed.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "support/loopback_port.hpp"
#include "support/run_binary.hpp"
#include "support/shell.hpp"

namespace {
using p2pscope::test::run_binary;
using p2pscope::test::run_binary_env;
using p2pscope::test::run_binary_split;

bool has(const std::string& s, const std::string& x) { return s.find(x) != std::string::npos; }

// Exit 2 is a usage error: an alias that maps must never give it, save for what this
// machine lacks (NCCL not built in, no GPU), said after every option was checked.
void expect_accepted(const std::string& args) {
  const auto r = run_binary(args);
  if (r.code == 2) {
    EXPECT_TRUE(has(r.out, "not built in") || has(r.out, "no GPU")) << args << "\n" << r.out;
  }
  EXPECT_FALSE(has(r.out, "not expected")) << args << "\n" << r.out;
  EXPECT_FALSE(has(r.out, "unexpected argument")) << args << "\n" << r.out;
}

TEST(Anchors, NcclTestsFlagsMapOnBenchNccl) {
  // all_reduce_perf -b 8 -e 1G -f 2 -g 4 (the line) and the rest of nccl-tests' common flags.
  expect_accepted("bench nccl -b 8 -e 1G -f 2");
  expect_accepted("bench nccl -b 8 -e 128M -f 2 -g 1 -n 20 -w 5 -c 1 -d float -o sum");
  expect_accepted("bench nccl --minbytes 1M --maxbytes 64M --stepfactor 4 --iters 5 --warmup_iters 2 --datatype half");
  EXPECT_EQ(run_binary_env("P2PSCOPE_PARSE_ONLY=1", "bench nccl -b 8 -e 1G -f 2 -g 4 -n 20 -w 5 -c 1 -d float -o sum").code, 0);
}

TEST(Anchors, NcclTestsFlagsThatCannotBeHonouredAreRefusedByName) {
  const auto both = run_binary("bench nccl -b 8 -e 1G --sizes 1M");
  EXPECT_EQ(both.code, 2) << both.out;
  EXPECT_TRUE(has(both.out, "--sizes") && has(both.out, "-b")) << both.out;
  const auto redop = run_binary("bench nccl -o max");
  EXPECT_EQ(redop.code, 2) << redop.out;
  EXPECT_TRUE(has(redop.out, "-o") && has(redop.out, "sum")) << redop.out;
  const auto step = run_binary("bench nccl -b 8 -e 1G -f 1");
  EXPECT_EQ(step.code, 2) << step.out;
  EXPECT_TRUE(has(step.out, "-f")) << step.out;
  const auto down = run_binary("bench nccl -b 1G -e 8");
  EXPECT_EQ(down.code, 2) << down.out;
}

TEST(Anchors, UnmappableHabitsSayWhatToUseInTheOrderTyped) {
  const auto r = run_binary("bench nccl -t 4 -i 1M");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "unexpected arguments: -t 4 -i 1M")) << r.out;  // not "1M -i 4 -t"
  EXPECT_TRUE(has(r.out, "-g N")) << r.out;
  EXPECT_TRUE(has(r.out, "--sizes 1M,2M,3M")) << r.out;
  const auto typo = run_binary("bench gpu --patern bidir");
  EXPECT_EQ(typo.code, 2) << typo.out;
  EXPECT_TRUE(has(typo.out, "did you mean --pattern?")) << typo.out;
  const auto udp = run_binary("bench tcp --loopback -u");
  EXPECT_EQ(udp.code, 2) << udp.out;
  EXPECT_TRUE(has(udp.out, "iperf3's -u")) << udp.out;
  const auto irq = run_binary("irq diff --interval 10s");
  EXPECT_EQ(irq.code, 2) << irq.out;
  EXPECT_TRUE(has(irq.out, "--duration")) << irq.out;
}

TEST(Anchors, SizeStepAsNcclTests) {
  EXPECT_EQ(run_binary_env("P2PSCOPE_PARSE_ONLY=1", "bench gpu --sizes 8:64K:4").code, 0);
  const auto r = run_binary_split("bench gpu --backend host --sizes 8:64K:4 --pairs 0:1 --iters 2 --warmup 0 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::uint64_t> sizes;
  for (const auto& row : j["rows"]) sizes.push_back(row["size_bytes"].get<std::uint64_t>());
  EXPECT_EQ(sizes, (std::vector<std::uint64_t>{8, 32, 128, 512, 2048, 8192, 32768})) << r.out.substr(0, 2000);
}

TEST(Anchors, NvbandwidthTestcaseNamesOnBenchGpu) {
  const auto list = run_binary("bench gpu --list");
  EXPECT_EQ(list.code, 0) << list.out;
  for (const char* t : {"device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_ce",
                        "device_to_device_bidirectional_memcpy_read_ce", "device_to_device_memcpy_read_sm",
                        "host_to_device_memcpy_ce", "device_to_device_latency_sm"})
    EXPECT_TRUE(has(list.out, t)) << t;
  expect_accepted("bench gpu -t device_to_device_memcpy_read_ce");
  expect_accepted("bench gpu -t device_to_device_memcpy_write_ce -b 64");
  const auto near = run_binary("bench gpu -t read_ce");
  EXPECT_EQ(near.code, 2) << near.out;
  EXPECT_TRUE(has(near.out, "did you mean device_to_device_memcpy_read_ce")) << near.out;
  const auto clash = run_binary("bench gpu -t device_to_device_memcpy_read_ce --backend sm");
  EXPECT_EQ(clash.code, 2) << clash.out;
  EXPECT_TRUE(has(clash.out, "--backend")) << clash.out;
}

TEST(Anchors, Iperf3FlagsOnBenchTcpLoopback) {
  // iperf3 -P 2 -J -R, in process over 127.0.0.1.
  const auto r = run_binary_split("bench tcp --loopback -P 2 -J -R --size 2M --iters 2");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["params"]["channels"], 2) << r.out.substr(0, 1500);
  EXPECT_EQ(j["params"]["reverse"], true) << r.out.substr(0, 1500);
  const auto t = run_binary("bench tcp --loopback -t 10");
  EXPECT_EQ(t.code, 2) << t.out;
  EXPECT_TRUE(has(t.out, "--iters")) << t.out;
  const auto pc = run_binary("bench tcp --loopback -P 2 --channels 4");
  EXPECT_EQ(pc.code, 2) << pc.out;
}

// iperf3 -s -p PORT / iperf3 -c localhost -p PORT: a host name works as the server's address.
TEST(Anchors, Iperf3ServerAndClientByHostName) {
  const std::string port = std::to_string(p2pscope::test::free_port());
  const auto r = p2pscope::test::run_shell(
      std::string("(") + P2PSCOPE_BINARY + " bench tcp -s --bind 127.0.0.1 -p " + port +
      " --sessions 1 --accept-timeout 30 >/dev/null 2>&1 &) ; for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.3; " +
      P2PSCOPE_BINARY + " bench tcp -c localhost -p " + port + " --size 1M --iters 2 2>&1 && exit 0; done; exit 1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "Gbit/s")) << r.out;
}

}  // namespace
