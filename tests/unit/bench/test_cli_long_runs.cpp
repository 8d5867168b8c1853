// Long `bench gpu` runs: progress on stderr (stdout stays the JSON alone), and Ctrl-C:
// the row in progress stops between samples, every row measured is written (--out FILE), the JSON
// says it was interrupted, and the exit status is 130 as a shell expects. The host
// backend needs no GPU.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
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
  // The handler first (CI under ASan once took more than 1.5 s to reach it, and the
  // signal killed the run with nothing written), then a few rows' time.
  ASSERT_TRUE(p2pscope::test::wait_catching(pid, SIGINT)) << "the run never set its SIGINT handler";
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  std::ifstream in(out);
  ASSERT_TRUE(in) << "nothing written for the rows measured";
  const auto j = nlohmann::json::parse(in);
  EXPECT_TRUE(j.value("interrupted", false));
  const auto rows = j["rows"].size();
  EXPECT_LT(rows, 9u);
  EXPECT_NE(j.value("stopped", "").find(std::to_string(rows) + " of 9 rows measured"), std::string::npos) << j["stopped"];
  // Rows measured in full were checked; a row cut short keeps its samples, unchecked.
  for (std::size_t i = 0; i < rows; ++i) {
    const auto& r = j["rows"][i];
    if (i + 1 == rows && r.value("note", "").rfind("interrupted:", 0) == 0)
      EXPECT_EQ(r["check"], "-");
    else
      EXPECT_EQ(r["check"], "ok");
  }
  fs::remove(out);
}

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Exit code; stdout and stderr into files beside each other.
int run_to(const std::string& args, const fs::path& out, const fs::path& err) {
  const std::string cmd = std::string(P2PSCOPE_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
}  // namespace

TEST(BenchProgress, LongSweepsSayHowFarTheyAreShortOnesStaySilent) {
  const fs::path base = fs::temp_directory_path() / ("p2pscope-progress-" + std::to_string(::getpid()));
  // Short: a few milliseconds, nothing on stderr.
  ASSERT_EQ(run_to("bench gpu --backend host --sizes 4K:64K --iters 5 --format json", base.string() + ".out",
                   base.string() + ".err"),
            0);
  EXPECT_EQ(slurp(base.string() + ".err").find("[bench gpu]"), std::string::npos) << slurp(base.string() + ".err");
  // Long: 60 copies of up to 128 MiB both ways after allocating 4 x 128 MiB: seconds.
  ASSERT_EQ(run_to("bench gpu --backend host --sizes 1:128M --iters 60 --warmup 1 --format json",
                   base.string() + ".out", base.string() + ".err"),
            0);
  const std::string err = slurp(base.string() + ".err");
  EXPECT_NE(err.find("[bench gpu] 56/56 (100%)"), std::string::npos) << err;
  EXPECT_NE(err.find("1->0 128 MiB: "), std::string::npos) << "the last row and its figure: " << err;
  EXPECT_EQ(nlohmann::json::parse(slurp(base.string() + ".out"))["rows"].size(), 56u) << "stdout is the JSON alone";
  fs::remove(base.string() + ".out");
  fs::remove(base.string() + ".err");
}
