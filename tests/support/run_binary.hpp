#pragma once
// Runs the built p2pscope binary with arguments; returns its exit code and its
// stdout and stderr together.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace p2pscope::test {

struct Result {
  int code = -1;
  std::string out;
};

inline Result run_binary(const std::string& args) {
  Result r;
  const std::string cmd = std::string(P2PSCOPE_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace p2pscope::test
