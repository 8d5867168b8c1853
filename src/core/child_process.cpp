// fork/exec with every argument built before the fork; a CLOEXEC pipe carries exec's
// errno back (so "not found" is told apart from a command that ran and failed); a
// pidfd (Linux 5.3+; else 50 ms ticks) wakes the wait when the child exits.
#include "p2pscope/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>

#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"

extern char** environ;

namespace p2pscope {
namespace {

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::vector<std::string> child_environment(const ChildSpec& spec) {
  std::set<std::string> drop(spec.env_unset.begin(), spec.env_unset.end());
  for (const auto& [k, v] : spec.env_set) drop.insert(k);
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    if (!drop.count(kv.substr(0, kv.find('=')))) env.push_back(kv);
  }
  for (const auto& [k, v] : spec.env_set) env.push_back(k + "=" + v);
  return env;
}

// The fd the child's stream goes to (-1: inherit), and for capture the parent's end.
struct Target {
  int child_fd = -1, parent_fd = -1;
};

Target open_target(ChildSpec::Output how, const std::string& path, const char* which) {
  Target t;
  switch (how) {
    case ChildSpec::Output::inherit: break;
    case ChildSpec::Output::discard:
      t.child_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (t.child_fd < 0) throw_errno("open /dev/null");
      break;
    case ChildSpec::Output::file:
      t.child_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (t.child_fd < 0) throw Error(std::string("cannot write the child's ") + which + " to " + path + ": " + errno_text(errno));
      break;
    case ChildSpec::Output::capture: {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe");
      t.parent_fd = fds[0], t.child_fd = fds[1];
      ::fcntl(t.parent_fd, F_SETFL, ::fcntl(t.parent_fd, F_GETFL) | O_NONBLOCK);
      break;
    }
  }
  return t;
}

// Reads what fd holds now; false at end of file (or an error other than "no data yet").
bool drain(int fd, std::string& into, const std::function<void(std::string_view)>& tee) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      const std::string_view piece(buf, static_cast<std::size_t>(n));
      if (tee) tee(piece);
      else into.append(piece);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

// Exec's errno from the CLOEXEC pipe: 0 once exec succeeded (end of file).
int read_exec_errno(int& fd) {
  int err = 0;
  ssize_t got;
  do got = ::read(fd, &err, sizeof err);
  while (got < 0 && errno == EINTR);
  close_fd(fd);
  return got == static_cast<ssize_t>(sizeof err) ? err : 0;
}

}  // namespace

