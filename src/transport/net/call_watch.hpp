#pragma once
// A watchdog over every call into a net plugin. A third-party plugin hung inside a call
// (Google's Fast Socket did, issue 32 item 1) held bench net for ever: its thread cannot
// be stopped or unwound, and only the third SIGTERM ended the process. Each call marks
// its thread's slot on entry and return (two relaxed stores, no clock, no lock); a thread
// looks at the slots every kTickMs and reports a call in progress past the limit, or past
// kStopGraceS once the stop flag is set, to the armed handler, which ends the process.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "p2pscope/netplugin.hpp"

namespace p2pscope::net::detail {

class CallWatch {
 public:
  static constexpr int kTickMs = 50;
  static constexpr double kStopGraceS = 1.0;
  static constexpr double kMinLimitS = 2.0;  // registering a large buffer may take a while
  explicit CallWatch(std::string who) : who_(std::move(who)) {}
  ~CallWatch();  // stops the thread (it may be waiting in no handler: the handler ends the process)
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  // A cache line each: the progress threads of a round poll test() on their own slots.
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> seq{0};  // odd: inside a call
    std::atomic<const char*> call{nullptr};
    std::atomic<bool> taken{false};
    std::atomic<bool> abandonable{false};  // its caller waits with a bound of its own (Plugin::connect_bounded)
  };
  // Marks the calling thread inside `call` (a string literal) for its lifetime.
  class Guard {
   public:
    Guard(CallWatch& w, const char* call);
    // Only the slot's thread writes seq: a plain store, no locked instruction.
    ~Guard() { slot_->seq.store(slot_->seq.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Slot* slot_;
  };

  // Calls are bounded while the token lives (several at once: the limits of the longest).
  std::shared_ptr<void> arm(CallLimits limits);

  // The calling thread's calls from now on are left to their caller's own bound: the
  // watch does not report them (a call there that hangs is abandoned, not fatal).
  static void calls_of_this_thread_are_abandonable();

 private:
  struct Seen {
    std::uint64_t seq = 0;
    std::int64_t since_ns = 0;
  };
  Slot* slot_of_this_thread();
  void loop();
  // The slot stuck longest and for how long (ns); nullptr when none is in a call.
  const Slot* longest(std::vector<Seen>& seen, std::int64_t now, std::int64_t& stuck_ns);

  const std::string who_;
  const std::uint64_t id_ = next_id();
  static std::uint64_t next_id();
  // Shared with the threads' leases: a thread may end after the plugin was unloaded.
  struct Slots {
    std::mutex mu;
    std::deque<Slot> all;  // a deque: slots never move
  };
  std::shared_ptr<Slots> slots_ = std::make_shared<Slots>();
  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false, reported_ = false;
  std::vector<std::weak_ptr<CallLimits>> armed_;
  std::thread thread_;
};

class Ops;
// `inner` with every call marked in `w` (which must outlive it).
std::unique_ptr<Ops> watched(std::unique_ptr<Ops> inner, CallWatch& w);

}  // namespace p2pscope::net::detail
