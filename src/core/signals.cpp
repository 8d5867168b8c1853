// Every signal handler p2pscope installs (p2pscope/signals.hpp). A handler can reach only
// static storage, hence the file-local state below; it writes with write(2), the one
// output call that is async-signal-safe.
#include "p2pscope/signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

namespace p2pscope {
namespace {

// ---- InterruptFlag: SIGINT/SIGTERM -> an atomic flag the long runners poll -----------
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
std::atomic<int> g_count{0};
// Raised with g_stop when the first signal was not the terminal's (kill, timeout(1)): only
// then must a runner pass it on to its children (see InterruptFlag::pass_on).
std::atomic<bool> g_pass_on{false};
struct sigaction g_old_int, g_old_term;
// Built by the constructor, only read by the handler.
char g_first_int[512], g_first_term[512], g_second[512];

void say(const char* text) {
  const std::size_t n = std::strlen(text);
  // Nothing to do if stderr is gone; the result is deliberately ignored.
  if (write(STDERR_FILENO, text, n) < 0) return;
}

extern "C" void on_interrupt(int sig, siginfo_t* info, void*) {
  const int n = g_count.fetch_add(1) + 1;  // lock-free atomics: async-signal-safe
  if (n == 1) {
    g_signal.store(sig);
    // A terminal's Ctrl-C (si_code SI_KERNEL) reaches the whole foreground process group:
    // a child has it already, and one passed on would read as a second signal there.
    g_pass_on.store(info == nullptr || info->si_code != SI_KERNEL);
    g_stop.store(true);
    say(sig == SIGTERM ? g_first_term : g_first_int);
  } else if (n == 2) {
    // The runners already stop within about a second of the first signal; a second one
    // must not throw away what they are writing, so it only says so.
    say(g_second);
  } else {
    signal(sig, SIG_DFL);  // a third: the default action, at once
    raise(sig);
  }
}

void copy_message(char* to, const std::string& text) {
  const std::size_t n = std::min(text.size(), std::size_t{511});
  std::memcpy(to, text.data(), n);
  to[n] = '\0';
}

// ---- SignalForwarder: the child to pass signals to, and the last that arrived ---------
volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_forwarded_signal = 0;

extern "C" void on_forwarded(int sig, siginfo_t* info, void*) {
  g_forwarded_signal = sig;
  // A terminal's Ctrl-C already reaches the child (same process group, si_code
  // SI_KERNEL); forward only signals sent with kill() to p2pscope itself.
  if (g_child > 0 && info && info->si_code != SI_KERNEL) ::kill(static_cast<pid_t>(g_child), sig);
}

}  // namespace

InterruptFlag::InterruptFlag(const std::string& command, bool announce) {
  const std::string what = command.empty() ? "p2pscope" : command;
  const std::string tail = ": stopping within a second; everything measured will be written (a third signal kills at once)\n";
  copy_message(g_first_int, "\n" + what + ": SIGINT received" + tail);
  copy_message(g_first_term, "\n" + what + ": SIGTERM received" + tail);
  copy_message(g_second, what + ": second signal: still writing what was measured (a third kills at once)\n");
  if (!announce) g_first_int[0] = g_first_term[0] = g_second[0] = '\0';
  g_stop.store(false);
  g_signal.store(0);
  g_count.store(0);
  g_pass_on.store(false);
  struct sigaction sa {};
  sa.sa_sigaction = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO;  // stays installed: the second signal is counted, not the default kill
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptFlag::~InterruptFlag() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

const std::atomic<bool>* InterruptFlag::flag() const { return &g_stop; }
const std::atomic<bool>* InterruptFlag::pass_on() const { return &g_pass_on; }
int InterruptFlag::signal_number() const { return g_signal.load(); }

SignalForwarder::SignalForwarder() {
  g_child = 0;
  g_forwarded_signal = 0;
  struct sigaction sa {};
  sa.sa_sigaction = on_forwarded;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

SignalForwarder::~SignalForwarder() { restore(); }

void SignalForwarder::forward_to(int pid) { g_child = pid; }
int SignalForwarder::signal_number() const { return static_cast<int>(g_forwarded_signal); }

void SignalForwarder::restore() {
  if (!installed_) return;
  installed_ = false;
  g_child = 0;
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
}

void ignore_interrupt() { std::signal(SIGINT, SIG_IGN); }

}  // namespace p2pscope
