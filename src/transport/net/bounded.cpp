// connect / accept with a bound of their own (netplugin.hpp): the call runs in a thread
// that may be abandoned, so a peer that hangs the plugin fails its session only.
#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "p2pscope/netplugin.hpp"
#include "transport/net/call_watch.hpp"

namespace p2pscope::net {
namespace {

std::atomic<int> g_abandoned{0};

// What the caller waits past the deadline for: the plugin's own loop ends at the
// deadline between tries, so a call still inside the plugin a grace later is hung.
constexpr double kGraceS = 1.0;

template <class Comm>
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<Comm> comm;
  std::exception_ptr error;
  ListenComm listener;  // accept's, owned here while the call may use it
};

// Runs `call` in a detached thread and waits; the thread keeps the plugin and `state`
// alive, so an abandoned call never touches freed memory. `what` names the call.
template <class Comm, class Call>
Comm run_bounded(const std::shared_ptr<Plugin>& plugin, std::shared_ptr<Pending<Comm>> state, Call call,
                 Deadline deadline, const std::atomic<bool>* stop, const std::string& what) {
  if (g_abandoned.load() >= Plugin::kMaxAbandonedCalls)
    throw Error(fmt::format("{}: {} plugin calls hung in this process and were left behind, each holding a thread "
                            "and the plugin's state; not starting {}: restart this process",
                            plugin->describe(), g_abandoned.load(), what));
  std::thread([plugin, state, call]() mutable {
    detail::CallWatch::calls_of_this_thread_are_abandonable();
    std::optional<Comm> c;
    std::exception_ptr e;
    try {
      c.emplace(call(*plugin, *state));
    } catch (...) {
      e = std::current_exception();
    }
    std::lock_guard lk(state->mu);
    state->comm = std::move(c);
    state->error = e;
    state->done = true;
    state->cv.notify_all();
  }).detach();
  const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kGraceS));
  auto until = deadline + grace;
  bool stopping = false;
  std::unique_lock lk(state->mu);
  while (!state->done) {
    if (!stopping && stop && stop->load()) {  // a signal: the grace from now, not the deadline
      stopping = true;
      until = std::min(until, Clock::now() + grace);
    }
    if (Clock::now() >= until) break;
    state->cv.wait_for(lk, std::chrono::milliseconds(50));
  }
  if (!state->done) {
    const int n = g_abandoned.fetch_add(1) + 1;
    throw Error(fmt::format("{}: the plugin's {} call has not returned {} (a peer's handle, or a peer that never "
                            "answers, can hang it): this session fails; the call's thread is left behind ({} of at "
                            "most {} in this process)",
                            plugin->describe(), what, stopping ? "a second after the stop" : "by its deadline", n,
                            Plugin::kMaxAbandonedCalls));
  }
  if (state->error) std::rethrow_exception(state->error);
  return std::move(*state->comm);
}

}  // namespace

SendComm Plugin::connect_bounded(int dev, const NetHandle& handle, Deadline deadline, const std::atomic<bool>* stop) {
  auto state = std::make_shared<Pending<SendComm>>();
  return run_bounded<SendComm>(
      shared_from_this(), state,
      [dev, handle, deadline](Plugin& p, Pending<SendComm>&) { return p.connect(dev, handle, deadline); }, deadline,
      stop, fmt::format("connect(dev {})", dev));
}

RecvComm Plugin::accept_bounded(ListenComm& listener, Deadline deadline, const std::atomic<bool>* stop) {
  auto state = std::make_shared<Pending<RecvComm>>();
  const int dev = listener.device();
  state->listener = std::move(listener);  // an abandoned accept keeps its listen comm: the plugin may be using it
  RecvComm rc = run_bounded<RecvComm>(
      shared_from_this(), state,
      [deadline](Plugin& p, Pending<RecvComm>& s) { return p.accept(s.listener, deadline); }, deadline, stop,
      fmt::format("accept(dev {})", dev));
  listener = std::move(state->listener);
  return rc;
}

}  // namespace p2pscope::net