ChildProcess::ChildProcess(const ChildSpec& spec) {
  if (spec.argv.empty()) throw Error("no command to run (empty argv)");
  std::vector<std::string> env = child_environment(spec);
  std::vector<char*> argv, envp;
  const char* program = spec.program.empty() ? spec.argv[0].c_str() : spec.program.c_str();
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  Target out, err;
  int exec_pipe[2] = {-1, -1}, go_pipe[2] = {-1, -1};
  auto close_all = [&]() noexcept {
    for (int* fd : {&out.child_fd, &out.parent_fd, &err.child_fd, &err.parent_fd, &exec_pipe[0], &exec_pipe[1],
                    &go_pipe[0], &go_pipe[1]})
      close_fd(*fd);
  };
  try {
    out = open_target(spec.out, spec.out_path, "stdout");
    if (!spec.err_to_out) err = open_target(spec.err, spec.err_path, "stderr");
    if (::pipe2(exec_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
    if (spec.hold && ::pipe2(go_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
  } catch (...) {
    close_all();
    throw;
  }
  std::fflush(nullptr);  // no buffered output written twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    close_all();
    throw_errno("fork");
  }
  if (pid == 0) {  // async-signal-safe calls only until exec
    if (out.child_fd >= 0) ::dup2(out.child_fd, STDOUT_FILENO);
    if (spec.err_to_out) ::dup2(STDOUT_FILENO, STDERR_FILENO);
    else if (err.child_fd >= 0) ::dup2(err.child_fd, STDERR_FILENO);
    if (spec.own_process_group) ::setpgid(0, 0);
    if (spec.hold) {
      char go = 0;
      ssize_t r;
      while ((r = ::read(go_pipe[0], &go, 1)) < 0 && errno == EINTR) {
      }
      if (r != 1) ::_exit(127);  // the parent gave up before releasing it: never run the command
    }
    ::execvpe(program, argv.data(), envp.data());
    const int e = errno;
    if (::write(exec_pipe[1], &e, sizeof e) < 0) ::_exit(127);
    ::_exit(127);
  }
  pid_ = pid;
  if (spec.own_process_group) ::setpgid(pid, pid);  // also here: no signal to the group can precede it
  out_fd_ = out.parent_fd, err_fd_ = err.parent_fd;
  out.parent_fd = err.parent_fd = -1;
  exec_err_fd_ = exec_pipe[0], exec_pipe[0] = -1;
  go_fd_ = go_pipe[1], go_pipe[1] = -1;
  close_all();  // the child's ends
  if (!spec.hold) {
    if (const int e = read_exec_errno(exec_err_fd_); e != 0) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
      close_fds();
      throw Error("cannot run '" + std::string(program) + "': " + errno_text(e));
    }
  }
}

int ChildProcess::release() {
  if (go_fd_ < 0) return exec_errno_;
  const char go = 1;
  if (::write(go_fd_, &go, 1) < 0) {
  }
  close_fd(go_fd_);
  exec_errno_ = read_exec_errno(exec_err_fd_);
  if (exec_errno_ != 0) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  return exec_errno_;
}

void ChildProcess::signal(int sig) const noexcept {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

ChildResult ChildProcess::wait(const ChildWait& how) {
  ChildResult r;
  const std::int64_t t0 = monotonic_ns();
  if (reaped_) {  // exec failed after release()
    r.exit_code = exec_errno_ == ENOENT ? 127 : 126;
    return r;
  }
  close_fd(go_fd_);  // a held child never released exits without running the command
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  const bool ticks = pidfd < 0 || how.timeout_s > 0 || how.stop != nullptr;
  bool exited = false;
  std::int64_t term_sent_ns = 0;
  for (;;) {
    pollfd fds[3];
    nfds_t n = 0;
    for (int fd : {out_fd_, err_fd_, pidfd})
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    if (::poll(fds, n, ticks ? 50 : -1) < 0 && errno != EINTR) throw_errno("poll on a child process");
    if (out_fd_ >= 0 && !drain(out_fd_, r.out, how.on_out)) close_fd(out_fd_);
    if (err_fd_ >= 0 && !drain(err_fd_, r.err, how.on_err)) close_fd(err_fd_);
    siginfo_t info{};
    const int w = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if ((w == 0 && info.si_pid == pid_) || (w < 0 && errno == ECHILD)) exited = true;  // ECHILD: SIGCHLD ignored, reaped
    if (exited) {  // what it wrote is in the pipes now; a grandchild holding them open is not waited for
      if (out_fd_ >= 0) drain(out_fd_, r.out, how.on_out);
      if (err_fd_ >= 0) drain(err_fd_, r.err, how.on_err);
      break;
    }
    if (how.stop && how.stop->load() && !r.stopped) {
      r.stopped = true;
      ::kill(pid_, how.stop_signal);
    }
    const double elapsed_s = static_cast<double>(monotonic_ns() - t0) / 1e9;
    if (how.timeout_s > 0 && !r.timed_out && elapsed_s > how.timeout_s) {
      r.timed_out = true;
      if (how.on_timeout) how.on_timeout();
      ::kill(pid_, SIGTERM);
      term_sent_ns = monotonic_ns();
    }
    if (r.timed_out && static_cast<double>(monotonic_ns() - term_sent_ns) / 1e9 > how.kill_after_s) ::kill(pid_, SIGKILL);
  }
  close_fd(pidfd);
  if (how.before_reap) how.before_reap();
  int status = 0;
  rusage ru{};
  int got;
  while ((got = ::wait4(pid_, &status, 0, &ru)) < 0 && errno == EINTR) {
  }
  if (got < 0) status = 0;  // reaped by the system (SIGCHLD ignored): how it ended is unknown
  reaped_ = true;
  close_fds();
  r.elapsed_s = static_cast<double>(monotonic_ns() - t0) / 1e9;
  r.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  r.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + r.term_signal;
  return r;
}

void ChildProcess::close_fds() noexcept {
  for (int* fd : {&go_fd_, &exec_err_fd_, &out_fd_, &err_fd_}) close_fd(*fd);
}

ChildProcess::~ChildProcess() {
  close_fds();  // a held child reads end of file and exits without running the command
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

ChildResult run_child(const ChildSpec& spec, const ChildWait& how) {
  ChildProcess child(spec);
  return child.wait(how);
}

}  // namespace p2pscope
