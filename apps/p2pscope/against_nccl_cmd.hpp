#pragma once
// `bench tcp|net --against-nccl` (issue 44 item 5): the command's part.
#include <functional>
#include <string>

#include "commands.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/tcp.hpp"

namespace p2pscope::app {

struct AgainstNcclCommand {
  tcp::Params params;
  tcp::LocalOptions local;
  bool loopback = false;
  std::string plugin_path, plugin_name;  // bench net: the plugin loaded; empty for bench tcp
  const out::Output* output = nullptr;
};

// Checks (UsageError, exit 2, before any run), the three runs, the table; `print` gets
// the document (the command's --out handling). A failed run: exit 1, the others kept.
void run_against_nccl(AgainstNcclCommand c, const std::function<void(const std::string&)>& print, Context& ctx);

}  // namespace p2pscope::app
