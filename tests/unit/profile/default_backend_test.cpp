// One default backend for `run`, `profile` and `bench gpu`: a one-GPU host gets
// staged (a GPU paired with host memory), where profile used to pick ce and refuse
// ("backend ce has 1 device(s); a campaign needs 2 or more").
#include <gtest/gtest.h>

#include "profile/setup.hpp"

using namespace p2pscope::profile;

TEST(DefaultBackend, FollowsTheGpuCount) {
  EXPECT_EQ(default_backend(0), "host");
  EXPECT_EQ(default_backend(1), "staged");
  EXPECT_EQ(default_backend(2), "ce");
  EXPECT_EQ(default_backend(8), "ce");
  for (int n : {0, 1, 2}) EXPECT_EQ(default_backend_reason(n).rfind(default_backend(n) + ":", 0), 0u) << n;
}

TEST(DefaultBackend, ANewCampaignWithoutBackendTakesIt) {
  Params p;
  EXPECT_EQ(resolve_options(p, 1).backends, std::vector<std::string>{"staged"});
  EXPECT_EQ(resolve_options(p, 0).backends, std::vector<std::string>{"host"});
  EXPECT_EQ(resolve_options(p, 4).backends, std::vector<std::string>{"ce"});
  p.backends = std::vector<std::string>{"sm"};  // a given --backend wins
  EXPECT_EQ(resolve_options(p, 1).backends, std::vector<std::string>{"sm"});
}
