#pragma once
// The multi-channel, multi-NIC TCP transfer engine (p2pscope bench tcp).
//
// A client and a server agree on Params in a handshake, then move --size bytes per
// GPU pair, cut into chunks dealt round-robin to channels; each channel has
// sockets_per_channel TCP connections and at most `window` unacknowledged chunks.
// Every socket has a TX worker thread on the sending side (and an ack reader) and an
// RX worker on the receiving side, pinned by per-NIC binding strings.
//
// Threads: run_client / Server::serve_one block the caller and start their own
// worker threads; all are joined before they return. Errors: UsageError for bad
// parameters, Error for run-time failures (peer gone, timeout, verify mismatch).
// Units: bytes, nanoseconds, bytes per second (GB/s = 1e9 B/s in reports).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "p2pscope/bindings.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::tcp {

inline constexpr std::uint32_t kProtocolMagic = 0x50325453;  // "P2TS"
// 2: challenge-response, server-chosen session ids; 3: core data pattern (SplitMix64
// stream), so --verify agrees only between peers of one pattern; 4: a last go after the
// last round (it confirms the round's bytes to the server); 5: net_addresses in params
// and accept (the addresses a bench net side vouches for), the server's under its proof,
// so a version-4 client with a token would fail the server's proof without saying why.
inline constexpr std::uint32_t kProtocolVersion = 5;

enum class Mode { bw, bidir, latency, fullmesh };
enum class MemKind { host, gpu };

std::string to_string(Mode m);
Mode parse_mode(const std::string& text);  // UsageError for unknown text

// What both sides agree on (the client proposes, the server checks and accepts).
struct Params {
  Mode mode = Mode::bw;
  MemKind mem = MemKind::host;
  std::uint32_t channels = 1;             // per GPU pair
  std::uint32_t sockets_per_channel = 1;
  std::uint32_t window = 4;               // chunks in flight per channel
  std::uint64_t size_bytes = 64ull << 20;  // per GPU pair per round
  std::uint64_t chunk_bytes = 1ull << 20;
  std::uint32_t iters = 5;                 // timed rounds (bandwidth) or pings (latency)
  std::uint32_t warmup = 1;                // untimed rounds before them
  std::vector<int> gpus{0};                // fullmesh: local GPU i pairs with peer GPU i
  bool verify = false;
  bool reverse = false;                    // bw/fullmesh: server sends, client receives
  bool nodelay = true;                     // TCP_NODELAY
  std::uint32_t sockbuf_bytes = 0;  // SO_SNDBUF/SO_RCVBUF; 0 = kernel autotuning (setting it turns autotuning off)
  // Memory behind each chunk slot of a host ring whose bytes nobody checks (bandwidth
  // modes, no --verify): a chunk goes out of and into this much, reused, as iperf3
  // reuses its 128 KiB buffer, so the figure is the transport's, not DRAM's. 0: a whole
  // chunk of memory per slot. A multiple of 4 KiB.
  std::uint32_t slot_memory_bytes = 128u << 10;
  double timeout_s = 10;                   // any blocking step longer than this fails the run
  std::string transport = "sockets";       // the data path (DataPath::name()); both sides must match
};

