// `p2pscope export DIR --to astra-sim|json|csv`: a campaign's link models (links.json,
// from `p2pscope analyze`) for a simulator. See docs/export-schema.md.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "commands.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/simulate.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::app {
namespace {

struct ExportOptions {
  std::string dir, to, out, backend, sizes;
  bool force = false;
};

void write_out(const std::string& text, const std::string& out, const std::string& name, bool force) {
  namespace fs = std::filesystem;
  if (out.empty() || out == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  fs::path p(out);
  std::error_code ec;
  if (out.back() == '/' || fs::is_directory(p, ec)) {
    fs::create_directories(p, ec);
    if (ec) throw Error("cannot create directory '" + out + "': " + ec.message());
    p /= name;
  }
  write_file_atomic(p, text, force ? Replace::allow : Replace::refuse);
  std::cerr << "wrote " << p.string() << "\n";
}

}  // namespace

void add_export_command(CLI::App& app, Context& /*ctx*/) {
  auto o = std::make_shared<ExportOptions>();
  std::string formats;
  for (const auto& f : simulate::export_format_names()) formats += (formats.empty() ? "" : ", ") + f;
  auto* cmd = app.add_subcommand("export",
                                 "Export a campaign's link models (links.json from `p2pscope analyze`) for a simulator: "
                                 "ASTRA-sim's network.yml, a versioned JSON of every link, or the predictions CSV "
                                 "that `analyze --predictions` reads");
  cmd->add_option("dir", o->dir, "campaign directory holding links.json (run `p2pscope analyze DIR` first)")->required();
  cmd->add_option("--to", o->to, "format: " + formats)->required();
  cmd->add_option("--out", o->out, "output FILE, or DIR/ (a suggested name in it); default stdout");
  cmd->add_flag("--force", o->force, "Replace the output file if it exists");
  cmd->add_option("--backend", o->backend, "only this backend's links (astra-sim: default the first of nccl, ce, sm, ...)");
  cmd->add_option("--sizes", o->sizes, "csv: sizes to predict, e.g. 1K:1G (default: each link's measured sizes)");
  cmd->footer(
      "Examples:\n"
      "  p2pscope export run/campaign --to astra-sim --out network.yml\n"
      "  p2pscope export run/campaign --to csv --out pred.csv && p2pscope analyze run/campaign --predictions pred.csv\n"
      "  p2pscope export run/campaign --to json | jq '.links[] | {src, dst, beta_bytes_per_s}'");
  cmd->callback([o] {
    simulate::ExportOptions eo;
    eo.backend = o->backend;
    const auto format = simulate::parse_export_format(o->to);
    if (!o->sizes.empty()) {
      if (format != simulate::ExportFormat::csv) throw UsageError("--sizes applies to --to csv only");
      eo.sizes = parse_size_list(o->sizes);
    }
    const auto e = simulate::export_campaign(o->dir, format, eo);
    for (const auto& n : e.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
    write_out(e.text, o->out, e.file_name, o->force);
  });
}

}  // namespace p2pscope::app
