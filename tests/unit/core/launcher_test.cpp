// The launcher table: each launcher's variables give rank, size and the local ones;
// a size without its rank, junk and rank >= size are refused; nothing set is "single".
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "p2pscope/error.hpp"
#include "p2pscope/launcher.hpp"
#include "support/errors.hpp"

using namespace p2pscope;
using Env = std::map<std::string, std::string>;

namespace {
LauncherRanks of(const Env& env) { return detect_launcher(test::env_lookup(env)); }
}  // namespace

TEST(Launcher, EachLauncherOfTheTable) {
  struct Case {
    Env env;
    const char* launcher;
    int rank, size, local_rank, local_size;
  };
  const Case cases[] = {
      {{}, "single", 0, 1, 0, 1},
      {{{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}, "openmpi", 3, 8, 1, 2},
      {{{"MV2_COMM_WORLD_RANK", "2"}, {"MV2_COMM_WORLD_SIZE", "4"}}, "mvapich", 2, 4, 2, 4},
      {{{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}}, "pmi", 1, 2, 1, 2},
      {{{"SLURM_PROCID", "5"}, {"SLURM_STEP_NUM_TASKS", "6"}, {"SLURM_LOCALID", "1"},
        {"SLURM_STEP_TASKS_PER_NODE", "3(x2)"}, {"SLURM_NTASKS", "64"}}, "slurm", 5, 6, 1, 2},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}}, "torchrun", 0, 2, 0, 2},
      // A batch script's allocation count alone is no launch.
      {{{"SLURM_NTASKS", "64"}}, "single", 0, 1, 0, 1},
  };
  for (const auto& c : cases) {
    const LauncherRanks r = of(c.env);
    EXPECT_EQ(r.launcher, c.launcher);
    EXPECT_EQ(r.rank, c.rank) << c.launcher;
    EXPECT_EQ(r.size, c.size) << c.launcher;
    EXPECT_EQ(r.local_rank, c.local_rank) << c.launcher;
    EXPECT_EQ(r.local_size, c.local_size) << c.launcher;
  }
}

TEST(Launcher, RefusesALaunchInPartJunkAndRankBeyondSize) {
  EXPECT_NE(test::error_of([] { of({{"WORLD_SIZE", "4"}}); }).find("WORLD_SIZE=4 but no RANK"), std::string::npos);
  EXPECT_NE(test::error_of([] { of({{"PMI_RANK", "x"}, {"PMI_SIZE", "2"}}); }).find("PMI_RANK='x', which is not a number"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { of({{"MV2_COMM_WORLD_RANK", "4"}, {"MV2_COMM_WORLD_SIZE", "4"}}); })
                .find("a rank must be below the size"),
            std::string::npos);
  EXPECT_EQ(of({{"WORLD_SIZE", "1"}}).launcher, "single") << "a size of 1 alone is harmless";
}
