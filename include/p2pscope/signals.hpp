#pragma once
// Every signal handler p2pscope installs, in one module (issue 33 item 3): a handler can
// reach only static storage, so each kind owns its file-local state in src/core/signals.cpp
// and hands out an RAII object; commands never call sigaction themselves.
#include <atomic>
#include <string>

namespace p2pscope {

// SIGINT/SIGTERM -> flag, for the long runs (bench, profile, run, sweep). The first signal
// sets the flag and says on stderr at once that the run is stopping (`command` names who
// says it); the second only says that the output is still being written; a third gets the
// default action (kill). Restores the previous handlers on destruction. One at a time per
// process.
class InterruptFlag {
 public:
  // announce = false: the flag without the messages (a --processes child, whose parent
  // already said it on the same terminal).
  explicit InterruptFlag(const std::string& command = "p2pscope", bool announce = true);
  ~InterruptFlag();
  InterruptFlag(const InterruptFlag&) = delete;
  InterruptFlag& operator=(const InterruptFlag&) = delete;
  const std::atomic<bool>* flag() const;
  // Raised with flag() when the first signal was sent to this process (kill, timeout(1)),
  // not typed at its terminal: a child process is to be told then. Ctrl-C reached the
  // whole foreground process group, children included, and telling them again would
  // count as their second signal.
  const std::atomic<bool>* pass_on() const;
  int signal_number() const;  // 0 if none arrived
};

// SIGINT/SIGTERM recorded and passed on to a child (`monitor -- CMD`): a signal sent to
// p2pscope with kill() reaches the command; a terminal's Ctrl-C already reaches it (same
// process group) and is only recorded. Interrupted system calls restart. restore() (or
// the destructor) puts the default actions back. One at a time per process.
class SignalForwarder {
 public:
  SignalForwarder();
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;
  void forward_to(int pid);   // 0: to no one
  int signal_number() const;  // the last signal that arrived; 0 if none
  void restore();             // idempotent
 private:
  bool installed_ = true;
};

// A rank other than 0 under a launcher: Ctrl-C is rank 0's to act on (it saves, then
// tells the others), so this process ignores SIGINT from here on.
void ignore_interrupt();

}  // namespace p2pscope
