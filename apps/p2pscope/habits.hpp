#pragma once
// Messages for arguments a subcommand does not take (habits.cpp).
#include <string>
#include <vector>

namespace p2pscope::app {

// The p2pscope way to say `flag` of another tool's habit on `command` ("bench nccl"),
// else "did you mean --x?" for a near option of `known`, else "".
std::string habit_hint(const std::string& command, const std::string& flag, const std::vector<std::string>& known);
// "p2pscope bench nccl: unexpected arguments: -t 4" in the order typed, a hint per flag.
std::string unexpected_arguments_message(const std::string& command, const std::vector<std::string>& args,
                                         const std::vector<std::string>& known);

}  // namespace p2pscope::app
