// topo --net-plugin's report as text (transport/net/report_text.hpp).
#include "transport/net/report_text.hpp"

#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "p2pscope/table.hpp"

namespace p2pscope::net {
namespace {

std::string abi_versions_text(const std::vector<int>& v) {
  std::vector<std::string> s;
  for (int x : v) s.push_back(fmt::format("v{}", x));
  return s.empty() ? "none" : fmt::format("{}", fmt::join(s, ","));
}

std::string resolution_text(const Resolution& r) {
  const char* lp = std::getenv("LD_LIBRARY_PATH");
  std::string head = fmt::format("NCCL would load (NCCL_NET_PLUGIN={}, LD_LIBRARY_PATH={}): ",
                                 r.request.empty() ? "unset" : r.request, lp ? lp : "unset");
  if (r.disabled) return head + "no plugin: " + r.reason + "\n";
  if (!r.found) return head + "no plugin: " + r.reason + "\n";
  std::string s = fmt::format("{}{} ({}), exports {}", head, r.file, r.path, abi_versions_text(r.versions));
  if (!r.reason.empty()) s += ": " + r.reason;
  return s + "\n";
}

std::string plugin_devices_text(const Plugin& p) {
  std::string s = fmt::format("net plugin: '{}' ABI v{} from {} (exports {})\n", p.name(), p.version(), p.path(),
                              abi_versions_text(p.exported_versions()));
  auto rows = properties_rows(p);
  Table t(rows.front());
  for (std::size_t i = 1; i < rows.size(); ++i) t.add_row(rows[i]);
  s += t.to_text();
  s += "GPU memory: " + gpu_memory_verdict(p) + "\n";
  // The plugin's own warnings explain missing devices or memory types.
  for (const auto& line : p.log())
    if (line.rfind("WARN", 0) == 0) s += "plugin log: " + line + "\n";
  return s;
}

}  // namespace

NcclPluginReport plugin_report_for(const std::string& requested) {
  const char* env = std::getenv("NCCL_NET_PLUGIN");
  // What NCCL would load; the plugin named on the command line replaces it when given.
  NcclPluginReport rep = report_nccl_plugin(env ? env : "");
  if (!requested.empty()) {
    LoadOptions o;
    o.plugin = requested;
    rep.plugin = Plugin::load(o);  // the user named it: its failure is the answer
    rep.load_error.clear();
    rep.gpu_memory = gpu_memory_verdict(*rep.plugin);
  }
  return rep;
}

std::string plugin_report_text(const NcclPluginReport& rep) {
  std::string text;
  if (rep.plugin) text += plugin_devices_text(*rep.plugin);
  if (!rep.load_error.empty()) text += "loading it failed: " + rep.load_error + "\n";
  return text + resolution_text(rep.resolution);
}

}  // namespace p2pscope::net
