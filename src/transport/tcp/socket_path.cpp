// The sockets data path (bench tcp): one TCP connection per (direction, GPU, channel,
// socket), opened by the client to the servers round-robin over its NICs, each
// announced by a data hello that carries the server-chosen session id.
#include <thread>

#include "p2pscope/error.hpp"
#include "transport/session/channel.hpp"
#include "transport/session/datapath.hpp"
#include "transport/session/gate.hpp"
#include "transport/session/protocol.hpp"
#include "transport/session/worker.hpp"

namespace p2pscope::tcp {
using namespace p2pscope::session;

void configure(Socket& s, const Params& p) {
  s.set_timeout(p.timeout_s);
  s.set_nodelay(p.nodelay);
  s.set_buffers(p.sockbuf_bytes);
}

namespace {

std::string describe(const Conn& c, const Params& p) {
  return "channel " + std::to_string(c.channel) + " socket " + std::to_string(c.socket) + " of gpu " +
         std::to_string(p.gpus[c.gpu_slot]) + " (" + (c.c2s ? "c2s" : "s2c") + ") ";
}

// A data hello's field as T, or Error naming it (the bytes are the peer's).
template <class T>
T field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) throw Error(std::string("data hello without '") + key + "'");
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) throw Error(std::string("data hello field '") + key + "' is not a boolean");
  } else {
    if (!it->is_number_unsigned()) throw Error(std::string("data hello field '") + key + "' is not a count");
    if (it->get<std::uint64_t>() > 0xffffffffull) throw Error(std::string("data hello field '") + key + "' out of range");
  }
  return it->get<T>();
}

class SocketPath final : public DataPath {
 public:
  std::string name() const override { return "sockets"; }
  void check(const Params&) const override {}
  std::uint32_t threads_per_link(const Params&, bool) const override { return 1; }
  // send() has copied a chunk into the kernel when it returns and an RX thread takes one
  // chunk at a time: one slot per socket, which can stay in the core's cache (a window
  // of slots per socket was 2 x 64 MiB at 16 channels; iperf3 reuses one 128 KiB buffer).
  std::uint64_t ring_slots(const Params&) const override { return 1; }
  void prepare(Session&) override {}

  void open_client(Session& s, Socket&, const ClientOptions& o, const std::string& session_id) override {
    const Params& p = s.p;
    std::vector<NicAddr> nics;
    for (const auto& n : o.local.nics) nics.push_back(resolve_nic(n));
    for (bool c2s : {true, false}) {
      if (!s.dir_used(c2s)) continue;
      for (std::uint32_t g = 0; g < p.gpus.size(); ++g)
        for (std::uint32_t c = 0; c < p.channels; ++c)
          for (std::uint32_t k = 0; k < p.sockets_per_channel; ++k) {
            const std::size_t gc = g * p.channels + c;
            auto conn = std::make_unique<Conn>();
            conn->c2s = c2s;
            conn->gpu_slot = g;
            conn->channel = c;
            conn->socket = k;
            if (!nics.empty()) conn->nic = nics[gc % nics.size()];
            conn->sock = Socket::connect_to(o.hosts[gc % o.hosts.size()], o.port, conn->nic.ipv4, p.timeout_s);
            configure(conn->sock, p);
            if (nics.empty()) conn->nic = {nic_name_of(conn->sock.local_ip()), conn->sock.local_ip()};
            conn->sock.set_label(describe(*conn, p) + conn->sock.local_addr() + " -> " + conn->sock.peer_addr());
            send_frame(conn->sock, FrameType::data_hello,
                       {{"session", session_id}, {"c2s", c2s}, {"gpu_slot", g}, {"channel", c}, {"socket", k}});
            s.conns.push_back(std::move(conn));
          }
    }
  }

  void open_server(Session& s, Socket&, Gate& gate, const std::string&) override {
    const Params& p = s.p;
    const std::uint64_t per_dir = std::uint64_t{p.gpus.size()} * p.channels * p.sockets_per_channel;  // limits checked
    const std::uint64_t total = link_count(p);
    std::vector<std::unique_ptr<Conn>> slots(2 * per_dir);
    for (std::uint64_t n = 0; n < total; ++n) {
      DataHello d = gate.next_data(p.timeout_s);
      Socket sock = std::move(d.sock);
      const std::string from = sock.peer_addr();
      auto conn = std::make_unique<Conn>();
      try {
        conn->c2s = field<bool>(d.body, "c2s");
        conn->gpu_slot = field<std::uint32_t>(d.body, "gpu_slot");
        conn->channel = field<std::uint32_t>(d.body, "channel");
        conn->socket = field<std::uint32_t>(d.body, "socket");
        if (conn->gpu_slot >= p.gpus.size() || conn->channel >= p.channels ||
            conn->socket >= p.sockets_per_channel || !s.dir_used(conn->c2s))
          throw Error("it names a channel outside the session");
      } catch (const Error& e) {
        send_frame(sock, FrameType::reject, {{"reason", e.what()}});
        throw Error("data connection from " + from + " refused: " + e.what());
      }
      const std::uint64_t idx = (conn->c2s ? 0 : per_dir) +
                                (std::uint64_t{conn->gpu_slot} * p.channels + conn->channel) * p.sockets_per_channel +
                                conn->socket;
      if (slots[idx]) throw Error("data connection from " + from + " duplicates a channel");
      configure(sock, p);
      conn->nic = {nic_name_of(sock.local_ip()), sock.local_ip()};
      sock.set_label(describe(*conn, p) + sock.local_addr() + " <- " + from);
      conn->sock = std::move(sock);
      slots[idx] = std::move(conn);
    }
    for (auto& c : slots)
      if (c) s.conns.push_back(std::move(c));
  }

  void run_workers(Session& s, std::uint32_t round, bool timed) override {
    RoundCtl ctl;
    for (auto& c : s.conns) ctl.socks.push_back(&c->sock);  // a failure shuts them all: every worker stops
    const bool latency = s.p.mode == Mode::latency;
    run_worker_threads(s, round, timed, ctl, [latency](const WorkerReport& w) -> WorkerFn {
      if (latency) return w.role == "tx" ? ping_worker : pong_worker;
      return w.role == "tx" ? tx_worker : rx_worker;
    });
  }
};

}  // namespace

std::shared_ptr<DataPath> make_socket_path() { return std::make_shared<SocketPath>(); }

}  // namespace p2pscope::tcp
