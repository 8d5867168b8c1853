#include "bench/nccl_collective.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::bench {
#if !P2PSCOPE_HAVE_NCCL
bool nccl_collectives_built() { return false; }
CollectiveResult run_collective(const CollectiveSpec&) {
  throw UsageError("bench nccl: NCCL is not built in; install nccl.h and libnccl and rebuild with "
                   "cmake -DP2PSCOPE_WITH_CUDA=ON -DP2PSCOPE_WITH_NCCL=ON");
}
#endif
}  // namespace p2pscope::bench
