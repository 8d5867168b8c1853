// One default backend for `run`, `profile` and `bench gpu`: a one-GPU host gets
// staged (a GPU paired with host memory), where profile used to pick ce and refuse
// ("backend ce has 1 device(s); a campaign needs 2 or more"). The choice itself is
// bench::default_backend (tests/unit/bench/test_backend_table.cpp); here: a new
// campaign without --backend takes it.
#include <gtest/gtest.h>

#include "profile/setup.hpp"

using namespace p2pscope::profile;

TEST(DefaultBackend, ANewCampaignWithoutBackendTakesIt) {
  Params p;
  EXPECT_EQ(resolve_options(p, 1).backends, std::vector<std::string>{"staged"});
  EXPECT_EQ(resolve_options(p, 0).backends, std::vector<std::string>{"host"});
  EXPECT_EQ(resolve_options(p, 4).backends, std::vector<std::string>{"ce"});
  p.backends = std::vector<std::string>{"sm"};  // a given --backend wins
  EXPECT_EQ(resolve_options(p, 1).backends, std::vector<std::string>{"sm"});
}
