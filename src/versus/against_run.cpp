// The three runs of --against-nccl: see against_run.hpp.
#include "versus/against_run.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::versus {
namespace {

// "TX on CPUs 0-3 (pinned, checked at run time)": the sending side's workers, as each
// read its own affinity while it ran.
std::string tx_cpus(const tcp::SideReport& sender) {
  std::set<int> actual;
  bool bound = false, mismatch = false;
  for (const auto& w : sender.workers) {
    if (w.role != "tx") continue;
    actual.insert(w.actual_cpus.begin(), w.actual_cpus.end());
    bound = bound || !w.expected_cpus.empty();
    mismatch = mismatch || w.mismatch;
  }
  if (actual.empty()) return {};
  const std::string cpus = format_cpulist({actual.begin(), actual.end()});
  if (!bound) return "TX workers unpinned, on CPUs " + cpus + " (--tx-bind pins them)";
  return "TX workers pinned to CPUs " + cpus + (mismatch ? " (some NOT where asked: see the workers table)"
                                                        : " (checked at run time)");
}

std::string memory_path(const tcp::Results& r, const tcp::SideReport& sender) {
  if (r.params.mem == tcp::MemKind::host) return "host memory at both ends: no GPU in the path";
  std::string reg;
  for (const auto& c : sender.channels)
    if (!c.registration.empty()) reg = c.registration;
  if (reg == "dmabuf") return "GPU direct: the plugin reads GPU memory (dma-buf registration)";
  if (reg == "cuda") return "GPU direct: GPU buffers registered with the plugin (regMr, CUDA)";
  if (reg == "host") return "GPU, staged through host buffers registered with the plugin";
  return "GPU, staged through pinned host buffers (cudaMemcpy per chunk)";
}

// The engine again at NCCL's shape; nullopt where the log did not tell the shape.
std::optional<tcp::Params> nccl_shaped_params(const tcp::Params& user, const PathShape& n, bool sockets) {
  if (n.channels <= 0) return std::nullopt;
  tcp::Params p = user;
  p.channels = static_cast<std::uint32_t>(n.channels);
  p.sockets_per_channel = sockets && n.sockets_per_channel > 0 ? static_cast<std::uint32_t>(n.sockets_per_channel) : 1;
  if (n.chunk_bytes > 0 && n.chunk_bytes <= p.size_bytes) p.chunk_bytes = n.chunk_bytes;
  if (n.window > 0) p.window = static_cast<std::uint32_t>(n.window);
  if (p.slot_memory_bytes > p.chunk_bytes) p.slot_memory_bytes = 0;  // a whole chunk per slot
  try {
    tcp::validate(p);
  } catch (const UsageError&) {
    return std::nullopt;  // a shape the engine cannot take: no third run, and the verdict says so
  }
  return p;
}

std::optional<tcp::Results> run_engine(const tcp::Params& p, const tcp::LocalOptions& local, const char* which,
                                       AgainstRun& run) {
  try {
    tcp::Results r = tcp::run_loopback(p, local, local);
    if (!r.failure.empty()) run.errors.push_back(fmt::format("{}: {}", which, r.failure));
    return r;
  } catch (const std::exception& e) {
    run.errors.push_back(fmt::format("{}: {}", which, e.what()));
    return std::nullopt;
  }
}

bool stopped(const AgainstSpec& s) { return s.local.stop && s.local.stop->load(); }

}  // namespace

PathShape engine_shape(const tcp::Results& r, const std::string& transport, const std::string& who) {
  PathShape s;
  s.who = who;
  s.transport = transport;
  const bool server_sends = r.params.reverse;
  const tcp::SideReport& sender = server_sends ? r.server : r.client;
  const tcp::SideReport& receiver = server_sends ? r.client : r.server;
  s.channels = static_cast<int>(r.params.channels * r.params.gpus.size());
  s.sockets_per_channel = static_cast<int>(r.params.sockets_per_channel);
  s.threads_per_channel = s.sockets_per_channel;  // one TX worker per socket (and its ack reader)
  std::set<std::string> nics;
  for (const auto& c : sender.channels)
    if (!c.nic.empty() && nics.insert(c.nic).second) s.nics.push_back(c.nic);
  s.cpus = tx_cpus(sender);
  s.chunk_bytes = r.params.chunk_bytes;
  s.window = static_cast<int>(r.params.window);
  s.memory = memory_path(r, sender);
  s.bytes_per_s = receiver.rx_bytes_per_s;
  const auto& rounds = receiver.round_rx_bytes_per_s;
  if (rounds.size() > 1) {
    s.lo_bytes_per_s = *std::min_element(rounds.begin(), rounds.end());
    s.hi_bytes_per_s = *std::max_element(rounds.begin(), rounds.end());
  }
  s.measured = fmt::format("{} round{} of {}, the receiver's rate, median [slowest, fastest round]", rounds.size(),
                           rounds.size() == 1 ? "" : "s", format_size(r.params.size_bytes));
  return s;
}

AgainstRun run_against_nccl(AgainstSpec spec) {
  AgainstRun run;
  auto say = [&](const std::string& line) {
    if (spec.progress) spec.progress(line);
  };
  spec.nccl.size_bytes = spec.params.size_bytes;
  spec.nccl.iters = static_cast<int>(spec.params.iters);
  spec.nccl.warmup = static_cast<int>(std::max<std::uint32_t>(spec.params.warmup, 1));
  spec.nccl.stop = spec.local.stop;
  say(fmt::format("1 of 3: NCCL send/recv, 2 ranks, {} x {} ...", spec.nccl.iters, format_size(spec.nccl.size_bytes)));
  run.nccl = run_nccl_pair(spec.nccl);
  if (!run.nccl.error.empty()) run.errors.push_back("NCCL send/recv: " + run.nccl.error);
  PathShape nccl = nccl_shape_from_log(run.nccl.log, 0, 1, spec.nccl.env);
  nccl.bytes_per_s = run.nccl.bytes_per_s;
  nccl.lo_bytes_per_s = run.nccl.lo_bytes_per_s;
  nccl.hi_bytes_per_s = run.nccl.hi_bytes_per_s;
  if (run.nccl.bytes_per_s > 0)
    nccl.measured = fmt::format("{} iterations of {}, GPU events, median [p95, p5 times]", run.nccl.iters,
                                format_size(spec.nccl.size_bytes));
  PathShape engine;
  if (!stopped(spec)) {
    say("2 of 3: the engine at these settings ...");
    run.engine = run_engine(spec.params, spec.local, "the engine", run);
    if (run.engine) engine = engine_shape(*run.engine, spec.transport, "p2pscope engine");
  }
  std::optional<PathShape> shaped;
  const auto shaped_params = nccl_shaped_params(spec.params, nccl, spec.transport == "sockets");
  if (!stopped(spec) && shaped_params) {
    say("3 of 3: the engine at NCCL's shape ...");
    run.shaped = run_engine(*shaped_params, spec.local, "the engine at NCCL's shape", run);
    if (run.shaped) shaped = engine_shape(*run.shaped, spec.transport, "engine at NCCL's shape");
  }
  engine.who = "p2pscope engine";
  run.comparison = compare_with_nccl(engine, nccl, shaped);
  return run;
}

}  // namespace p2pscope::versus
