// Without --backend, bench gpu, profile and profile --pattern take the same backend:
// bench::default_backend for this machine (on a one-GPU host `profile --pattern` used
// to take ce and refuse, where the others took staged). Here (no GPU) all say host;
// on a GPU machine the same test checks ce or staged.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"
#include "support/run_binary.hpp"

using namespace p2pscope::bench;
namespace fs = std::filesystem;

namespace {

using CliRun = p2pscope::test::SplitResult;
using p2pscope::test::run_binary_split;

// stdout and stderr apart, so JSON on stdout parses.
CliRun run(const std::string& args) { return run_binary_split(args); }

}  // namespace

TEST(DefaultBackendCli, EveryCommandTakesTheSameOne) {
  if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (make build)";
  const DefaultBackend want = default_backend(this_machine());
  const fs::path dir = fs::path(::testing::TempDir()) / ("p2pscope_defbk_" + std::to_string(getpid()));
  fs::remove_all(dir);

  // The pair 0 -> 1 exists for every default: two GPUs, a GPU and host memory, two host buffers.
  const CliRun bench = run("bench gpu --warmup 0 --iters 2 --sizes 4K --pairs 0:1 --format json");
  ASSERT_EQ(bench.code, 0) << bench.err;
  const std::string bench_backend = nlohmann::json::parse(bench.out).value("backend", "");
  EXPECT_EQ(bench_backend.substr(0, want.name.size()), want.name) << bench_backend;

  const CliRun prof = run("profile --sizes 4K --reps 1 --warmup 0 --pairs 0:1 --drift 0 --thermal-warmup off --out " +
                          (dir / "campaign").string());
  EXPECT_NE(prof.err.find("profile: backend " + want.reason), std::string::npos) << prof.err;

  const CliRun pat = run("profile --pattern pairs --sizes 4K --reps 1 --warmup 0 --gpus 0,1 --out " +
                         (dir / "pattern").string());
  ASSERT_EQ(pat.code, 0) << pat.out << pat.err;
  std::ifstream f(dir / "pattern" / "contention.json");
  ASSERT_TRUE(f) << pat.out << pat.err;
  EXPECT_EQ(nlohmann::json::parse(f).value("backend", ""), want.name);
  fs::remove_all(dir);
}
