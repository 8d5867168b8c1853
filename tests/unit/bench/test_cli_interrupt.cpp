// Ctrl-C during `bench gpu` and `bench nccl`: the row in progress finishes, every row
// measured is written (--out FILE), the JSON says it was interrupted, and the exit
// status is 130 as a shell expects. The host backend needs no GPU.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/child.hpp"

namespace fs = std::filesystem;
using p2pscope::test::spawn;
using p2pscope::test::wait_exit;

TEST(BenchInterrupt, SigintKeepsTheRowsMeasuredAndExits130) {
  const fs::path out = fs::temp_directory_path() / ("p2pscope-interrupt-" + std::to_string(::getpid()) + ".json");
  fs::remove(out);
  // Rows that double in length (20000 copies of 256 KiB .. 64 MiB: 0.2 s, 0.4 s, ... 50 s
  // here), so the signal lands in one of the first rows and the later ones stay unmeasured.
  const pid_t pid = spawn({"bench", "gpu", "--backend", "host", "--pairs", "0:1", "--sizes", "256K:64M", "--warmup", "0",
                           "--iters", "20000", "--format", "json", "--out", out.string()});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  std::ifstream in(out);
  ASSERT_TRUE(in) << "nothing written for the rows measured";
  const auto j = nlohmann::json::parse(in);
  EXPECT_TRUE(j.value("interrupted", false));
  const auto rows = j["rows"].size();
  EXPECT_LT(rows, 9u);
  EXPECT_NE(j.value("stopped", "").find(std::to_string(rows) + " of 9 rows measured"), std::string::npos) << j["stopped"];
  for (const auto& r : j["rows"]) EXPECT_EQ(r["check"], "ok");
  fs::remove(out);
}
