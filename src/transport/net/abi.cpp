// Names of ncclResult_t values for error messages.
#include "transport/net/abi.hpp"

namespace p2pscope::net::abi {

const char* result_name(int r) {
  switch (r) {
    case kSuccess: return "ncclSuccess";
    case kUnhandledCudaError: return "ncclUnhandledCudaError";
    case kSystemError: return "ncclSystemError";
    case kInternalError: return "ncclInternalError";
    case kInvalidArgument: return "ncclInvalidArgument";
    case kInvalidUsage: return "ncclInvalidUsage";
    case kRemoteError: return "ncclRemoteError";
    case kInProgress: return "ncclInProgress";
    default: return "unknown ncclResult_t";
  }
}

}  // namespace p2pscope::net::abi
