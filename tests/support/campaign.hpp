#pragma once
// The small campaign the profile tests run (was a copy in three test files): two
// devices, three sizes, one warmup, three repetitions, no drift window and no
// temperature sampling, so that it takes well under a second on the host backend.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "p2pscope/profile.hpp"

namespace p2pscope::test {

inline profile::Params small_campaign_params(const std::filesystem::path& out, const std::string& backend = "host") {
  profile::Params p;
  p.argv = {"p2pscope", "profile", "(test)"};
  p.backends = std::vector<std::string>{backend};
  p.devices = std::vector<int>{0, 1};
  p.sizes = std::vector<std::uint64_t>{1, 4096, 1 << 20};
  p.warmup = 1;
  p.reps = 3;
  p.drift_s = 0;
  p.temp_interval_s = 0;
  p.out_dir = out.string();
  return p;
}

}  // namespace p2pscope::test
