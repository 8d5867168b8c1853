// p2pscope topo [--root DIR] [--format text|json] [--out FILE]
#include <cerrno>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "output_option.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/topo.hpp"

namespace p2pscope::app {
namespace {
struct TopoOptions {
  std::string root = "/";
  std::string format = "text";
  std::string out;
  bool force = false;
};
}  // namespace

void add_topo_command(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<TopoOptions>();
  auto* cmd = app.add_subcommand("topo", "CPUs, NUMA nodes, GPUs, NICs with their IRQs, RDMA, and GPU/NIC path classes");
  cmd->add_option("--root", opt->root, "Root of a captured tree (tools/capture-fsroot.sh) instead of /");
  add_format_option(*cmd, opt->format, {out::Format::text, out::Format::json}, "text or json");
  cmd->add_option("--out", opt->out, "Write here instead of stdout");
  cmd->add_flag("--force", opt->force, "Replace the --out file if it exists");
  cmd->callback([opt, &ctx] {
    const FsRoot fs(opt->root);
    topo::Topology t = topo::discover(fs);
    // A tree with no CPUs is a wrong --root (its proc/ or sys/ given for its top), not
    // a machine without CPUs: said, not printed as one.
    if (t.cpus.empty() && !fs.is_live()) {
      const std::string base = fs.root().filename().string();
      throw UsageError("--root '" + fs.root().string() + "' holds no CPUs (no sys/devices/system/cpu)" +
                       (base == "proc" || base == "sys"
                            ? "; give the tree's top, the folder holding proc/ and sys/: " + fs.root().parent_path().string()
                            : "; give the top of a captured tree (tools/capture-fsroot.sh), the folder holding proc/ and sys/"));
    }
    // CUDA facts describe this machine, not a captured tree.
    if (fs.is_live()) gpu::enrich_with_cuda(t);
    out::Report rep;
    rep.text.emplace_back(out::TextFn([&t] { return topo::to_text(t); }));
    rep.json = [&] {
      nlohmann::json meta = run_metadata(ctx.argv);
      meta["versions"] = gpu::to_json(gpu::runtime_info());
      meta["root"] = fs.root().string();
      return out::JsonDoc(out::measured_json(meta, topo::to_json(t)));
    };
    const std::string text = chosen_output(opt->format).print(rep);
    if (opt->out.empty() || opt->out == "-") {
      std::cout << text;
      return;
    }
    write_file_atomic(opt->out, text, opt->force ? Replace::allow : Replace::refuse);
    std::cerr << "wrote " << opt->out << "\n";
  });
  add_topo_net_plugin_option(*cmd, ctx);  // --net-plugin [P]: topo_plugin.cpp (issue 20)
}

}  // namespace p2pscope::app
