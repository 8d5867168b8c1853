#pragma once
// Runs the built p2pscope binary with arguments; returns its exit code and its
// stdout and stderr together.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
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

// stdout and stderr apart (so JSON on stdout parses), through files in the test's temp
// dir; `env` (VAR=value ...) goes before the command; 120 s at most.
struct SplitResult {
  int code = -1;
  std::string out, err;
};
inline SplitResult run_binary_split(const std::string& args, const std::string& env = "") {
  static int seq = 0;
  const std::string base = std::filesystem::temp_directory_path().string() + "/p2pscope_cli_" +
                           std::to_string(::getpid()) + "_" + std::to_string(seq++);
  const ShellResult sh = run_shell(env + " timeout 120 " + P2PSCOPE_BINARY + " " + args + " >" + base + ".out 2>" +
                                   base + ".err");
  SplitResult r;
  r.code = sh.code;
  for (auto [path, dst] : {std::pair{base + ".out", &r.out}, std::pair{base + ".err", &r.err}}) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    *dst = s.str();
    std::filesystem::remove(path);
  }
  return r;
}

}  // namespace p2pscope::test
