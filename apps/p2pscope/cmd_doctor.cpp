// `p2pscope doctor`: NCCL environment, NCCL_DEBUG=INFO logs, RDMA/interfaces/paths
// and IRQ placement, as findings with evidence and fixes; optional markdown report
// and a transport comparison that re-runs `bench nccl` under forced fallbacks. The
// diagnosis is src/tune/doctor_run.cpp; this file reads the options and prints.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "output_option.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/tune.hpp"
#include "tune/doctor_run.hpp"

namespace p2pscope::app {
namespace {

struct DoctorOptions {
  std::vector<std::string> logs, results;
  std::string root = "/", format = "text", report, size = "64M";
  bool compare = false, force = false;
};

}  // namespace

void add_doctor_command(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<DoctorOptions>();
  auto* cmd = app.add_subcommand("doctor", "Diagnose NCCL settings, NCCL logs, RDMA setup and IRQ placement");
  cmd->add_option("--nccl-log", opt->logs,
                  "NCCL_DEBUG=INFO log file(s) or plain nccl-tests output to analyse (repeat for several runs)")->check(CLI::ExistingFile);
  cmd->add_option("--root", opt->root, "Root of a captured tree instead of /");
  add_format_option(*cmd, opt->format, {out::Format::text, out::Format::json}, "text or json");
  // --out as every other command that writes a file spells it.
  cmd->add_option("--report,--out", opt->report, "Write the NCCL optimization report (markdown) here");
  cmd->add_flag("--force", opt->force, "Replace the --report file if it exists");
  cmd->add_option("--results", opt->results, "`bench nccl --format json` file(s) for the report's performance table")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--compare-transports", opt->compare,
                "Run bench nccl all-reduce with default settings and with P2P / P2P+SHM disabled (GPU machine)");
  cmd->add_option("--size", opt->size, "Message size for --compare-transports (default 64M)");
  cmd->callback([opt, &ctx] {
    const out::Output output = chosen_output(opt->format);
    const tune::DoctorRun d = tune::run_doctor({opt->logs, opt->results, opt->root, opt->size, opt->compare},
                                               [](const std::string& line) { std::cerr << line << "\n"; });
    out::Report out_rep;
    out_rep.text.emplace_back(out::TextFn([&] { return tune::doctor_text(d.report, d.runs); }));
    out_rep.json = [&] { return out::JsonDoc(out::measured_json(run_metadata(ctx.argv), tune::doctor_json(d))); };
    std::cout << output.print(out_rep);
    if (!opt->report.empty()) {
      write_file_atomic(opt->report, tune::render_report(d.report, d.have_topo ? &d.topo : nullptr, d.runs),
                        opt->force ? Replace::allow : Replace::refuse);
      std::cerr << "wrote " << opt->report << "\n";
    }
    for (const auto& f : d.report.findings)
      if (f.severity == "error") ctx.exit_code = 1;
  });
}

}  // namespace p2pscope::app
