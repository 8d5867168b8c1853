// Stop requests reach the GPU within about a second: a long bandwidth row and a long
// ping-pong row return the samples measured so far once BatchSpec::stop is set (they
// used to queue every iteration, or run every sample, and wait for the end). And a
// one-GPU machine takes the same default backend in every command (staged).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "p2pscope/backend.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/gpu_runtime.hpp"

using namespace p2pscope;
using namespace p2pscope::bench;

namespace {

#define NEED_A_GPU()                                                      \
  do {                                                                    \
    const auto rt = gpu::runtime_info();                                  \
    if (!rt.cuda_built) GTEST_SKIP() << "built without CUDA";             \
    if (rt.device_count < 1) GTEST_SKIP() << "no GPU: " << rt.why_no_gpu; \
  } while (0)

// Runs the batch, sets the stop flag `after_s` into it; returns (samples, seconds from
// the stop to the return).
std::pair<std::size_t, double> stop_midway(Backend& b, BatchSpec spec, double after_s) {
  std::atomic<bool> stop{false};
  spec.stop = &stop;
  std::int64_t stopped_at = 0;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(after_s));
    stopped_at = monotonic_ns();
    stop = true;
  });
  const BatchResult r = b.run_batch(spec);
  const std::int64_t back = monotonic_ns();
  t.join();
  EXPECT_TRUE(r.support.ok) << r.support.reason;
  return {r.elapsed_ns.size(), static_cast<double>(back - stopped_at) / 1e9};
}

}  // namespace

TEST(GpuStop, ABandwidthRowStopsWithinASecond) {
  NEED_A_GPU();
  auto b = make_backend("ce");
  const std::uint64_t n = 256ull << 20;
  b->prepare({0}, n);
  // 20000 device-local copies of 256 MiB: seconds, queued at once and waited for before.
  const auto [got, late_s] = stop_midway(*b, {0, 0, n, Pattern::unidirectional, 2, 20000}, 1.0);
  EXPECT_GT(got, 0u);
  EXPECT_LT(got, 20000u);
  EXPECT_LT(late_s, 1.0) << got << " samples";
  // Unstopped, a short row still takes every iteration.
  EXPECT_EQ(b->run_batch({0, 0, n, Pattern::unidirectional, 1, 7}).elapsed_ns.size(), 7u);
}

TEST(GpuStop, APingPongRowStopsWithinASecond) {
  NEED_A_GPU();
  auto b = make_backend("ce");
  const std::uint64_t n = 1 << 20;
  b->prepare({0}, n);
  // 8000 samples of 50 round trips of 1 MiB: seconds in one kernel before.
  const auto [got, late_s] = stop_midway(*b, {0, 0, n, Pattern::latency, 2, 8000}, 0.5);
  EXPECT_GT(got, 0u);
  EXPECT_LT(got, 8000u);
  EXPECT_LT(late_s, 1.0) << got << " samples";
  EXPECT_EQ(b->run_batch({0, 0, n, Pattern::latency, 2, 30}).elapsed_ns.size(), 30u);
}

TEST(GpuStop, OneGpuTakesStagedInEveryCommand) {
  NEED_A_GPU();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("p2pscope_onegpu_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const char* env_bin = std::getenv("P2PSCOPE_BIN");  // the device machine runs a copied binary
  const std::string path = env_bin && *env_bin ? env_bin : P2PSCOPE_BINARY;
  if (!fs::exists(path)) GTEST_SKIP() << "p2pscope binary not built (" << path << "); set P2PSCOPE_BIN";
  const std::string bin = "CUDA_VISIBLE_DEVICES=0 timeout 300 " + path;
  const int st = std::system((bin + " profile --pattern pairs --sizes 4K --reps 1 --warmup 0 --gpus 0,1 --out " +
                              (dir / "p").string() + " >/dev/null 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "profile --pattern without --backend on one GPU failed";
  std::ifstream f(dir / "p" / "contention.json");
  ASSERT_TRUE(f);
  EXPECT_EQ(nlohmann::json::parse(f).value("backend", ""), "staged");
  fs::remove_all(dir);
}
