// p2pscope topo --net-plugin [P]: the devices an NCCL net plugin offers, which plugin
// NCCL would load under this environment, and whether it can reach GPU memory (the
// report is src/transport/net/report_text.cpp). Registered on `topo` by one line in
// cmd_topo.cpp; when the option is given it replaces topo's own report.
#include <cerrno>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "output_option.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/netplugin.hpp"
#include "transport/net/report_text.hpp"

namespace p2pscope::app {
namespace {

void run(const std::string& requested, const out::Output& output, const std::string& out_path, const Context& ctx) {
  const net::NcclPluginReport rep = net::plugin_report_for(requested);
  out::Report report;
  report.text.emplace_back(out::TextFn([&rep] { return net::plugin_report_text(rep); }));
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
