// PLACEHOLDER: replaced by the issue that builds this command; registers nothing yet.
#include "commands.hpp"

namespace p2pscope::app {
void add_sweep_commands(CLI::App& app, Context&) { (void)app; }
}  // namespace p2pscope::app
