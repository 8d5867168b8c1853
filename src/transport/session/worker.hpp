#pragma once
// The worker thread bodies. Each runs one connection for one round and reports
// failures through RoundCtl, which shuts every socket of the round down so the
// other workers (and the peer) stop at once instead of waiting for a timeout.
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "transport/session/channel.hpp"

namespace p2pscope::session {
using namespace p2pscope::tcp;  // the engine's public types (Params, reports) and its sockets

struct RoundCtl {
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error, nic;
  IoCause cause = IoCause::other;
  std::vector<Socket*> socks;
  void fail(const std::string& msg, IoCause cause, const std::string& nic) noexcept;
};

struct WorkerArgs {
  Session& s;
  Conn& c;
  ChannelState& ch;
  std::uint32_t round;
  bool timed;  // add this round's samples to the figures
  RoundCtl& ctl;
  WorkerReport& rep;
  std::vector<int> cpus;  // binding for this worker's NIC and role; empty = none
};

void tx_worker(WorkerArgs a);    // sends chunks, at most `window` unacked per channel; reads its acks
void rx_worker(WorkerArgs a);    // receives chunks (verifies), sends acks
void ping_worker(WorkerArgs a);  // latency: send, wait for the echo
void pong_worker(WorkerArgs a);  // latency: echo


// Runs a worker's body with what every data path's worker needs around it: pinning
// (verified), the GPU of its slot current, CPU / wall / run-queue time and context
// switches into a.rep, and any exception turned into a.ctl.fail (first cause kept).
void run_guarded(WorkerArgs& a, const std::function<void()>& body);
// Throws Error("interrupted") once LocalOptions::stop is set: workers call it per chunk.
void check_stop(const WorkerArgs& a);

// Starts one thread per s.workers entry running fn(args), joins them all; a thread
// that cannot start fails the round. Throws RoundFailure with the first cause.
using WorkerFn = void (*)(WorkerArgs);
void run_worker_threads(Session& s, std::uint32_t round, bool timed, RoundCtl& ctl,
                        const std::function<WorkerFn(const WorkerReport&)>& pick);

// Pins the calling thread to cpus (those allowed), fills rep's expected/actual.
void pin_self(const std::vector<int>& cpus, const std::vector<int>& allowed, WorkerReport& rep);

}  // namespace p2pscope::session