// Throws UsageError naming the bad parameter (channels 0, window 0, chunk > size...).
void validate(const Params& p);
nlohmann::json to_json(const Params& p);
Params params_from_json(const nlohmann::json& j);  // UsageError on bad fields

}  // namespace p2pscope::tcp
namespace p2pscope::session {
class DataPath;  // transport/session/datapath.hpp: sockets, or an NCCL net plugin
}  // namespace p2pscope::session
namespace p2pscope::tcp {
using session::DataPath;

// Local settings that are not negotiated.
struct LocalOptions {
  std::shared_ptr<DataPath> path;         // null: TCP sockets
  const std::atomic<bool>* stop = nullptr;  // set (a signal): the session ends within a chunk, rounds kept
  std::vector<std::string> nics;          // names or IPv4 addresses; channels round-robin
  std::vector<NicBinding> tx_bind, rx_bind;
  std::string fsroot = "/";               // for NIC NUMA nodes
  // bench net: told why when a plugin call hangs past the timeout (or a second past
  // *stop); must end the process. Empty: the reason on stderr, then abort.
  std::function<void(const std::string&)> on_hung_call;
};

// What a server allows a client, whatever the client asks: a hello from anyone on the
// network must not make it allocate, spawn or wait without bound.
struct ServerLimits {
  std::uint64_t max_memory_bytes = 0;  // host data buffers of one session; 0 = a quarter of RAM
  std::uint32_t max_connections = 1024;
  std::uint32_t max_threads = 1024;    // worker threads of one session
  double min_timeout_s = 1, max_timeout_s = 120;  // the client's --timeout is clamped into this
  double hello_timeout_s = 5;          // a new connection's whole handshake
  std::uint32_t max_pending = 64;      // connections handshaking at once
};

struct ServerOptions {
  std::vector<std::string> bind_addrs{"0.0.0.0"};  // one listener per address
  std::uint16_t port = 18515;                       // 0 = ephemeral (see Server::port())
  LocalOptions local;
  double accept_timeout_s = 0;                      // 0 = wait forever for a client
  ServerLimits limits;
  std::optional<std::string> token;                 // shared secret (P2PSCOPE_TOKEN); none = anyone
  std::function<void(const std::string&)> log;      // refusals and failed handshakes (may be empty)
};

struct ClientOptions {
  std::vector<std::string> hosts{"127.0.0.1"};  // channel c connects to hosts[c % n]
  std::uint16_t port = 18515;
  LocalOptions local;
  std::optional<std::string> token;             // shared secret (P2PSCOPE_TOKEN)
};

struct WorkerReport {
  std::string role;  // "tx" (sends data, reads its acks), "rx" (receives data, sends acks)
  std::string dir;   // "c2s" / "s2c"
  int gpu = 0, channel = 0, socket = 0;
  std::string nic;
  std::vector<int> expected_cpus, actual_cpus;  // expected empty = not bound
  bool mismatch = false;
  double cpu_time_s = 0;   // summed over rounds
  double wall_time_s = 0;  // time the thread ran its rounds: cpu / wall near 1 = CPU-bound
  double runqueue_wait_s = 0;  // runnable but waiting for a CPU (the machine's other load)
  std::uint64_t syscalls = 0;  // data-path send/recv calls (cost per chunk = syscalls / chunks)
  std::uint64_t voluntary_switches = 0, involuntary_switches = 0;  // getrusage(RUSAGE_THREAD)
};

struct ChannelReport {
  std::string dir;  // data direction "c2s" / "s2c"
  bool sent = false;  // this side sent (true) or received (false) the data
  int gpu = 0, channel = 0;
  std::string nic, local_addr, peer_addr;
  std::uint64_t bytes = 0;        // timed rounds only
  double elapsed_s = 0;           // sum over timed rounds of this channel's active time
  double bytes_per_s = 0;
  double chunk_lat_p50_ns = 0, chunk_lat_p99_ns = 0;  // sender: send start -> ack
  double window_mean = 0;         // sender: chunks in flight when each chunk was sent
  std::uint32_t window_max = 0;
  std::uint64_t retransmits = 0;  // TCP_INFO tcpi_total_retrans over the channel's sockets
  // bench net: how this side registered the channel's buffer with the plugin: "dmabuf"
  // (regMrDmaBuf of a dma-buf fd), "cuda" or "host" (regMr); "" for sockets.
  std::string registration;
};

struct SideReport {
  std::string side;  // "client" / "server"
  std::string hostname;
  std::vector<ChannelReport> channels;
  std::vector<WorkerReport> workers;
  std::vector<double> round_tx_bytes_per_s, round_rx_bytes_per_s;  // per timed round
  double tx_bytes_per_s = 0, rx_bytes_per_s = 0;  // median over rounds
  std::vector<double> latency_ns;                  // latency mode: round-trip samples / 2
  std::uint64_t verified_bytes = 0;
  std::vector<std::string> warnings;
  std::vector<std::string> buffer_numa;            // "gpu0 src: numa 0" notes
  // Set-up cost: data buffers allocated, placed and filled before the first round.
  double setup_s = 0;
  std::uint64_t buffer_bytes = 0;  // data buffers of this side, all GPU slots
  std::string buffer_layout;       // e.g. "ring of 4 x 1 MiB per socket", "whole message (--verify source)"
  double rounds_s = 0;             // wall time of every round, warm-up included
};

struct Results {
  Params params;
  SideReport client, server;
  // A session that failed after rounds were measured keeps them: the figures above
  // cover rounds_completed timed rounds, failure says what ended it.
  std::string failure;        // empty: the session completed
  std::string failure_cause;  // "peer closed the connection", "timed out", "link down"...
  std::uint32_t rounds_completed = 0;
};

// CPU-bound or not: the busiest worker thread's CPU time over its wall time.
inline constexpr double kCpuBoundBusy = 0.9;
inline constexpr double kStarvedWait = 0.2;  // a fifth of the time runnable without a CPU
struct Boundedness {
  std::string verdict;  // "cpu", "starved" (waited for a CPU), "link" or "unknown"
  std::string busiest_worker, text;
  double busiest = 0;   // CPU time / wall time of the busiest worker
  double starved = 0;   // run-queue wait / wall time of the most starved worker
};
Boundedness boundedness(const Results& r);

nlohmann::json to_json(const SideReport& s);
nlohmann::json to_json(const Results& r);
SideReport side_from_json(const nlohmann::json& j);
// The figures for every printer (report_tables.cpp): text shows the tables per channel,
// per NIC and the totals (or the latency table), the workers and the notes; CSV stacks the
// figure tables into one, a "table" column naming each row's; JSON is to_json(r) (the
// command puts its metadata around it). The Report refers to `r`: print it while r lives.
out::Report report(const Results& r);
// The report as text.
std::string format_text(const Results& r);

// Runs the client side against a server; returns both sides' figures. A session that
// fails after its set-up returns what was measured with Results::failure set (the
// server's figures too when it could still send them); failures before throw Error.
Results run_client(const ClientOptions& opts, const Params& params);

// No client came: Server::serve_one waited accept_timeout_s, or stop() was called,
// before a session began (a server's normal end, not a failed session).
class NoClient : public Error {
 public:
  using Error::Error;
};

// A client whose parameters the server refused (over its limits, malformed, another
// data path): told why; the server's session count is not used up by it.
class Refused : public Error {
 public:
  using Error::Error;
};

// A server: listens in the constructor (so port() is known), serves sessions.
class Server {
 public:
  explicit Server(const ServerOptions& opts);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  std::uint16_t port() const;
  // Accepts one client, runs its session, returns what both sides measured (with
  // Results::failure set when rounds were measured before it failed). Connections
  // that never complete a handshake (probes, other protocols, a wrong secret, a second
  // client while one is served) are refused and logged without ending the wait.
  // A client whose parameters are refused, or any other failure before its rounds,
  // throws Error; NoClient when no client came in time or stop() was called.
  Results serve_one();
  // Closes the listeners so a serve_one blocked in accept returns; thread-safe.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Server and client in this process over 127.0.0.1 (the profile job's entry point).
Results run_loopback(const Params& params, const LocalOptions& client_local = {},
                     const LocalOptions& server_local = {});

// A heatmap as a self-contained SVG: rows x columns of values (NaN = no data), cells
// coloured from white (lowest) to dark blue (highest) and labelled with the value.
std::string heatmap_svg(const std::string& title, const std::string& row_name, const std::vector<std::string>& rows,
                        const std::string& col_name, const std::vector<std::string>& cols,
                        const std::vector<std::vector<double>>& values, const std::string& unit);

}  // namespace p2pscope::tcp
