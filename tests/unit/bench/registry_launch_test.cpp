// The nccl backend's "launched as N processes" check reads the one launcher table
// (p2pscope/launcher.hpp). Its own list (OMPI, PMI, PMIX, MV2 sizes) missed srun and
// torchrun: under `srun -n 2` or `torchrun --nproc-per-node 2` each process went on to
// drive every GPU itself.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "p2pscope/backend.hpp"
#include "p2pscope/error.hpp"
#include "support/errors.hpp"

using namespace p2pscope;

namespace {
// Sets variables for one test and unsets them after (none of them is set by ctest).
class ScopedEnv {
 public:
  explicit ScopedEnv(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_) ::unsetenv(k.c_str());
  }

 private:
  std::map<std::string, std::string> vars_;
};

std::string nccl_error() {
  return test::error_of([] { bench::make_backend("nccl"); });
}
}  // namespace

TEST(RegistryLaunch, NcclSeesSrunAndTorchrunLaunches) {
#if !P2PSCOPE_HAVE_NCCL
  GTEST_SKIP() << "built without NCCL: make_backend(\"nccl\") stops at 'not built in' before the launcher check";
#endif
  {
    ScopedEnv env({{"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "2"}});
    EXPECT_NE(nccl_error().find("launched by a launcher as 2 processes"), std::string::npos) << nccl_error();
  }
  {
    ScopedEnv env({{"RANK", "0"}, {"WORLD_SIZE", "4"}});
    EXPECT_NE(nccl_error().find("launched by a launcher as 4 processes"), std::string::npos) << nccl_error();
  }
  {
    ScopedEnv env({{"MV2_COMM_WORLD_RANK", "0"}, {"MV2_COMM_WORLD_SIZE", "3"}});
    EXPECT_NE(nccl_error().find("launched by a launcher as 3 processes"), std::string::npos) << nccl_error();
  }
}
