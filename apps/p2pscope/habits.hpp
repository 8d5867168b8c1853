#pragma once
// Messages for arguments a subcommand does not take (habits.cpp).
#include <functional>
#include <string>
#include <vector>

namespace p2pscope::app {

// The p2pscope way to say `flag` of another tool's habit on `command` ("bench nccl"),
// else "did you mean --x?" for a near option of `known`, else "".
std::string habit_hint(const std::string& command, const std::string& flag, const std::vector<std::string>& known);
// "p2pscope bench nccl: unexpected arguments: -t 4" in the order typed, a hint per flag.
std::string unexpected_arguments_message(const std::string& command, const std::vector<std::string>& args,
                                         const std::vector<std::string>& known);

// CLI11's refusal in p2pscope's words: "Could not convert: --reps = x" reads "--reps: 'x'
// is not a whole number", "--out: 1 required TEXT missing" reads "--out needs a value",
// "--skip: bogus not in {a,b}" reads "--skip: 'bogus' is not one of a, b". `type_of` gives
// an option's CLI11 type name ("INT", "FLOAT", "" when unknown). Text it does not know
// is returned as it is.
std::string parse_error_words(const std::string& what, const std::function<std::string(const std::string&)>& type_of);

}  // namespace p2pscope::app
