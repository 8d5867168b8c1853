#pragma once
// Runs the built p2pscope binary with arguments; returns its exit code and its
// stdout and stderr together.
#include <string>

#include "support/shell.hpp"

namespace p2pscope::test {

using Result = ShellResult;

inline Result run_binary(const std::string& args) {
  return run_shell(std::string(P2PSCOPE_BINARY) + " " + args + " 2>&1");
}

// The binary under `env` (VAR=value ...), as env(1) runs it.
inline Result run_binary_env(const std::string& env, const std::string& args) {
  return run_shell("env " + env + " " + P2PSCOPE_BINARY + " " + args + " 2>&1");
}

}  // namespace p2pscope::test
