// Bad input is refused before any work: exit 2 and a message that names the flag (or
// the file) and says what to do. Each case is one a user met.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/run_binary.hpp"
#include "support/shell.hpp"

namespace {
using p2pscope::test::run_binary;
namespace fs = std::filesystem;

struct Case {
  const char* args;
  const char* names;  // the message must hold this
};

TEST(BadInput, RefusedWithExit2NamingTheFlag) {
  const Case cases[] = {
      {"bench gpu --backend host --pairs ''", "--pairs"},
      {"bench gpu --backend host --pairs 0:1,0:1", "--pairs"},
      {"bench gpu --backend host --sizes 0", "size '0'"},
      {"bench gpu --backend host --variant pull", "--variant"},
      {"bench tcp --loopback --mode latency --reverse", "--reverse"},
      {"bench tcp --loopback --sessions 2", "--sessions"},
      {"bench tcp --loopback --bind 127.0.0.1", "--bind"},
      {"run --reps 0 --out /nonexistent-p2pscope-dir", "--reps"},
      {"run --sizes 0 --out /nonexistent-p2pscope-dir", "--sizes"},
      {"run --step-timeout 0 --out /nonexistent-p2pscope-dir", "--step-timeout"},
      {"bench gpu --sizes 8:64K:x", "factor"},
      {"bench nccl -b 8 -e 1G --sizes 1M", "--sizes"},
      {"profile --backend host --timing single --min-sample-time 1ms --out /nonexistent-p2pscope-dir",
       "--min-sample-time"},
      {"survey --gpu-backend nccl", "--gpu-backend nccl: expected auto, none or one of"},
      {"survey --gpu-size 0", "--gpu-size"},
      {"survey --expect bw=fast", "'fast' is not a rate"},
      {"survey --expect speed=9", "'speed=9' is not KEY=VALUE"},
      {"survey --rails 0:1,0:1", "rail 0:1 given twice"},
      {"survey --per node", "--per node: expected host (one process per host) or gpu (one per GPU)"},
      {"survey --rails eth1:eth2", "only together with --nics"},
      {"survey --transport ib", "--transport ib: expected tcp (sockets), net (an NCCL net plugin) or nccl"},
      {"survey --plugin p2pscope", "--plugin goes with --transport net"},
      {"survey --sizes 0,1K", "size '0' is 0 bytes"},
      {"survey --sizes 1M", "give two sizes or more"},
      {"survey --sizes 1K,2G", "at most 1G per message"},
      {"survey --transport net --plugin /nonexistent/libnccl-net-x.so", "the plugin did not load"},
  };
  for (const auto& c : cases) {
    const auto r = run_binary(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.names), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(r.out.find("e+308"), std::string::npos) << c.args << "\n" << r.out;  // no DBL_MAX from the library
    EXPECT_EQ(r.out.find("1.79769"), std::string::npos) << c.args << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists("/nonexistent-p2pscope-dir")) << "run created its directory before refusing";
}

TEST(BadInput, CompressedAndBinaryLogsAreSaidAsWhatTheyAre) {
  const fs::path dir = fs::temp_directory_path() / ("p2pscope-bad-log-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path plain = fs::path(P2PSCOPE_FIXTURES_DIR) / "nccl-tests" / "p2p.log";
  ASSERT_EQ(p2pscope::test::run_shell("gzip -c " + plain.string() + " > " + (dir / "p2p.log.gz").string()).code, 0);
  {
    std::ofstream bin(dir / "core.bin", std::ios::binary);
    const char data[] = {'\x7f', 'E', 'L', 'F', 0, 0, 1, 2};
    bin.write(data, sizeof data);
  }
  const auto gz = run_binary("doctor --nccl-log " + (dir / "p2p.log.gz").string());
  EXPECT_EQ(gz.code, 2) << gz.out;
  EXPECT_NE(gz.out.find("gzip"), std::string::npos) << gz.out;
  EXPECT_EQ(gz.out.find("plain program output"), std::string::npos) << gz.out;
  const auto bin = run_binary("doctor --nccl-log " + (dir / "core.bin").string());
  EXPECT_EQ(bin.code, 2) << bin.out;
  EXPECT_NE(bin.out.find("binary"), std::string::npos) << bin.out;
  fs::remove_all(dir);
}

}  // namespace

// predict's flags that would change nothing for the algorithm asked, and a directory
// given for --measured's file (it read as "no nccl-tests table").
TEST(BadInput, PredictRefusesFlagsOfAnotherAlgorithmAndADirectoryForAFile) {
  const std::string dir = std::string(P2PSCOPE_FIXTURES_DIR) + "/nccl-calibration/h100x4";
  const struct {
    std::string args, names;
  } cases[] = {
      {"predict " + dir + " --algo tree --astra-backend aware --sizes 1M", "--astra-backend"},
      {"predict " + dir + " --algo nccl --astra-backend aware --sizes 1M", "--astra-backend"},
      {"predict " + dir + " --algo nccl --endpoint-delay 5 --sizes 1M", "--endpoint-delay"},
      {"predict " + dir + " --algo nccl --measured " + dir + " --sizes 1M", "is a directory"},
  };
  for (const auto& c : cases) {
    const auto r = run_binary(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.names), std::string::npos) << c.args << "\n" << r.out;
  }
  // The ring takes both.
  const auto ok = run_binary("predict " + dir + " --algo ring --astra-backend aware --endpoint-delay 5 --sizes 1M");
  EXPECT_EQ(ok.code, 0) << ok.out;
}
