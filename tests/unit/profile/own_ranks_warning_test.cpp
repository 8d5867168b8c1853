// Under torchrun, rank 0 warned "GPU 1 is used by 1 other process(es)" once for each of
// its own peer ranks (issue 30): the run's own processes are left out; strangers stay.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "p2pscope/gpu_runtime.hpp"
#include "profile/setup.hpp"

using p2pscope::profile::other_gpu_users_warning;

TEST(OtherGpuUsers, TheRunsOwnRanksAreNoStrangers) {
  EXPECT_EQ(other_gpu_users_warning(1, {4242, 4243}, {4242, 4243, 4244}), "");
  EXPECT_EQ(other_gpu_users_warning(1, {}, {4242}), "");
}

TEST(OtherGpuUsers, AStrangerIsNamedBesideTheRanks) {
  const std::string w = other_gpu_users_warning(2, {4242, 999, 4243}, {4242, 4243});
  EXPECT_NE(w.find("GPU 2 is used by 1 other process(es) (pid 999)"), std::string::npos) << w;
  EXPECT_EQ(w.find("4242"), std::string::npos) << w;
}

TEST(OtherGpuUsers, ManyStrangersAreCountedAndTheFirstFourNamed) {
  const std::string w = other_gpu_users_warning(0, {1, 2, 3, 4, 5, 6}, {7});
  EXPECT_NE(w.find("used by 6 other process(es) (pid 1, 2, 3, 4, ...)"), std::string::npos) << w;
}

// `p2pscope run` holds a context on every GPU for its steps (gpu::ContextHolder) and names
// its pid to them: NVML lists it among the GPUs' users. It is no stranger only when it
// really started this process; a value left over in a shell names nobody of ours.
namespace {
struct HolderEnv {
  explicit HolderEnv(const std::string& v) { ::setenv(p2pscope::gpu::kContextHolderPidEnv, v.c_str(), 1); }
  ~HolderEnv() { ::unsetenv(p2pscope::gpu::kContextHolderPidEnv); }
};
}  // namespace

TEST(ContextHolderPid, TheParentThatHoldsTheContextsIsOwn) {
  const HolderEnv env(std::to_string(::getppid()));
  const auto pids = p2pscope::profile::context_holder_pids();
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_EQ(pids[0], static_cast<std::int64_t>(::getppid()));
}

TEST(ContextHolderPid, APidThatDidNotStartUsIsAStranger) {
  // This process itself is no ancestor of itself, and pid 1 is refused outright.
  const HolderEnv self(std::to_string(::getpid()));
  EXPECT_TRUE(p2pscope::profile::context_holder_pids().empty());
  const HolderEnv init("1");
  EXPECT_TRUE(p2pscope::profile::context_holder_pids().empty());
}

TEST(ContextHolderPid, GarbageOrNothingNamesNobody) {
  EXPECT_TRUE(p2pscope::profile::context_holder_pids().empty());
  for (const char* v : {"", "abc", "12x", "-5", "99999999999999999999"}) {
    const HolderEnv env(v);
    EXPECT_TRUE(p2pscope::profile::context_holder_pids().empty()) << v;
  }
}

TEST(ContextHolderPid, AnAncestorIsFoundThroughAFakeProcTree) {
  // A captured /proc of three processes: us -> 700 -> 500 (the holder) -> 1.
  const std::string root = ::testing::TempDir() + "/fake-proc-" + std::to_string(::getpid());
  const auto stat = [&](long pid, long ppid, const std::string& comm) {
    std::filesystem::create_directories(root + "/" + std::to_string(pid));
    std::ofstream(root + "/" + std::to_string(pid) + "/stat") << pid << " (" << comm << ") S " << ppid << " 1 1 0\n";
  };
  stat(::getpid(), 700, "test (with) spaces");
  stat(700, 500, "sh");
  stat(500, 1, "p2pscope");
  const HolderEnv env("500");
  const auto pids = p2pscope::profile::context_holder_pids(root);
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_EQ(pids[0], 500);
  const HolderEnv other("600");
  EXPECT_TRUE(p2pscope::profile::context_holder_pids(root).empty());
  std::filesystem::remove_all(root);
}
