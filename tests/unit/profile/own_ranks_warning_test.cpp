// Under torchrun, rank 0 warned "GPU 1 is used by 1 other process(es)" once for each of
// its own peer ranks (issue 30): the run's own processes are left out; strangers stay.
#include <gtest/gtest.h>

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
