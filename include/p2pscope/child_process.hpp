#pragma once
// One way to start a child process: argv (a path, or a name looked up in PATH), an
// environment edited from this process's, stdout/stderr inherited, captured, sent to a
// file or discarded, a time limit (SIGTERM, then SIGKILL), and a stop flag forwarded as
// a signal (SIGTERM unless told). Used by `doctor --compare` (captured bench runs), `run` (its steps) and
// `monitor -- CMD` (a held child the sampler points at before it runs) and
// `profile --processes K` (children in their own process group).
// Threads: one ChildProcess is used by one thread; fork happens with every argument
// prepared first, so the child runs only async-signal-safe calls until exec.
#include <sys/types.h>

#include <atomic>
#include <csignal>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace p2pscope {

struct ChildSpec {
  enum class Output { inherit, capture, file, discard };
  std::vector<std::string> argv;               // argv[0] is run; without a '/' it is looked up in PATH
  std::string program;                         // run this instead of argv[0] (which is then only its name)
  std::map<std::string, std::string> env_set;  // added to this process's environment (replacing)
  std::vector<std::string> env_unset;          // removed from it
  Output out = Output::inherit, err = Output::inherit;
  std::string out_path, err_path;              // for Output::file (created or truncated, mode 0644)
  bool err_to_out = false;                     // stderr goes where stdout goes, interleaved as written
  // Forked but waiting for release() before exec: a monitor points at its pid first.
  bool hold = false;
  // A process group of its own: a terminal's Ctrl-C reaches it only through this process.
  bool own_process_group = false;
};

struct ChildResult {
  int exit_code = 0;       // the exit status, or 128 + the signal that ended it
  int term_signal = 0;     // that signal; 0 when it exited
  bool timed_out = false;  // the time limit ended it
  bool stopped = false;    // the stop flag was forwarded to it
  double elapsed_s = 0;    // from the start of wait()
  double cpu_s = 0;        // user + system time of it and the children it waited for
  std::string out, err;    // what was captured (err is empty with err_to_out)
};

struct ChildWait {
  double timeout_s = 0;     // 0: none; then SIGTERM, and SIGKILL kill_after_s later
  double kill_after_s = 10;
  const std::atomic<bool>* stop = nullptr;  // raised (Ctrl-C): stop_signal once
  int stop_signal = SIGTERM;
  std::function<void()> on_timeout;                      // called once, before the SIGTERM
  // Captured pieces as they come (a tee to a terminal and a log), instead of into
  // ChildResult::out/err: a long run's output is not held in memory.
  std::function<void(std::string_view)> on_out, on_err;
  // The child has exited and is not yet reaped: its /proc entry still reads.
  std::function<void()> before_reap;
};

class ChildProcess {
 public:
  // Forks (and, unless held, execs). Throws Error when the process cannot be made, a
  // file cannot be opened, or (unless held) exec failed: "cannot run 'x': No such file".
  explicit ChildProcess(const ChildSpec& spec);
  ~ChildProcess();  // a child not waited for is killed (SIGKILL) and reaped
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // A held child execs now. Returns 0, or the errno exec failed with (the child is then
  // gone: exit 127 for ENOENT, else 126, as a shell says).
  int release();
  // Relays captured output until the child exits; returns how it ended. Once only.
  ChildResult wait(const ChildWait& how = {});
  void signal(int sig) const noexcept;

 private:
  pid_t pid_ = -1;
  int go_fd_ = -1, exec_err_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  bool reaped_ = false;
  int exec_errno_ = 0;
  void close_fds() noexcept;
};

// Starts and waits: run_child({.argv = {"ls"}, .out = ChildSpec::Output::capture}).out.
ChildResult run_child(const ChildSpec& spec, const ChildWait& how = {});

}  // namespace p2pscope
