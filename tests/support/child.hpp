#pragma once
// The built p2pscope binary as a child process, for tests that signal or kill it
// mid-run: spawn (stdout and stderr to /dev/null) and its exit status.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace p2pscope::test {

inline pid_t spawn(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(P2PSCOPE_BINARY));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    execv(P2PSCOPE_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

// The exit code, or 128 + the signal that ended it (as a shell reports it).
inline int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace p2pscope::test
