#pragma once
// The built p2pscope binary as a child process, for tests that signal or kill it
// mid-run: spawn (stdout and stderr to /dev/null), wait for the rows it writes to a
// CSV file as it goes, and its exit status.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
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

// Waits until the child catches `sig` (its handler is in place: a signal sent before
// that would end it by the default action, with nothing written) and runs at least
// `threads` threads; false after 30 s or when the child is gone. Under ASan and a loaded
// ctest the start-up alone can take longer than any fixed sleep a test would pick.
inline bool wait_catching(pid_t pid, int sig, int threads = 1) {
  for (int i = 0; i < 3000; ++i) {
    std::ifstream st("/proc/" + std::to_string(pid) + "/status");
    if (!st) return false;
    unsigned long long caught = 0;
    int running = 0;
    for (std::string line; std::getline(st, line);) {
      if (line.rfind("SigCgt:", 0) == 0) caught = std::stoull(line.substr(7), nullptr, 16);
      if (line.rfind("Threads:", 0) == 0) running = std::stoi(line.substr(8));
    }
    if ((caught & (1ull << (sig - 1))) && running >= threads) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Lines of a CSV file after its header.
inline std::size_t data_lines(const std::filesystem::path& csv) {
  std::ifstream in(csv);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n > 0 ? n - 1 : 0;
}

// Waits until `csv` holds at least `rows` rows; false when the child ended first (it is
// then reaped) or 60 s passed.
inline bool wait_rows(pid_t pid, const std::filesystem::path& csv, std::size_t rows) {
  for (int i = 0; i < 6000; ++i) {
    if (std::filesystem::exists(csv) && data_lines(csv) >= rows) return true;
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace p2pscope::test
