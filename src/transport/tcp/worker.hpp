#pragma once
// The worker thread bodies. Each runs one connection for one round and reports
// failures through RoundCtl, which shuts every socket of the round down so the
// other workers (and the peer) stop at once instead of waiting for a timeout.
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "transport/tcp/channel.hpp"

namespace p2pscope::tcp {

struct RoundCtl {
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;
  std::vector<Socket*> socks;
  void fail(const std::string& msg) noexcept;
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

void tx_worker(WorkerArgs a);    // sends chunks, at most `window` unacked per channel
void ack_worker(WorkerArgs a);   // reads acks: frees window slots, chunk latency
void rx_worker(WorkerArgs a);    // receives chunks (verifies), sends acks
void ping_worker(WorkerArgs a);  // latency: send, wait for the echo
void pong_worker(WorkerArgs a);  // latency: echo

// Chunk indices carried by (channel, socket): chunk i goes to channel i % C, and the
// channel's j-th chunk to socket j % K.
std::vector<std::uint64_t> chunks_of(const Params& p, std::uint32_t channel, std::uint32_t socket);

// Pins the calling thread to cpus (those allowed), fills rep's expected/actual.
void pin_self(const std::vector<int>& cpus, const std::vector<int>& allowed, WorkerReport& rep);

}  // namespace p2pscope::tcp
