// Factory for the CUDA backends (ce, sm, staged).
#include "p2pscope/backend.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::bench {
std::unique_ptr<Backend> make_cuda_backend(const std::string& name, const BackendOptions&) {
  throw Error("backend '" + name + "' is not implemented yet in this build");
}
}  // namespace p2pscope::bench
