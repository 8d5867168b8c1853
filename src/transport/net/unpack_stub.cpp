// Without CUDA the unpack kernel does not exist; say so instead of failing to link.
#include "p2pscope/netplugin.hpp"

#if !P2PSCOPE_HAVE_CUDA
namespace p2pscope::net {

void launch_unpack(const UnpackPiece*, std::size_t, const void*, void*, void*) {
  throw Error("unpack kernel: p2pscope was built without CUDA (configure with nvcc on the PATH)");
}
bool unpack_kernel_available() { return false; }

}  // namespace p2pscope::net
#endif
