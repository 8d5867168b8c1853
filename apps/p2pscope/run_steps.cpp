// Child processes for `p2pscope run`: fork/exec of this same binary, stdout to a
// file, stderr through a pipe to both the terminal and <step>.log, SIGTERM then
// SIGKILL when a step outlives its time limit.
#include "run_steps.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::app {
namespace fs = std::filesystem;
namespace {

std::string quote(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t'\"$\\;&|<>*?") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// In the child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const fs::path& self, const std::vector<std::string>& args, int out_fd, int err_fd) {
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  std::vector<char*> argv;
  std::string self_s = self.string();
  argv.push_back(self_s.data());
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(self_s.c_str(), argv.data());
  const char msg[] = "p2pscope run: exec of the step failed\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(127);
}

}  // namespace

nlohmann::json to_json(const StepResult& r) {
  nlohmann::json j{{"name", r.name},     {"status", r.status}, {"exit_code", r.exit_code},
                   {"seconds", r.seconds}, {"command", r.command}};
  if (!r.stdout_path.empty()) j["stdout"] = r.stdout_path;
  if (!r.log_path.empty()) j["log"] = r.log_path;
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

StepRunner::StepRunner(fs::path out_dir, double timeout_s, const std::atomic<bool>* stop)
    : out_(std::move(out_dir)), timeout_s_(timeout_s), stop_(stop) {
  std::error_code ec;
  self_ = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this program's path in /proc/self/exe: " + ec.message());
}

StepResult StepRunner::run(const Step& step, std::size_t index, std::size_t total) const {
  StepResult r;
  r.name = step.name;
  r.note = step.note;
  const std::string tag = fmt::format("[{}/{}] {}", index, total, step.name);
  if (step.args.empty()) {
    r.status = "skipped";
    r.note = step.skipped_because;
    std::cerr << tag << ": skipped (" << step.skipped_because << ")\n";
    return r;
  }
  r.command = "p2pscope";
  for (const auto& a : step.args) r.command += " " + quote(a);
  std::cerr << tag << ": " << r.command << (step.note.empty() ? "" : "  [" + step.note + "]") << "\n";

  r.log_path = (out_ / (step.name + ".log")).string();
  r.stdout_path = step.stdout_name.empty() ? "" : (out_ / step.stdout_name).string();
  const int out_fd = open(r.stdout_path.empty() ? "/dev/null" : r.stdout_path.c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0) throw Error("cannot write " + r.stdout_path + ": " + errno_text(errno));
  std::ofstream log(r.log_path);
  int pipe_fd[2];
  if (pipe2(pipe_fd, O_CLOEXEC) != 0) {
    close(out_fd);
    throw_errno("pipe for step " + step.name);
  }
  const auto t0 = monotonic_ns();
  const pid_t pid = fork();
  if (pid < 0) {
    close(out_fd), close(pipe_fd[0]), close(pipe_fd[1]);
    throw_errno("fork for step " + step.name);
  }
  if (pid == 0) exec_child(self_, step.args, out_fd, pipe_fd[1]);
  close(out_fd);
  close(pipe_fd[1]);

  // Relay the child's stderr until it closes, while watching the clock.
  bool timed_out = false, pipe_open = true, forwarded = false;
  std::int64_t term_sent_ns = 0;
  int status = 0;
  for (;;) {
    if (pipe_open) {
      pollfd p{pipe_fd[0], POLLIN, 0};
      if (poll(&p, 1, 200) > 0) {
        char buf[4096];
        const ssize_t n = read(pipe_fd[0], buf, sizeof buf);
        if (n > 0) {
          log.write(buf, n);
          log.flush();
          std::cerr.write(buf, n);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          pipe_open = false;
        }
      }
    } else {
      usleep(100 * 1000);
    }
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid && !pipe_open) break;
    if (w == pid) {  // exited: drain what is left, then stop
      pipe_open = false;
      char buf[4096];
      ssize_t n;
      while ((n = read(pipe_fd[0], buf, sizeof buf)) > 0) log.write(buf, n), std::cerr.write(buf, n);
      break;
    }
    // A signal sent to `run` alone (kill, timeout(1)) reaches the step too, once: it then
    // stops within a second and writes what it measured (Ctrl-C reaches the whole group).
    if (!forwarded && stop_ != nullptr && stop_->load()) {
      forwarded = true;
      kill(pid, SIGTERM);
    }
    const double elapsed = static_cast<double>(monotonic_ns() - t0) / 1e9;
    if (!timed_out && elapsed > timeout_s_) {
      timed_out = true;
      term_sent_ns = monotonic_ns();
      std::cerr << tag << ": over the " << timeout_s_ << " s limit (--step-timeout): stopping it\n";
      kill(pid, SIGTERM);
    }
    if (timed_out && monotonic_ns() - term_sent_ns > 10'000'000'000LL) kill(pid, SIGKILL);
  }
  close(pipe_fd[0]);
  r.seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const bool interrupted = stop_ != nullptr && stop_->load();
  r.status = interrupted ? "interrupted" : timed_out ? "timed out" : r.exit_code == 0 ? "ok" : "failed";
  std::cerr << tag << ": " << r.status << fmt::format(" in {:.1f} s", r.seconds)
            << (r.status == "ok" ? "" : fmt::format(" (exit {}; log {})", r.exit_code, r.log_path)) << "\n";
  return r;
}

}  // namespace p2pscope::app
