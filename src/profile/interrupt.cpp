// SIGINT/SIGTERM -> an atomic flag the long runners poll between samples. A signal
// handler can only reach static storage, hence the file-local flag and messages; it
// writes them with write(2), the one output call that is async-signal-safe.
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "p2pscope/profile.hpp"

namespace p2pscope::profile {
namespace {
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
std::atomic<int> g_count{0};
struct sigaction g_old_int, g_old_term;
// Built by the constructor, only read by the handler.
char g_first_int[512], g_first_term[512], g_second[512];

void say(const char* text) {
  const std::size_t n = std::strlen(text);
  // Nothing to do if stderr is gone; the result is deliberately ignored.
  if (write(STDERR_FILENO, text, n) < 0) return;
}

extern "C" void on_signal(int sig) {
  const int n = g_count.fetch_add(1) + 1;  // lock-free atomics: async-signal-safe
  if (n == 1) {
    g_signal.store(sig);
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
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // stays installed: the second signal is counted, not the default kill
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptFlag::~InterruptFlag() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

const std::atomic<bool>* InterruptFlag::flag() const { return &g_stop; }
int InterruptFlag::signal_number() const { return g_signal.load(); }

}  // namespace p2pscope::profile
