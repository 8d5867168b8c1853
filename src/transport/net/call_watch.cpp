#include "transport/net/call_watch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "p2pscope/clock.hpp"

namespace p2pscope::net::detail {
namespace {

// A thread's slot in the watch it last called through: found once per thread and
// watch (worker threads live a round; the slot is given back when the thread ends).
}  // namespace

struct Lease {
  std::uint64_t watch_id = 0;
  std::shared_ptr<void> keep;  // the slots' store, kept while this thread holds one
  CallWatch::Slot* slot = nullptr;
  void give_back() {
    if (slot) slot->taken.store(false);
    slot = nullptr;
    keep.reset();
    watch_id = 0;
  }
  ~Lease() { give_back(); }
};
namespace {
thread_local Lease t_lease;
thread_local bool t_abandonable = false;
}  // namespace

void CallWatch::calls_of_this_thread_are_abandonable() { t_abandonable = true; }

std::uint64_t CallWatch::next_id() {
  static std::atomic<std::uint64_t> n{1};
  return n.fetch_add(1);
}

CallWatch::~CallWatch() {
  {
    std::lock_guard lk(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

CallWatch::Slot* CallWatch::slot_of_this_thread() {
  if (t_lease.watch_id == id_) return t_lease.slot;
  t_lease.give_back();
  std::lock_guard lk(slots_->mu);
  Slot* s = nullptr;
  for (auto& x : slots_->all)
    if (!x.taken.load() && x.seq.load() % 2 == 0) {
      s = &x;
      break;
    }
  if (!s) s = &slots_->all.emplace_back();
  s->taken.store(true);
  t_lease.watch_id = id_;
  t_lease.keep = slots_;
  t_lease.slot = s;
  return s;
}

CallWatch::Guard::Guard(CallWatch& w, const char* call) : slot_(w.slot_of_this_thread()) {
  slot_->call.store(call, std::memory_order_relaxed);
  slot_->abandonable.store(t_abandonable, std::memory_order_relaxed);
  slot_->seq.store(slot_->seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

std::shared_ptr<void> CallWatch::arm(CallLimits limits) {
  limits.limit_s = std::max(limits.limit_s, kMinLimitS);
  auto token = std::make_shared<CallLimits>(std::move(limits));
  std::lock_guard lk(mu_);
  armed_.push_back(token);
  reported_ = false;
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  return token;
}

const CallWatch::Slot* CallWatch::longest(std::vector<Seen>& seen, std::int64_t now, std::int64_t& stuck_ns) {
  std::lock_guard lk(slots_->mu);
  seen.resize(slots_->all.size());
  const Slot* worst = nullptr;
  stuck_ns = 0;
  for (std::size_t i = 0; i < slots_->all.size(); ++i) {
    const std::uint64_t seq = slots_->all[i].seq.load(std::memory_order_acquire);
    if (seq != seen[i].seq) seen[i] = {seq, now};  // moved since the last look: a new call, or none
    if (seq % 2 == 1 && !slots_->all[i].abandonable.load(std::memory_order_relaxed) &&
        now - seen[i].since_ns >= stuck_ns) {
      stuck_ns = now - seen[i].since_ns;
      worst = &slots_->all[i];
    }
  }
  return worst;
}

void CallWatch::loop() {
  std::vector<Seen> seen;
  std::int64_t stop_seen_ns = 0;
  std::unique_lock lk(mu_);
  while (!cv_.wait_for(lk, std::chrono::milliseconds(kTickMs), [this] { return quit_; })) {
    std::erase_if(armed_, [](const auto& w) { return w.expired(); });
    std::vector<std::shared_ptr<CallLimits>> on;
    for (const auto& w : armed_)
      if (auto a = w.lock()) on.push_back(std::move(a));
    const std::int64_t now = monotonic_ns();
    std::int64_t stuck_ns = 0;
    const Slot* s = longest(seen, now, stuck_ns);
    if (on.empty() || reported_) continue;
    double limit_s = 0;
    bool stopping = false;
    for (const auto& a : on) {
      limit_s = std::max(limit_s, a->limit_s);
      stopping = stopping || (a->stop && a->stop->load());
    }
    if (stopping && stop_seen_ns == 0) stop_seen_ns = now;
    const double stuck_s = static_cast<double>(stuck_ns) * 1e-9;
    const bool past_stop = stopping && static_cast<double>(now - stop_seen_ns) * 1e-9 >= kStopGraceS && stuck_s >= kStopGraceS;
    if (!s || (stuck_s < limit_s && !past_stop)) continue;
    const char* call = s->call.load(std::memory_order_relaxed);
    const std::string why =
        past_stop ? fmt::format("{}: stopped by a signal, but the plugin's {} call has not returned for {:.1f} s: the "
                                "plugin is hung; ending the run (a thread inside a plugin call cannot be stopped)",
                                who_, call ? call : "?", stuck_s)
                  : fmt::format("{}: the plugin's {} call has not returned for {:.1f} s (the limit: --timeout, at "
                                "least {:.0f} s): the plugin is hung; ending the run (a thread inside a plugin call "
                                "cannot be stopped)",
                                who_, call ? call : "?", stuck_s, kMinLimitS);
    reported_ = true;
    auto handler = on.front()->on_hung;
    lk.unlock();  // the handler ends the process; a handler that returns gets no second report
    if (handler) handler(why);
    lk.lock();
  }
}

}  // namespace p2pscope::net::detail
