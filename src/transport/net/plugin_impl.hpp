#pragma once
// Plugin::Impl, shared by plugin.cpp (loading) and comm.cpp (comms and requests).
#include <memory>
#include <string>
#include <vector>

#include "p2pscope/netplugin.hpp"
#include "transport/net/call_watch.hpp"
#include "transport/net/ops.hpp"

namespace p2pscope::net {

struct Plugin::Impl {
  void* dl = nullptr;
  std::string path;
  std::vector<int> exported;
  std::unique_ptr<detail::CallWatch> watch;  // declared before ops: outlives it
  std::unique_ptr<detail::Ops> ops;           // every call marked in *watch
  std::vector<DeviceProps> devs;
  std::uint64_t log_mark = 0;
  bool initialised = false;

  std::string describe() const;
  // Error text: "<describe>: <call> failed: ncclSystemError (2)[: detail]" + recent WARN lines.
  std::string failure(const std::string& call, int result, const std::string& detail = "") const;
  void check(abi::Result r, const std::string& call, const std::string& detail = "") const {
    if (r != abi::kSuccess) throw Error(failure(call, r, detail));
  }
};

}  // namespace p2pscope::net
