// `monitor -- CMD`: the threads sampled are the command's, and a busy machine is not
// blamed on a command that sleeps. Before, the sampled threads were p2pscope's own
// (the one waiting for the child) and `monitor -- sleep 2` said "CPU-bound" because
// other processes kept the CPUs busy.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include "support/shell.hpp"

namespace fs = std::filesystem;

namespace {
std::string run(const std::string& cmd, int* rc) {
  const p2pscope::test::ShellResult r = p2pscope::test::run_shell(cmd);
  *rc = r.code;
  return r.out;
}

using p2pscope::test::slurp;

// A process spinning on the CPU until killed: the "other processes" of a busy box.
pid_t spinner() {
  const pid_t pid = fork();
  if (pid == 0) {
    volatile unsigned long x = 0;
    for (;;) x = x + 1;
  }
  return pid;
}
}  // namespace

TEST(MonitorCommand, SamplesTheCommandsThreadsAndDoesNotBlameItForOthersLoad) {
  if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (make build)";
  const fs::path dir = fs::temp_directory_path() / ("p2ps-moncmd-" + std::to_string(getpid()));
  fs::remove_all(dir);
  // One spinner per CPU keeps every CPU busy while the command sleeps.
  std::vector<pid_t> spinners;
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < cpus; ++i) spinners.push_back(spinner());
  int rc = -1;
  const std::string out = run(std::string(P2PSCOPE_BINARY) + " monitor --interval 200ms --out " + dir.string() +
                                  " -- sleep 2 2>/dev/null",
                              &rc);
  for (pid_t p : spinners) kill(p, SIGKILL), waitpid(p, nullptr, 0);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("verdict: CPU-bound"), std::string::npos) << out;
  const auto j = nlohmann::json::parse(slurp(dir / "summary.json"));
  bool sleep_seen = false, own_threads = false;
  for (const auto& t : j["monitor"]["threads"]) {
    const std::string name = t.value("name", "");
    sleep_seen = sleep_seen || name == "sleep";
    own_threads = own_threads || name == "p2ps-monitor";  // the sampler: a thread of p2pscope, not of the command
  }
  EXPECT_TRUE(sleep_seen) << "the command's own thread was not sampled: " << j["monitor"]["threads"].dump();
  EXPECT_FALSE(own_threads) << "p2pscope's threads were sampled instead of the command's";
  fs::remove_all(dir);
}
