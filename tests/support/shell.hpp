#pragma once
// A shell command line run to its end: its exit code and its stdout (stderr too where the
// line says 2>&1). For tests that run the built binary or a script (was a popen loop in
// each such test file).
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace p2pscope::test {

struct ShellResult {
  int code = -1;  // the exit status; -1 when it did not exit normally or could not start
  std::string out;
};

inline ShellResult run_shell(const std::string& command_line) {
  ShellResult r;
  FILE* p = ::popen(command_line.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace p2pscope::test
