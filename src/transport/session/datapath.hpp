#pragma once
// How a session's bytes move. The session (session.cpp: handshake, limits, rounds,
// results, failures) is the same for every data path, as gloo's pair is the same over
// its transports; a DataPath opens the session's links, runs one round's workers on
// them and says what it is. Two exist: TCP sockets (bench tcp, socket_path.cpp) and
// an NCCL net plugin (bench net, src/transport/netpath/plugin_path.cpp).
//
// A DataPath holds no session state (that lives in Session): one object may serve a
// client and a server session at once (--loopback), from two threads.
#include <memory>
#include <string>
#include <vector>

#include "p2pscope/tcp.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope::session {
using namespace p2pscope::tcp;  // the engine's public types (Params, reports) and its sockets

struct Session;
class Gate;

// A round failed: the first worker's failure, after every worker stopped.
class RoundFailure : public Error {
 public:
  RoundFailure(const std::string& what, IoCause cause, std::string nic)
      : Error(what), cause_(cause), nic_(std::move(nic)) {}
  IoCause cause() const { return cause_; }
  const std::string& nic() const { return nic_; }  // of the failing link, "" unknown

 private:
  IoCause cause_;
  std::string nic_;
};

class DataPath {
 public:
  virtual ~DataPath() = default;
  // Negotiated in the handshake: both sides must move data the same way.
  virtual std::string name() const = 0;  // "sockets", "net plugin p2pscope v11"
  // UsageError when this path cannot run p (a memory kind it does not offer...).
  virtual void check(const Params& p) const = 0;
  // Client, after the server accepted: opens every link of s (s.conns).
  virtual void open_client(Session& s, Socket& ctrl, const ClientOptions& o, const std::string& session_id) = 0;
  // Server: the counterpart; socket connections arrive through the gate.
  virtual void open_server(Session& s, Socket& ctrl, Gate& gate, const std::string& session_id) = 0;
  // After the buffers exist (prepare_session): registers them, posts what must be
  // posted before the first round. Sockets need nothing.
  virtual void prepare(Session& s) = 0;
  // Runs this side's workers for one round and joins them; marks s.chans. Throws
  // RoundFailure with the first cause after stopping every worker.
  virtual void run_workers(Session& s, std::uint32_t round, bool timed) = 0;
  // Host-memory rings: chunk slots a link needs at once. A sender's buffer may be read
  // until its send completes, so up to the window by default; sockets copy in send().
  virtual std::uint64_t ring_slots(const Params& p) const { return p.window; }
  // The source ring's slots (host memory, no --verify): ring_slots unless sends in
  // flight may read one slot at once (a plugin's isend only reads its buffer).
  virtual std::uint64_t src_ring_slots(const Params& p) const { return ring_slots(p); }
  // Workers this side runs per link (for the server's thread limit).
  virtual std::uint32_t threads_per_link(const Params& p, bool sends) const = 0;
  // Server, its figures sent: keep the links open until the client closes the control
  // connection (bounded by the timeout), so no client receive sees this side close.
  virtual bool linger_until_client_closes() const { return false; }
  // A send completes when the path has the bytes (a plugin's isend), not when the peer
  // has them: the round's sends then end when the receiver confirms the round (its
  // "done", or the client's next "go"), or a 4 MB/s link read 3.8 GB/s (issue 32 item 13).
  virtual bool sends_complete_locally() const { return false; }
  // The IPv4 addresses this side's links listen on (a plugin's devices), which it vouches
  // for to its peer in an authenticated frame: a peer's handle may name only those and the
  // control connection's address (issue 43 item 3). Sockets: none (links dial the server).
  virtual std::vector<std::string> own_addresses() const { return {}; }
};

}  // namespace p2pscope::session
namespace p2pscope::tcp {
using session::DataPath;
std::shared_ptr<DataPath> make_socket_path();
// The run's socket options (timeout, TCP_NODELAY, buffer sizes) on a control or data
// connection: both sides set them the same way on every socket they open or accept.
void configure(Socket& s, const Params& p);

}  // namespace p2pscope::tcp
namespace p2pscope::net {
class Plugin;
}
namespace p2pscope::tcp {
// How the plugin path registers CUDA buffers (bench net --dmabuf). auto: regMrDmaBuf
// with a dma-buf of the buffer where the link's plugin device offers NCCL_PTR_DMABUF
// and the GPU can export one, else regMr; on: regMrDmaBuf or a UsageError saying which
// of plugin, GPU or memory kind cannot; off: regMr. Each side decides for itself.
enum class DmabufMode { auto_, on, off };
DmabufMode parse_dmabuf_mode(const std::string& text);  // UsageError for other text
std::string to_string(DmabufMode m);
// One loaded plugin serves every session of the process (and both sides of --loopback).
// Link (GPU g, channel c) goes over the (g x channels + c)-th of `devices` in turn, or of
// every plugin device when it is empty (the survey gives one rail's device; UsageError
// for an index the plugin does not have).
std::shared_ptr<DataPath> make_plugin_path(std::shared_ptr<net::Plugin> plugin, DmabufMode dmabuf = DmabufMode::auto_,
                                           std::vector<int> devices = {});

}  // namespace p2pscope::tcp
