// p2pscope topo --net-plugin [P]: the devices an NCCL net plugin offers (names, PCI
// paths, speeds, memory it registers, GDR, limits, device type), which plugin NCCL
// would load under this environment, and whether it can reach GPU memory.
// Registered on `topo` by one line in cmd_topo.cpp; when the option is given it
// replaces topo's own report.
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "output_option.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/table.hpp"

namespace p2pscope::app {
namespace {

std::string versions_text(const std::vector<int>& v) {
  std::vector<std::string> s;
  for (int x : v) s.push_back(fmt::format("v{}", x));
  return s.empty() ? "none" : fmt::format("{}", fmt::join(s, ","));
}

std::string resolution_text(const net::Resolution& r) {
  const char* lp = std::getenv("LD_LIBRARY_PATH");
  std::string head = fmt::format("NCCL would load (NCCL_NET_PLUGIN={}, LD_LIBRARY_PATH={}): ",
                                 r.request.empty() ? "unset" : r.request, lp ? lp : "unset");
  if (r.disabled) return head + "no plugin: " + r.reason + "\n";
  if (!r.found) return head + "no plugin: " + r.reason + "\n";
  std::string s = fmt::format("{}{} ({}), exports {}", head, r.file, r.path, versions_text(r.versions));
  if (!r.reason.empty()) s += ": " + r.reason;
  return s + "\n";
}

std::string plugin_text(const net::Plugin& p) {
  std::string s = fmt::format("net plugin: '{}' ABI v{} from {} (exports {})\n", p.name(), p.version(), p.path(),
                              versions_text(p.exported_versions()));
  auto rows = net::properties_rows(p);
  Table t(rows.front());
  for (std::size_t i = 1; i < rows.size(); ++i) t.add_row(rows[i]);
  s += t.to_text();
  s += "GPU memory: " + net::gpu_memory_verdict(p) + "\n";
  // The plugin's own warnings explain missing devices or memory types.
  for (const auto& line : p.log())
    if (line.rfind("WARN", 0) == 0) s += "plugin log: " + line + "\n";
  return s;
}

void run(const std::string& requested, const out::Output& output, const std::string& out_path, const Context& ctx) {
  const char* env = std::getenv("NCCL_NET_PLUGIN");
  // What NCCL would load; the plugin named on the command line replaces it when given.
  net::NcclPluginReport rep = net::report_nccl_plugin(env ? env : "");
  if (!requested.empty()) {
    net::LoadOptions o;
    o.plugin = requested;
    rep.plugin = net::Plugin::load(o);  // the user named it: its failure is the answer
    rep.load_error.clear();
    rep.gpu_memory = net::gpu_memory_verdict(*rep.plugin);
  }
  out::Report report;
  report.text.emplace_back(out::TextFn([&rep] {
    std::string text;
    if (rep.plugin) text += plugin_text(*rep.plugin);
    if (!rep.load_error.empty()) text += "loading it failed: " + rep.load_error + "\n";
    return text + resolution_text(rep.resolution);
  }));
  report.json = [&rep, &ctx] {
    return out::JsonDoc(out::measured_json(run_metadata(ctx.argv), rep.to_json()));
  };
  const std::string text = output.print(report);
  if (out_path.empty() || out_path == "-") {
    std::cout << text;
    return;
  }
  std::ofstream f(out_path);
  if (!f) throw Error("cannot write '" + out_path + "': " + errno_text(errno));
  f << text;
  if (!f.flush()) throw Error("write '" + out_path + "' failed: " + errno_text(errno));
  std::cerr << "wrote " << out_path << "\n";
}

}  // namespace

void add_topo_net_plugin_option(CLI::App& topo, Context& ctx) {
  auto plugin = std::make_shared<std::string>();
  CLI::Option* opt = topo.add_option("--net-plugin", *plugin,
                                     "Show an NCCL net plugin's devices instead: PATH, NAME (libnccl-net-NAME.so) or "
                                     "nothing (the one NCCL_NET_PLUGIN / libnccl-net.so names)")
                         ->expected(0, 1);
  // After parsing, take over topo's report when the option was given.
  topo.parse_complete_callback([&topo, &ctx, plugin, opt] {
    if (opt->count() == 0) return;
    topo.final_callback([&topo, &ctx, plugin] {
      // topo's --format holds no default of its own here: not given means text.
      const auto format = topo.get_option("--format")->as<std::string>();
      run(*plugin, chosen_output(format.empty() ? "text" : format), topo.get_option("--out")->as<std::string>(), ctx);
    });
  });
}

}  // namespace p2pscope::app
