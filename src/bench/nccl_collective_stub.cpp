#include "bench/nccl_collective.hpp"
#include "p2pscope/error.hpp"

#include <algorithm>

namespace p2pscope::bench {
#if !P2PSCOPE_HAVE_NCCL
namespace {
[[noreturn]] void not_built_in() {
  throw UsageError("bench nccl: NCCL is not built in; install nccl.h and libnccl and rebuild with "
                   "cmake -DP2PSCOPE_WITH_CUDA=ON -DP2PSCOPE_WITH_NCCL=ON");
}
}  // namespace
bool nccl_collectives_built() { return false; }
CollectiveResult run_collective(const CollectiveSpec&) { not_built_in(); }
std::unique_ptr<CollectiveRanks> make_collective_ranks(std::shared_ptr<Bootstrap>, int) { not_built_in(); }
std::unique_ptr<CollectiveRanks> make_local_collectives(const std::vector<int>&) { not_built_in(); }
#endif
}  // namespace p2pscope::bench
