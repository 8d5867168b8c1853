#pragma once
// Options shared by `bench tcp` and `sweep tcp`: raw strings from CLI11, turned into
// tcp::Params / LocalOptions with clear errors (UsageError) after parsing.
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "p2pscope/auth.hpp"
#include "p2pscope/bindings.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "transport/tcp/sweep.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::app {

struct TcpCliOptions {
  std::string mode = "bw", mem = "host", size, chunk = "1M", gpus = "0", tx_bind, rx_bind, sockbuf = "0",
              slot_memory = "128K";
  std::vector<std::string> nics;
  std::uint32_t channels = 1, sockets = 1, window = 4, iters = 5, warmup = 1;
  double timeout_s = 10;
  bool verify = false, reverse = false, no_nodelay = false;

  void add_engine_options(CLI::App& c, bool with_grid_knobs = true) {
    c.add_option("--mode", mode, "bw (one way), bidir (both ways), latency (ping-pong), fullmesh")
        ->capture_default_str();
    if (with_grid_knobs) {
      c.add_option("--channels", channels, "channels per GPU pair, spread round-robin over --nics")->capture_default_str();
      c.add_option("--sockets-per-channel", sockets, "TCP connections per channel")->capture_default_str();
      c.add_option("--window", window, "chunks in flight per channel")->capture_default_str();
      c.add_option("--chunk", chunk, "chunk size (K/M/G = 1024 multiples)")->capture_default_str();
    }
    c.add_option("--size", size, "bytes per GPU pair per round (default 64M; latency: message size, default 8)");
    c.add_option("--iters", iters, "timed rounds (latency: pings)")->capture_default_str();
    c.add_option("--warmup", warmup, "untimed rounds (latency: pings) first")->capture_default_str();
    c.add_option("--gpus", gpus, "GPU list, e.g. 0-7: GPU i pairs with the peer's GPU i")->capture_default_str();
    c.add_option("--mem", mem, "host (on the NIC's NUMA node) or gpu (staged through pinned buffers)")
        ->capture_default_str();
    c.add_option("--nics", nics, "local NICs (names or IPv4 addresses), comma-separated")->delimiter(',');
    c.add_option("--tx-bind", tx_bind, "TX worker CPUs per NIC, 'eth1:8-21,112-125;eth2:...' "
                                       "(default: $NCCL_GPUDIRECTTCPX_TX_BINDINGS)");
    c.add_option("--rx-bind", rx_bind, "RX worker CPUs per NIC (default: $NCCL_GPUDIRECTTCPX_RX_BINDINGS)");
    c.add_option("--timeout", timeout_s, "seconds any step may block before the run fails")->capture_default_str();
    c.add_option("--sockbuf", sockbuf, "SO_SNDBUF/SO_RCVBUF request (0: kernel autotuning, the default)")->capture_default_str();
    c.add_option("--slot-memory", slot_memory,
                 "host memory behind each chunk slot when no byte is checked (no --verify): a chunk is sent "
                 "from and received into this much, reused, as iperf3 reuses its 128K buffer; 0: a whole "
                 "chunk of memory per slot (what DRAM feeds, not only the transport)")
        ->capture_default_str();
    c.add_flag("--verify", verify, "check every received byte against the sender's pattern");
    c.add_flag("--reverse", reverse, "bw/fullmesh: the server sends, the client receives");
    c.add_flag("--no-nodelay", no_nodelay, "leave Nagle's algorithm on (TCP_NODELAY off)");
  }

  tcp::Params params() const {
    tcp::Params p;
    p.mode = tcp::parse_mode(mode);
    if (mem != "host" && mem != "gpu") throw UsageError("--mem '" + mem + "': expected host or gpu");
    p.mem = mem == "gpu" ? tcp::MemKind::gpu : tcp::MemKind::host;
    p.channels = channels;
    p.sockets_per_channel = sockets;
    p.window = window;
    p.size_bytes = size.empty() ? (p.mode == tcp::Mode::latency ? 8 : 64ull << 20) : parse_size(size);
    p.chunk_bytes = parse_size(chunk);
    p.iters = iters;
    p.warmup = warmup;
    p.gpus = parse_cpulist(gpus);
    if (p.mode == tcp::Mode::latency && iters == 5) p.iters = 1000;  // a ping-pong needs many samples
    if (p.mode == tcp::Mode::latency && warmup == 1) p.warmup = 100;
    p.verify = verify;
    if (reverse && p.mode == tcp::Mode::latency)
      throw UsageError("--reverse (or -R) applies to --mode bw and fullmesh: a latency ping-pong goes both ways already");
    if (reverse && p.mode == tcp::Mode::bidir)
      throw UsageError("--reverse (or -R) applies to --mode bw and fullmesh: bidir sends both ways already");
    p.reverse = reverse;
    p.nodelay = !no_nodelay;
    const auto sb = parse_size(sockbuf);
    if (sb > (1u << 30)) throw UsageError("--sockbuf must be at most 1G");
    p.sockbuf_bytes = static_cast<std::uint32_t>(sb);
    const auto sm = parse_size(slot_memory);
    if (sm > (1u << 30) || sm % 4096 != 0)
      throw UsageError("--slot-memory " + slot_memory + ": expected a multiple of 4K up to 1G (0: a whole chunk per slot)");
    p.slot_memory_bytes = static_cast<std::uint32_t>(sm);
    p.timeout_s = timeout_s;
    tcp::validate(p);
    return p;
  }

  tcp::LocalOptions local() const {
    tcp::LocalOptions l;
    l.nics = nics;
    l.tx_bind = bindings(tx_bind, "--tx-bind", "NCCL_GPUDIRECTTCPX_TX_BINDINGS");
    l.rx_bind = bindings(rx_bind, "--rx-bind", "NCCL_GPUDIRECTTCPX_RX_BINDINGS");
    return l;
  }

  static std::vector<NicBinding> bindings(const std::string& text, const char* opt, const char* env) {
    std::string src = text, from = opt;
    if (src.empty()) {
      const char* e = std::getenv(env);
      if (!e || !*e) return {};
      src = e;
      from = std::string("$") + env;
    }
    try {
      return parse_bindings(src);
    } catch (const UsageError& e) {
      throw UsageError(from + ": " + e.what());
    }
  }
};

// One measurement as the client of servers at `hosts`, or, with no hosts, over
// loopback in this process (server and client alike use `local`).
inline tcp::Results run_as_client_or_loopback(const std::vector<std::string>& hosts, int port,
                                               const tcp::LocalOptions& local, const tcp::Params& p) {
  return tcp::run_point(hosts, static_cast<std::uint16_t>(port), local,
                        hosts.empty() ? std::nullopt : auth::load_token(), p);  // a token only for a real peer
}

}  // namespace p2pscope::app
