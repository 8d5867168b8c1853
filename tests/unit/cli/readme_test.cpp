// The README's "Typical uses" lines, run as written: every line not tagged [GPU],
// [2 hosts] or [nccl-tests] must exit 0 in a fresh directory with `p2pscope` on PATH
// (the doctor line reads nccl.log: a captured NCCL_DEBUG=INFO log is put there). The
// command `sweep tcp` prints as the best must run as printed too. A line that only
// works with inputs the README does not name, or a flag renamed in the code and not in
// the README, fails here.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include "support/shell.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> typical_uses() {
  std::ifstream in(fs::path(P2PSCOPE_SOURCE_DIR) / "README.md");
  std::vector<std::string> lines;
  bool after_heading = false, in_block = false;
  for (std::string line; std::getline(in, line);) {
    if (!after_heading) {
      after_heading = line.rfind("Typical uses", 0) == 0;
      continue;
    }
    if (!in_block) {
      in_block = line.rfind("```sh", 0) == 0;
      continue;
    }
    if (line.rfind("```", 0) == 0) break;
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

bool needs_what_is_not_here(const std::string& line) {
  for (const char* tag : {"[GPU]", "[2 hosts]", "[nccl-tests]"})
    if (line.find(tag) != std::string::npos) return true;
  return false;
}

std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `line` with sh in `dir`, p2pscope first on PATH; exit status and output.
int run_line(const fs::path& dir, const std::string& line, std::string* out) {
  const std::string bin_dir = fs::path(P2PSCOPE_BINARY).parent_path().string();
  const std::string cmd = "cd " + sh_quote(dir.string()) + " && PATH=" + sh_quote(bin_dir) + ":\"$PATH\" timeout 240 sh -c " +
                          sh_quote(line) + " </dev/null 2>&1";
  const p2pscope::test::ShellResult r = p2pscope::test::run_shell(cmd);
  out->append(r.out);
  return r.code;
}

}  // namespace

TEST(Readme, TypicalUsesRunAsWrittenWhereNoGpuIsNeeded) {
  if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built: " << P2PSCOPE_BINARY;
  const auto lines = typical_uses();
  ASSERT_GE(lines.size(), 10u) << "the Typical uses block was not found in README.md";
  const fs::path dir = fs::temp_directory_path() / ("p2pscope-readme-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(fs::path(P2PSCOPE_FIXTURES_DIR) / "nccl-logs" / "default-p2p.log", dir / "nccl.log");
  std::size_t ran = 0;
  for (const auto& line : lines) {
    if (needs_what_is_not_here(line)) continue;
    std::string out;
    const int rc = run_line(dir, line, &out);
    EXPECT_EQ(rc, 0) << line << "\n" << out.substr(out.size() > 3000 ? out.size() - 3000 : 0);
    ++ran;
    // The best point of a sweep is printed as a command: it must run as printed.
    const auto best = out.find("\nbest: ");
    if (line.find("sweep tcp") != std::string::npos) {
      ASSERT_NE(best, std::string::npos) << out;
      const auto end = out.find("  -> ", best);
      const std::string command = out.substr(best + 7, end - best - 7);
      EXPECT_NE(command.find("--loopback"), std::string::npos) << command;
      std::string out2;
      EXPECT_EQ(run_line(dir, command, &out2), 0) << command << "\n" << out2;
    }
  }
  EXPECT_GE(ran, 7u);
  // The sweep without --out and the campaign both went under p2pscope-out/.
  bool sweep_dir = false;
  for (const auto& e : fs::directory_iterator(dir / "p2pscope-out"))
    sweep_dir = sweep_dir || e.path().filename().string().rfind("sweep-tcp-", 0) == 0;
  EXPECT_TRUE(sweep_dir);
  EXPECT_TRUE(fs::exists(dir / "p2pscope-out" / "latest" / "report.html"));
  EXPECT_TRUE(fs::exists(dir / "network.yml"));
  fs::remove_all(dir);
}

// With two campaigns, a glob names both: analyze says so and how to name one, and
// --latest picks the newest. Before, CLI11 answered "unexpected argument".
TEST(Readme, AnalyzeTakesOneCampaignAndLatestPicksTheNewest) {
  if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built: " << P2PSCOPE_BINARY;
  const fs::path dir = fs::temp_directory_path() / ("p2pscope-latest-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string out;
  ASSERT_EQ(run_line(dir, "p2pscope profile --backend host --sizes 4K,64K --reps 2 --warmup 1 --drift 0", &out), 0) << out;
  sleep(1);  // campaign folders are named by the second
  ASSERT_EQ(run_line(dir, "p2pscope profile --backend host --sizes 4K,64K --reps 2 --warmup 1 --drift 0", &out), 0) << out;
  out.clear();
  EXPECT_EQ(run_line(dir, "p2pscope analyze p2pscope-out/profile-*/", &out), 2) << out;
  EXPECT_NE(out.find("2 were given"), std::string::npos) << out;
  EXPECT_NE(out.find("--latest"), std::string::npos) << out;
  std::vector<std::string> campaigns;
  for (const auto& e : fs::directory_iterator(dir / "p2pscope-out"))
    if (e.path().filename().string().rfind("profile-", 0) == 0) campaigns.push_back(e.path().filename().string());
  ASSERT_EQ(campaigns.size(), 2u);
  std::sort(campaigns.begin(), campaigns.end());
  EXPECT_EQ(fs::read_symlink(dir / "p2pscope-out" / "latest").string(), campaigns.back());
  out.clear();
  EXPECT_EQ(run_line(dir, "p2pscope analyze --latest", &out), 0) << out;
  EXPECT_TRUE(fs::exists(dir / "p2pscope-out" / campaigns.back() / "report.html"));
  EXPECT_FALSE(fs::exists(dir / "p2pscope-out" / campaigns.front() / "report.html"));
  fs::remove_all(dir);
}

namespace {
// The first screen is the quick start: what it does, what it needs, `make run` and how
// long, three commands, what you get; and no word of the project's own history.
TEST(Readme, FirstScreenIsTheQuickStart) {
  std::ifstream in(fs::path(P2PSCOPE_SOURCE_DIR) / "README.md");
  std::string first, all;
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    if (n < 25) first += line + "\n";
    all += line + "\n";
  }
  for (const char* must : {"make run", "Debian", "root", "CUDA", "min", "index.html", "```sh"})
    EXPECT_NE(first.find(must), std::string::npos) << must << "\n" << first;
  for (const char* history : {"seed 0", "issue", "the last round"})
    EXPECT_EQ(all.find(history), std::string::npos) << history;
}
}  // namespace
