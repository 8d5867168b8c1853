#pragma once
// A session's data plane: connections grouped into channels, per-channel windows
// and accumulators, and run_round(), which starts the TX / RX / ack worker threads
// of one round and joins them.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <vector>

#include "p2pscope/tcp.hpp"
#include "transport/tcp/memory.hpp"
#include "transport/session/samples.hpp"
#include "transport/tcp/nic.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope::session {
using namespace p2pscope::tcp;  // the engine's public types (Params, reports) and its sockets

class DataPath;

// What a data path keeps per link besides a socket (a plugin's comms, say).
struct LinkState {
  virtual ~LinkState() = default;
};

// One data link (a TCP connection, or a plugin's send/recv comm): data flows in
// direction c2s (client to server) or s2c.
struct Conn {
  Socket sock;                       // sockets path; invalid for a plugin link
  std::unique_ptr<LinkState> link;   // other paths' own state
  std::string local_desc, peer_desc;  // for reports when there is no socket
  bool c2s = true;
  std::uint32_t gpu_slot = 0, channel = 0, socket = 0;
  NicAddr nic;
  std::string registration;  // how the path registered this link's buffer ("dmabuf", "cuda", "host"; "" none)
  // Send time of each chunk of this socket in the current round (sender side).
  std::unique_ptr<std::atomic<std::int64_t>[]> send_ns;
};

// Figures of one direction of one channel, summed over timed rounds.
struct ChannelState {
  ChannelState(std::uint32_t window, std::size_t sample_cap) : permits(window), lat_ns(sample_cap) {}
  std::counting_semaphore<1 << 30> permits;  // free window slots (sender side)
  std::atomic<std::uint32_t> in_flight{0};
  std::mutex mu;  // guards the fields below (workers of several sockets add to them)
  std::int64_t round_first_ns = 0, round_last_ns = 0;  // this round
  std::uint64_t round_bytes = 0;                       // this round, as the workers moved them
  std::uint64_t bytes = 0;
  double elapsed_s = 0;
  LatencySamples lat_ns;  // bounded: LatencySamples::cap_for the session's channels
  double occ_sum = 0;
  std::uint64_t occ_n = 0;
  std::uint32_t occ_max = 0;
  void mark(std::int64_t first, std::int64_t last);
  // A sender posted a chunk at t_ns with `occ` chunks in flight: the round starts no
  // later; timed rounds count the window's occupancy; `bytes` go to round_bytes.
  void note_post(std::int64_t t_ns, std::uint32_t occ, bool timed, std::uint64_t bytes = 0);
};

// Where a chunk's bytes live in a data buffer. Whole: the message, at its offset.
// Ring (host memory, bandwidth modes): `slots` chunk slots per socket, so only what
// can be in flight is real memory. A socket's chunks are sent and acked in order and
// its channel has at most `window` unacked, so its m-th chunk and its (m + slots)-th
// never share a slot at once.
struct Layout {
  bool ring = false;
  std::uint64_t slots = 0;  // per socket, when ring
  // Ring when `slots` (at most the window) x chunk per socket is smaller than the
  // message, else whole.
  static Layout ring_if_smaller(const Params& p, std::uint64_t slots);
  std::uint64_t bytes(const Params& p) const;
  // Chunk `m` (index within its socket) of (channel, socket), message offset `off`.
  std::uint64_t offset(const Params& p, std::uint32_t channel, std::uint32_t socket, std::uint64_t m,
                       std::uint64_t off) const {
    return ring ? ((std::uint64_t{channel} * p.sockets_per_channel + socket) * slots + m % slots) * p.chunk_bytes : off;
  }
};

