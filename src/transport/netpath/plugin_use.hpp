#pragma once
// Sessions over an NCCL net plugin, set up one way: bench net and sweep net load the
// plugin and make its data path here, and they and the survey's --transport net (which
// maps each rail to its own device, survey/transport.cpp) end a hung call the same way.
// The copies had drifted: sweep net set no on_hung_call, so a hung call there aborted
// instead of ending cleanly.
#include <functional>
#include <memory>
#include <string>

#include "p2pscope/tcp.hpp"
#include "transport/session/datapath.hpp"

namespace p2pscope::net {
class Plugin;
}

namespace p2pscope::tcp {

// A plugin call hung past the timeout holds a thread that nothing can stop (issue 32):
// print "<who>: error: <why>", flush what is buffered, and end the process with exit 1.
std::function<void(const std::string&)> exit_on_hung_call(std::string who);

struct LoadedPluginPath {
  std::shared_ptr<net::Plugin> plugin;  // for its description and devices
  std::shared_ptr<DataPath> path;       // every link over the plugin's devices in turn
};

// `plugin`: a path, a file or NAME (libnccl-net-NAME.so), "" as NCCL resolves it.
// `dmabuf` (auto, on, off) is parsed before anything is loaded: a typo is a UsageError.
LoadedPluginPath load_plugin_path(const std::string& plugin, const std::string& dmabuf);

// Both, into `local`: its path and its on_hung_call (ending as `who`). Returns the plugin.
std::shared_ptr<net::Plugin> use_plugin_path(LocalOptions& local, const std::string& plugin, const std::string& dmabuf,
                                             const std::string& who);

}  // namespace p2pscope::tcp
