#pragma once
// Each subcommand lives in its own file and registers itself on the root app.
// A command's callback may throw p2pscope::UsageError (exit 2) or Error (exit 1);
// main() turns them into messages. Commands that need another exit code (130 on
// Ctrl-C, a wrapped command's status) set ctx.exit_code.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace p2pscope::app {

struct Context {
  std::vector<std::string> argv;  // the whole command line, for metadata
  int exit_code = 0;
};

void add_topo_command(CLI::App& app, Context& ctx);
void add_topo_net_plugin_option(CLI::App& topo, Context& ctx);  // topo --net-plugin [P] (topo_plugin.cpp)
void add_run_command(CLI::App& app, Context& ctx);
void add_bench_commands(CLI::App& bench, Context& ctx);    // bench gpu, then bench nccl:
void add_bench_nccl_command(CLI::App& bench, Context& ctx);
void add_bench_tcp_command(CLI::App& bench, Context& ctx); // bench tcp
void add_sweep_commands(CLI::App& app, Context& ctx);      // sweep tcp
void add_profile_command(CLI::App& app, Context& ctx);
void add_analyze_command(CLI::App& app, Context& ctx);
void add_irq_commands(CLI::App& app, Context& ctx);
void add_doctor_command(CLI::App& app, Context& ctx);
void add_monitor_command(CLI::App& app, Context& ctx);
void add_export_command(CLI::App& app, Context& ctx);   // export DIR --to astra-sim|json|csv
void add_predict_command(CLI::App& app, Context& ctx);  // predict DIR: collectives from link models
void add_compare_command(CLI::App& app, Context& ctx);  // compare A B: two results of one kind
void add_survey_command(CLI::App& app, Context& ctx);   // survey: a fleet's links, under a launcher

// Version text: version, git hash, CUDA/NCCL built in and found at run time.
std::string version_text();

}  // namespace p2pscope::app
