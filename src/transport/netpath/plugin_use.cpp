#include "transport/netpath/plugin_use.hpp"

#include <cstdio>
#include <cstdlib>

#include "p2pscope/netplugin.hpp"

namespace p2pscope::tcp {

std::function<void(const std::string&)> exit_on_hung_call(std::string who) {
  return [who = std::move(who)](const std::string& why) {
    std::fprintf(stderr, "%s: error: %s\n", who.c_str(), why.c_str());
    std::fflush(nullptr);
    std::_Exit(1);
  };
}

LoadedPluginPath load_plugin_path(const std::string& plugin, const std::string& dmabuf) {
  const DmabufMode mode = parse_dmabuf_mode(dmabuf);
  net::LoadOptions lo;
  lo.plugin = plugin;
  LoadedPluginPath out;
  out.plugin = net::Plugin::load(lo);
  out.path = make_plugin_path(out.plugin, mode);
  return out;
}

std::shared_ptr<net::Plugin> use_plugin_path(LocalOptions& local, const std::string& plugin, const std::string& dmabuf,
                                             const std::string& who) {
  LoadedPluginPath loaded = load_plugin_path(plugin, dmabuf);
  local.path = std::move(loaded.path);
  local.on_hung_call = exit_on_hung_call(who);
  return loaded.plugin;
}

}  // namespace p2pscope::tcp
