#include "p2pscope/backend.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::bench {
std::unique_ptr<Backend> make_nccl_backend(const BackendOptions&) {
  throw Error("backend 'nccl' is not implemented yet in this build");
}
}  // namespace p2pscope::bench
