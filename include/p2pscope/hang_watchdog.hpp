#pragma once
// Ends the process when a call that cannot be interrupted outlives its limit. A NCCL
// collective or CUDA call that hangs in this process holds its thread for ever: no stop
// flag reaches it, and only a kill ends the run (a step of `run` waited its whole step
// timeout). The watchdog says what hung, and what was already kept, and exits 124 (as
// timeout(1) does). Only for calls whose results are written before the watch starts or
// as they come: exiting loses whatever the watched call had in hand.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace p2pscope {

class HangWatchdog {
 public:
  static constexpr int kExitCode = 124;
  // `what`: the call ("nccl calibration allreduce on GPUs 0-3"); `kept`: what the user
  // still has ("the campaign in DIR is complete").
  HangWatchdog(double limit_s, std::string what, std::string kept);
  ~HangWatchdog();  // the watched call returned: cancels, at once
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// The limit in seconds from environment variable `name` when set to a positive number,
// else `fallback`.
double limit_from_env(const char* name, double fallback);

}  // namespace p2pscope