struct Session {
  Params p;
  bool is_client = true;
  DataPath* path = nullptr;  // not owned: the options' path outlives the session
  Socket* ctrl = nullptr;  // the control connection while the rounds run (run_rounds); not owned
  bool reveal_host = true;   // the server's hostname goes to an authenticated client only
  bool authenticated = false;  // the peer proved the shared secret
  // The peer's other IPv4 addresses, as it vouched for them in a frame the secret covers
  // (the client's params, the server's accept); empty without a secret. bench net's
  // handle check takes these and the control connection's address, nothing else.
  std::vector<std::string> peer_addrs;
  LocalOptions local;
  std::vector<std::unique_ptr<Conn>> conns;
  std::vector<Buffer> src, dst;                       // per GPU slot (src empty on a receive-only side)
  Layout src_layout, dst_layout;
  std::vector<std::unique_ptr<ChannelState>> chans;   // index chan_index()
  std::vector<WorkerReport> workers;                  // one per worker thread of a round
  std::vector<std::size_t> worker_conn;               // its connection (index into conns)
  std::vector<std::string> warnings;
  std::vector<int> allowed_cpus;                      // the process's affinity at start
  SideReport report;                                  // per-round figures as they come
  // The last timed round's sends, until the receiver confirms them (confirm_sends).
  struct Unconfirmed {
    std::uint64_t bytes = 0;
    std::int64_t first_ns = 0, last_ns = 0;
    std::vector<std::size_t> chans;  // indices into chans
  } unconfirmed;
  // Next chunk to deal, per direction and GPU slot (sockets path: chunks are dealt as
  // they go; reset before each round).
  std::vector<std::unique_ptr<std::atomic<std::uint64_t>>> next_chunks;
  std::atomic<std::uint64_t>& next_chunk(bool c2s, std::uint32_t g) { return *next_chunks[(c2s ? 0 : p.gpus.size()) + g]; }

  // This side sends data in direction c2s / s2c?
  bool sends(bool c2s) const { return c2s == is_client; }
  std::size_t chan_index(bool c2s, std::uint32_t g, std::uint32_t c) const {
    return ((c2s ? 0u : 1u) * p.gpus.size() + g) * p.channels + c;
  }
  bool dir_used(bool c2s) const;  // by the mode
  std::uint64_t seed(bool c2s, std::uint32_t g, std::uint32_t round) const;
};

// Allocates buffers and channel states, fills patterns, lets the path prepare (after
// conns are set up); sets report.setup_s, buffer_bytes and buffer_layout.
void prepare_session(Session& s);
// What a session of p costs a side, computed before anything is allocated, with
// overflow-safe arithmetic (saturating at UINT64_MAX): data links, worker threads,
// host buffer bytes (what prepare_session will allocate in host memory).
std::uint64_t link_count(const Params& p);
std::uint64_t worker_count(const Params& p, const DataPath& path, bool is_client);
std::uint64_t host_buffer_bytes(const Params& p, const DataPath& path, bool is_client);
// What the kernel spends on those buffers besides their memory: page tables (8 bytes per
// 4 KiB of address space, which a fold multiplies) and mapping records. Counted against
// --max-memory with them.
std::uint64_t host_kernel_bytes(const Params& p, const DataPath& path, bool is_client);
// What the session's bookkeeping can take on a side, at most: timing samples (capped per
// channel), per-round figures, per-chunk tracking of a round. Counts against the
// server's --max-memory with the buffers.
std::uint64_t bookkeeping_bytes(const Params& p);
// The sample cap of each channel of a session of p.
std::size_t sample_cap(const Params& p);
// A quarter of the machine's RAM: the server's default --max-memory.
std::uint64_t default_max_memory_bytes();
// Fills this side's source buffers for `round` (when verifying, each round differs).
void fill_sources(Session& s, std::uint32_t round);
// One round: the path's workers started and joined; figures added when `timed`.
// Throws RoundFailure with the first worker's failure (after every worker stopped).
void run_round(Session& s, std::uint32_t round, bool timed);
// Chunk indices carried by (channel, socket): chunk i goes to channel i % C, and the
// channel's j-th chunk to socket j % K.
// (The sockets path deals chunks dynamically instead; the plugin path, whose receiver
// must post each receive's size ahead, keeps this static deal.)
std::vector<std::uint64_t> chunks_of(const Params& p, std::uint32_t channel, std::uint32_t socket);
inline std::uint64_t chunk_count(const Params& p) { return (p.size_bytes + p.chunk_bytes - 1) / p.chunk_bytes; }
// The receiver confirmed the last timed round at t_ns: where the path's sends complete
// locally, that round's sends end then (its rate and its channels' times).
void confirm_sends(Session& s, std::int64_t t_ns);
// Builds s.report (channels, workers, totals) after the last round.
void finish_report(Session& s);

}  // namespace p2pscope::session
