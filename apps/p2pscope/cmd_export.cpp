// `p2pscope export DIR --to astra-sim|json|csv`: a campaign's link models (links.json,
// from `p2pscope analyze`) for a simulator. See docs/export-schema.md.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "astra_options.hpp"
#include "commands.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/simulate.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::app {
namespace {

struct ExportOptions {
  std::string dir, to, out, backend, sizes, astra_backend = "unaware", system, line_at, for_collective;
  std::int64_t endpoint_delay_ns = 1;
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
  const std::string formats = join(simulate::export_format_names());
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
  add_astra_options(cmd, o->astra_backend, o->endpoint_delay_ns,
                    "astra-sim: the analytical network backend the file is for, unaware or aware (they read a "
                    "Switch differently; aware builds one dimension only)",
                    "astra-sim: the system file's endpoint-delay in ns, >= 1 (ASTRA-sim charges it per message; "
                    "give predict the same value)");
  cmd->add_option("--astra-line-at", o->line_at,
                  "astra-sim: write each dimension's line as the regime that holds at this message size (e.g. 512K, "
                  "S/p of the collective you simulate) instead of the upper regime; the header's table shows the cost");
  cmd->add_option("--for", o->for_collective,
                  "astra-sim: write the file for one collective, ring:SIZE (ring all-reduce of SIZE, e.g. ring:1M): "
                  "each dimension's line is the regime that holds at the messages it sends there (S/n on n NPUs); "
                  "the header says which sizes the file is right for. Needed where the default file's table is off "
                  "beyond 2 % (the default export names those sizes); or nccl:SIZE: a line that makes ASTRA-sim's ring "
                  "all-reduce of SIZE last what predict's NCCL model says NCCL takes (needs the campaign's NCCL "
                  "calibration)");
  cmd->add_option("--system", o->system,
                  "astra-sim: also write ASTRA-sim's system file (JSON) here: one ring per dimension, the endpoint delay");
  cmd->footer(
      "Examples:\n"
      "  p2pscope export run/campaign --to astra-sim --out network.yml --system system.json\n"
      "  p2pscope export run/campaign --to astra-sim --for ring:1M --out net-1M.yml --system sys-1M.json\n"
      "  p2pscope export run/campaign --to astra-sim --astra-backend aware --out aware.yml --system aware.json\n"
      "  p2pscope export run/campaign --to csv --out pred.csv && p2pscope analyze run/campaign --predictions pred.csv\n"
      "  p2pscope export run/campaign --to json | jq '.links[] | {src, dst, beta_bytes_per_s}'");
  cmd->callback([o] {
    simulate::ExportOptions eo;
    eo.backend = o->backend;
    const auto format = simulate::parse_export_format(o->to);
    eo.astra_backend = simulate::parse_astra_backend(o->astra_backend);
    eo.endpoint_delay_ns = o->endpoint_delay_ns;
    simulate::check_endpoint_delay(eo.endpoint_delay_ns);
    if (!o->line_at.empty()) {
      const auto at = parse_size_list(o->line_at);
      if (at.size() != 1 || at[0] == 0) throw UsageError("--astra-line-at: give one message size of 1 byte or more, e.g. 512K");
      eo.line_at_bytes = at[0];
    }
    if (!o->for_collective.empty()) {
      const auto colon = o->for_collective.find(':');
      const std::string algo = o->for_collective.substr(0, colon);
      if (colon == std::string::npos || (algo != "ring" && algo != "nccl"))
        throw UsageError("--for '" + o->for_collective + "': give ring:SIZE (the links' ring all-reduce the file is for, "
                         "e.g. ring:1M) or nccl:SIZE (NCCL's all-reduce of SIZE as predict's NCCL model prices it)");
      std::vector<std::uint64_t> at;
      try {
        at = parse_size_list(o->for_collective.substr(colon + 1));
      } catch (const UsageError& e) {
        throw UsageError("--for '" + o->for_collective + "': " + e.what());
      }
      if (at.size() != 1 || at[0] == 0)
        throw UsageError("--for " + algo + ":SIZE: give one all-reduce size of 1 byte or more, e.g. " + algo + ":1M");
      if (!o->line_at.empty()) throw UsageError("--for and --astra-line-at both choose the line: give one");
      (algo == "ring" ? eo.for_ring_allreduce_bytes : eo.for_nccl_allreduce_bytes) = at[0];
    }
    if ((!o->system.empty() || !o->line_at.empty() || !o->for_collective.empty()) && format != simulate::ExportFormat::astra_sim)
      throw UsageError("--system, --for and --astra-line-at apply to --to astra-sim only");
    if (!o->sizes.empty()) {
      if (format != simulate::ExportFormat::csv) throw UsageError("--sizes applies to --to csv only");
      eo.sizes = parse_size_list(o->sizes);
      for (const auto n : eo.sizes)
        if (n == 0) throw UsageError("--sizes: a size of 0 bytes has no transfer time to predict; give 1 or more");
    }
    const auto e = simulate::export_campaign(o->dir, format, eo);
    for (const auto& n : e.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
    write_out(e.text, o->out, e.file_name, o->force);
    if (!o->system.empty()) write_out(e.system_text, o->system, "system.json", o->force);
  });
}

}  // namespace p2pscope::app
