// SIGINT/SIGTERM -> an atomic flag the campaign polls between ops. A signal handler
// can only reach static storage, hence the one file-local flag.
#include <csignal>

#include "p2pscope/profile.hpp"

namespace p2pscope::profile {
namespace {
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
struct sigaction g_old_int, g_old_term;

extern "C" void on_signal(int sig) {
  g_signal.store(sig);
  g_stop.store(true);  // lock-free atomic: async-signal-safe
}
}  // namespace

InterruptFlag::InterruptFlag() {
  g_stop.store(false);
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C gets the default action: kill
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
