#include "transport/session/channel.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <thread>
#include <utility>

#include "p2pscope/affinity.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/units.hpp"
#include "transport/session/datapath.hpp"

namespace p2pscope::session {

void ChannelState::mark(std::int64_t first, std::int64_t last) {
  std::lock_guard lk(mu);
  if (round_first_ns == 0 || first < round_first_ns) round_first_ns = first;
  round_last_ns = std::max(round_last_ns, last);
}

void ChannelState::note_post(std::int64_t t_ns, std::uint32_t occ, bool timed, std::uint64_t bytes) {
  std::lock_guard lk(mu);
  if (timed) {
    occ_sum += occ;
    ++occ_n;
    occ_max = std::max(occ_max, occ);
  }
  if (round_first_ns == 0 || t_ns < round_first_ns) round_first_ns = t_ns;
  round_bytes += bytes;
}

namespace {
bool dir_used(const Params& p, bool c2s);
}
bool Session::dir_used(bool c2s) const { return session::dir_used(p, c2s); }

std::uint64_t Session::seed(bool c2s, std::uint32_t g, std::uint32_t round) const {
  // Rounds differ only when verifying, so stale data from an earlier round is caught.
  const std::uint64_t r = p.verify ? round : 0;
  return 0x5eedull ^ (static_cast<std::uint64_t>(c2s) << 40) ^ (static_cast<std::uint64_t>(p.gpus[g]) << 20) ^ (r << 1);
}

Layout Layout::ring_if_smaller(const Params& p, std::uint64_t slots) {
  const std::uint64_t chunks = (p.size_bytes + p.chunk_bytes - 1) / p.chunk_bytes;
  const std::uint64_t per_channel = (chunks + p.channels - 1) / p.channels;
  const std::uint64_t per_socket = (per_channel + p.sockets_per_channel - 1) / p.sockets_per_channel;
  Layout l;
  l.ring = true;
  l.slots = std::max<std::uint64_t>(1, std::min<std::uint64_t>({slots, p.window, per_socket}));
  if (l.bytes(p) >= p.size_bytes) return {};
  return l;
}

namespace {

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? ~std::uint64_t{0} : r;
}
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return a + b < a ? ~std::uint64_t{0} : a + b; }

bool dir_used(const Params& p, bool c2s) {
  switch (p.mode) {
    case Mode::bidir: return true;
    case Mode::latency: return c2s;
    default: return c2s != p.reverse;
  }
}

struct BufferPlan {
  Layout src, dst;
  std::uint64_t src_bytes = 0, dst_bytes = 0;  // per GPU slot, as addressed
  // Memory behind each socket's ring when it is folded (Buffer::host_folded), else 0; and
  // why a fold that was asked for could not be made.
  std::uint64_t src_piece = 0, dst_piece = 0;
  std::string fold_note;
};

// A fold of more mappings than this (per buffer kind, all GPU slots together: a peer
// chooses the sizes) is not made: each repeat is one mapping of the process, and
// vm.max_map_count (65530 by default) bounds everything the process maps, thread
// stacks and malloc's large blocks included.
constexpr std::uint64_t kMaxFoldMappings = 8192;
// Nor a fold of more address space than this (per buffer kind, all GPU slots): its
// memory is a piece per socket, but every 4 KiB of it costs a page-table entry and a
// fault when it is prefaulted. A peer's 1 GiB chunks folded onto 1 GiB less a page
// mapped 164 GB: 328 MB of page tables, 125 s of set-up, none of it counted (issue 43
// item 8). 16 GiB is 32 MiB of page tables and 8-10 s of set-up (measured at the limit
// on a loaded 2-core machine); a legitimate fold (64 sockets of 64 MiB slots) stays under it.
constexpr std::uint64_t kMaxFoldAddressBytes = 16ull << 30;

// The mappings a fold of `bytes` (one GPU slot's buffer) onto `piece`-byte pieces takes,
// over all GPU slots: each chunk slot is ceil(chunk / piece) repeats.
std::uint64_t fold_mappings(const Params& p, std::uint64_t bytes, std::uint64_t piece) {
  return sat_mul(sat_mul(bytes / p.chunk_bytes, (p.chunk_bytes + piece - 1) / piece), p.gpus.size());
}

// The memory behind each socket's slots of ring `l` (p.slot_memory_bytes: one piece per
// socket, whatever its window, as iperf3 has one buffer per connection), or 0 for whole
// chunks: only where no byte of it is checked, and where the slots can be page-mapped.
std::uint64_t fold_piece(const Params& p, const Layout& l, std::uint64_t bytes, std::string& note) {
  const std::uint64_t piece = p.slot_memory_bytes;
  if (!l.ring || p.verify || piece == 0 || piece >= p.chunk_bytes || bytes == 0) return 0;
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGE_SIZE));
  if (p.chunk_bytes % page != 0 || piece % page != 0) {
    note = "each slot is a whole chunk of memory: --chunk " + format_size(p.chunk_bytes) + " and --slot-memory " +
           format_size(piece) + " must be multiples of the " + format_size(page) + " page to fold";
    return 0;
  }
  const std::uint64_t maps = fold_mappings(p, bytes, piece);
  if (maps > kMaxFoldMappings) {
    note = "each slot is a whole chunk of memory: folding would take " + std::to_string(maps) +
           " mappings (limit " + std::to_string(kMaxFoldMappings) + "); a larger --slot-memory takes fewer";
    return 0;
  }
  if (sat_mul(bytes, p.gpus.size()) > kMaxFoldAddressBytes) {
    note = "each slot is a whole chunk of memory: folding would map " + format_size(sat_mul(bytes, p.gpus.size())) +
           " of address space (limit " + format_size(kMaxFoldAddressBytes) +
           ": page tables and set-up time grow with it); a smaller --chunk x --window maps less";
    return 0;
  }
  return piece;
}

// What the kernel spends on a host buffer of `bytes` of address space besides its memory:
// an 8-byte page-table entry per 4 KiB page (x86-64 and arm64 alike; the upper levels add
// 1/512 of that), and a mapping record (vm_area_struct, about 200 bytes) per mapping.
std::uint64_t kernel_bytes_of(std::uint64_t bytes, std::uint64_t maps) {
  constexpr std::uint64_t kPage = 4096, kEntry = 8, kMappingRecord = 256;
  const std::uint64_t entries = bytes / kPage + (bytes % kPage != 0);
  return sat_add(sat_add(sat_mul(entries, kEntry), sat_mul(entries / 512 + 1, kEntry)), sat_mul(maps, kMappingRecord));
}

// Host memory in bandwidth modes needs real memory only for the chunks in flight: a
// ring (whole-message buffers cost 10 ms per MiB in page faults and memset). --verify
// keeps a whole source, its pattern filled before the round; received chunks are
// checked one by one, so the destination is a ring either way. Latency mode sends
// whole messages; GPU memory is staged chunk by chunk already.
BufferPlan plan_buffers(const Params& p, const DataPath& path, bool sends, bool receives) {
  const bool host = p.mem == MemKind::host;
  const bool bw = p.mode != Mode::latency;
  const std::uint64_t slots = path.ring_slots(p);
  BufferPlan b;
  b.dst = host && bw ? Layout::ring_if_smaller(p, slots) : Layout{};
  b.src = host && bw && !p.verify ? Layout::ring_if_smaller(p, path.src_ring_slots(p)) : Layout{};
  b.src_bytes = sends ? b.src.bytes(p) : 0;  // latency: the client pings
  b.dst_bytes = p.mode == Mode::latency || receives ? b.dst.bytes(p) : 0;
  b.src_piece = fold_piece(p, b.src, b.src_bytes, b.fold_note);
  b.dst_piece = fold_piece(p, b.dst, b.dst_bytes, b.fold_note);
  return b;
}

// The memory a buffer of `bytes` in ring `l` takes: a piece per socket when folded.
std::uint64_t memory_of(std::uint64_t bytes, std::uint64_t piece, const Layout& l, const Params& p) {
  return piece == 0 ? bytes : bytes / p.chunk_bytes / l.slots * piece;
}

}  // namespace

std::uint64_t Layout::bytes(const Params& p) const {
  return ring ? sat_mul(sat_mul(sat_mul(p.channels, p.sockets_per_channel), slots), p.chunk_bytes) : p.size_bytes;
}

std::vector<std::uint64_t> chunks_of(const Params& p, std::uint32_t channel, std::uint32_t socket) {
  std::vector<std::uint64_t> out;
  const std::uint64_t n = (p.size_bytes + p.chunk_bytes - 1) / p.chunk_bytes;
  std::uint64_t j = 0;  // index within the channel
  for (std::uint64_t i = channel; i < n; i += p.channels, ++j)
    if (j % p.sockets_per_channel == socket) out.push_back(i);
  return out;
}

std::uint64_t link_count(const Params& p) {
  const std::uint64_t dirs = p.mode == Mode::bidir ? 2 : 1;
  return sat_mul(sat_mul(sat_mul(dirs, p.gpus.size()), p.channels), p.sockets_per_channel);
}

std::uint64_t worker_count(const Params& p, const DataPath& path, bool is_client) {
  std::uint64_t n = 0;
  for (bool c2s : {true, false}) {
    if (!dir_used(p, c2s)) continue;
    const std::uint64_t links = sat_mul(sat_mul(p.gpus.size(), p.channels), p.sockets_per_channel);
    n = sat_add(n, sat_mul(links, path.threads_per_link(p, c2s == is_client)));
  }
  return n;
}

std::uint64_t host_buffer_bytes(const Params& p, const DataPath& path, bool is_client) {
  if (p.mem != MemKind::host) return 0;
  const BufferPlan b = plan_buffers(p, path, dir_used(p, is_client), dir_used(p, !is_client));
  return sat_mul(sat_add(memory_of(b.src_bytes, b.src_piece, b.src, p), memory_of(b.dst_bytes, b.dst_piece, b.dst, p)),
                 p.gpus.size());
}

std::uint64_t host_kernel_bytes(const Params& p, const DataPath& path, bool is_client) {
  if (p.mem != MemKind::host) return 0;
  const BufferPlan b = plan_buffers(p, path, dir_used(p, is_client), dir_used(p, !is_client));
  const auto one = [&](std::uint64_t bytes, std::uint64_t piece) {
    if (bytes == 0) return std::uint64_t{0};
    const std::uint64_t all = sat_mul(bytes, p.gpus.size());
    return kernel_bytes_of(all, piece > 0 ? fold_mappings(p, bytes, piece) : p.gpus.size());
  };
  return sat_add(one(b.src_bytes, b.src_piece), one(b.dst_bytes, b.dst_piece));
}

std::size_t sample_cap(const Params& p) {
  const std::uint64_t dirs = p.mode == Mode::bidir ? 2 : 1;
  return LatencySamples::cap_for(sat_mul(sat_mul(dirs, p.gpus.size()), p.channels));
}

std::uint64_t bookkeeping_bytes(const Params& p) {
  const std::uint64_t dirs = p.mode == Mode::bidir ? 2 : 1;
  const std::uint64_t chans = sat_mul(sat_mul(dirs, p.gpus.size()), p.channels);
  // A channel's samples: a ping each (latency) or a chunk each of every timed round, capped.
  const std::uint64_t per_chan = p.mode == Mode::latency ? p.iters
                                                         : sat_mul((chunk_count(p) + p.channels - 1) / p.channels, p.iters);
  const std::uint64_t samples = sat_mul(sat_mul(chans, std::min<std::uint64_t>(per_chan, sample_cap(p))),
                                        LatencySamples::kBytesPerSample);
  const std::uint64_t rounds = sat_mul(std::uint64_t{p.warmup} + p.iters, 2 * sizeof(double));  // tx and rx rates
  // A round's chunk list (the plugin path's deal) and send times (a window per link).
  const std::uint64_t chunks = p.mode == Mode::latency ? 0 : sat_mul(sat_mul(chunk_count(p), dirs), 8);
  const std::uint64_t sends = sat_mul(sat_mul(link_count(p), p.window), 8);
  return sat_add(sat_add(samples, rounds), sat_add(chunks, sends));
}

std::uint64_t default_max_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 16ull << 30;
  return sat_mul(static_cast<std::uint64_t>(pages), static_cast<std::uint64_t>(page)) / 4;
}

namespace {

void allocate_buffers(Session& s) {
  const Params& p = s.p;
  const bool host = p.mem == MemKind::host;
  const bool sends = s.dir_used(s.is_client), receives = s.dir_used(!s.is_client);
  const BufferPlan plan = plan_buffers(p, *s.path, sends, receives);
  s.dst_layout = plan.dst;
  s.src_layout = plan.src;
  const std::uint64_t src_bytes = plan.src_bytes, dst_bytes = plan.dst_bytes;
  for (std::uint32_t g = 0; g < p.gpus.size(); ++g) {
    std::string nic;
    for (const auto& c : s.conns)
      if (c->gpu_slot == g) {
        nic = c->nic.name;
        break;
      }
    std::string placement;
    auto make = [&](std::uint64_t bytes, std::uint64_t piece, const Layout& l, bool prefault) {
      if (bytes == 0) return Buffer{};
      const int numa = host ? nic_numa(s.local.fsroot, nic) : -1;
      Buffer b = !host       ? Buffer::device(bytes, p.gpus[g])
                 : piece > 0 ? Buffer::host_folded(bytes, p.chunk_bytes, piece, l.slots, numa, prefault)
                             : Buffer::host(bytes, numa, prefault);
      placement = b.placement;
      s.report.buffer_bytes += memory_of(bytes, piece, l, p);
      return b;
    };
    // fill_sources writes every source at once: that is its first touch, no memset first.
    s.src.push_back(make(src_bytes, plan.src_piece, plan.src, false));
    s.dst.push_back(make(dst_bytes, plan.dst_piece, plan.dst, true));
    s.report.buffer_numa.push_back("gpu " + std::to_string(p.gpus[g]) + ": " + placement + " (NIC " + nic + ")");
  }
  auto describe = [&](const Layout& l, std::uint64_t piece) {
    if (!l.ring) return std::string("whole message");
    return "ring of " + std::to_string(l.slots) + " x " + format_size(p.chunk_bytes) + " per socket" +
           (piece > 0 ? " on " + format_size(piece) + " of memory per socket, reused (--slot-memory)" : "");
  };
  std::string layout;
  if (sends && p.mode != Mode::latency)
    layout += "source " + describe(s.src_layout, plan.src_piece) +
              (p.verify && host ? " (--verify: the pattern is filled before each round)" : "");
  if (receives && p.mode != Mode::latency)
    layout += (layout.empty() ? "" : ", ") + ("destination " + describe(s.dst_layout, plan.dst_piece));
  if (p.mode == Mode::latency) layout = "whole message";
  if (!plan.fold_note.empty()) layout += "; " + plan.fold_note;
  s.report.buffer_layout = layout;
}

}  // namespace

void prepare_session(Session& s) {
  const Params& p = s.p;
  const std::int64_t setup0 = monotonic_ns();
  s.allowed_cpus = p2pscope::allowed_cpus();
  s.report.side = s.is_client ? "client" : "server";
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  s.report.hostname = s.reveal_host ? host : "(withheld: the session was not authenticated)";

  // Binding warnings, once per NIC and role: CPUs outside the allowed set are skipped.
  std::map<std::string, const NicAddr*> nics;
  for (const auto& c : s.conns) nics.emplace(c->nic.name, &c->nic);
  for (const auto& [name, nic] : nics)
    for (const auto* b : {&s.local.tx_bind, &s.local.rx_bind}) {
      const char* dir = b == &s.local.tx_bind ? "TX" : "RX";
      if (!b->empty() && cpus_for(*b, *nic).empty()) {  // a typo, or a string written for other NICs
        const std::string named = join(*b, ", ", [](const auto& e) { return e.nic; });
        s.warnings.push_back(std::string(dir) + " binding has no entry for " + name + " (it names " + named +
                             "); its workers stay unpinned: add '" + name + ":CPUS' to pin them");
        continue;
      }
      std::vector<int> missing;
      for (int cpu : cpus_for(*b, *nic))
        if (std::find(s.allowed_cpus.begin(), s.allowed_cpus.end(), cpu) == s.allowed_cpus.end()) missing.push_back(cpu);
      if (missing.empty()) continue;
      const bool none = missing.size() == cpus_for(*b, *nic).size();
      s.warnings.push_back(std::string(dir) + " binding for " + name + ": CPUs " +
                           format_cpulist(missing) + " are not in this process's allowed set (" +
                           format_cpulist(s.allowed_cpus) + "); " +
                           (none ? "its workers stay unpinned" : "pinned to the allowed rest"));
    }

  allocate_buffers(s);
  for (std::size_t k = 0; k < 2 * p.gpus.size(); ++k) s.next_chunks.push_back(std::make_unique<std::atomic<std::uint64_t>>(0));
  for (int dir = 0; dir < 2; ++dir)
    for (std::uint32_t g = 0; g < p.gpus.size(); ++g)
      for (std::uint32_t c = 0; c < p.channels; ++c) s.chans.push_back(std::make_unique<ChannelState>(p.window, sample_cap(p)));

  for (std::size_t i = 0; i < s.conns.size(); ++i) {
    Conn& c = *s.conns[i];
    auto add = [&](const char* role) {
      WorkerReport w;
      w.role = role;
      w.dir = c.c2s ? "c2s" : "s2c";
      w.gpu = p.gpus[c.gpu_slot];
      w.channel = static_cast<int>(c.channel);
      w.socket = static_cast<int>(c.socket);
      w.nic = c.nic.name;
      s.workers.push_back(w);
      s.worker_conn.push_back(i);
    };
    if (p.mode == Mode::latency) {
      if (c.socket == 0) add(s.is_client ? "tx" : "rx");
      continue;
    }
    c.send_ns = std::make_unique<std::atomic<std::int64_t>[]>(p.window);  // a ring: at most `window` unacked
    add(s.sends(c.c2s) ? "tx" : "rx");  // one worker per link and side (a TX worker reads its acks)
  }
  // Issue 34: at 16-64 channels a side's threads can outnumber its CPUs; the figures
  // are then the scheduler's, and the report says so.
  if (!s.allowed_cpus.empty() && s.workers.size() > s.allowed_cpus.size())
    s.warnings.push_back(std::to_string(s.workers.size()) + " worker threads on this side and " +
                         std::to_string(s.allowed_cpus.size()) + " CPUs it may run on: the threads outnumber the "
                         "CPUs (see each worker's run-queue wait)");
  fill_sources(s, 0);
  s.path->prepare(s);
  s.report.setup_s = static_cast<double>(monotonic_ns() - setup0) * 1e-9;
}

void fill_sources(Session& s, std::uint32_t round) {
  if (round > 0 && !s.p.verify) return;
  const bool c2s = s.is_client;  // the direction this side sends in
  // A receive-only side must not fill: the peer is already sending while it would.
  if (!s.dir_used(c2s)) return;
  for (std::uint32_t g = 0; g < s.src.size(); ++g)
    if (s.src[g].size() > 0) fill_pattern(s.src[g], s.seed(c2s, g, round));
}

void run_round(Session& s, std::uint32_t round, bool timed) {
  for (auto& ch : s.chans) {
    ch->round_first_ns = ch->round_last_ns = 0;
    ch->round_bytes = 0;
  }
  for (auto& n : s.next_chunks) n->store(0);
  s.unconfirmed = {};
  s.path->run_workers(s, round, timed);
  if (!timed || s.p.mode == Mode::latency) return;

  const Params& p = s.p;
  for (bool tx : {true, false}) {
    std::uint64_t bytes = 0;
    std::int64_t first = 0, last = 0;
    for (bool c2s : {true, false}) {
      if (!s.dir_used(c2s) || s.sends(c2s) != tx) continue;
      for (std::uint32_t g = 0; g < p.gpus.size(); ++g)
        for (std::uint32_t c = 0; c < p.channels; ++c) {
          ChannelState& ch = *s.chans[s.chan_index(c2s, g, c)];
          const std::uint64_t b = ch.round_bytes;
          if (b == 0) continue;
          ch.bytes += b;
          ch.elapsed_s += static_cast<double>(ch.round_last_ns - ch.round_first_ns) * 1e-9;
          bytes += b;
          if (first == 0 || ch.round_first_ns < first) first = ch.round_first_ns;
          last = std::max(last, ch.round_last_ns);
          if (tx) s.unconfirmed.chans.push_back(s.chan_index(c2s, g, c));
        }
    }
    if (bytes == 0) continue;
    const double rate = last > first ? static_cast<double>(bytes) / (static_cast<double>(last - first) * 1e-9) : 0;
    (tx ? s.report.round_tx_bytes_per_s : s.report.round_rx_bytes_per_s).push_back(rate);
    if (tx) s.unconfirmed.bytes = bytes, s.unconfirmed.first_ns = first, s.unconfirmed.last_ns = last;
  }
}

void confirm_sends(Session& s, std::int64_t t_ns) {
  Session::Unconfirmed u = std::exchange(s.unconfirmed, {});
  if (!s.path->sends_complete_locally() || u.bytes == 0 || t_ns <= u.last_ns || s.report.round_tx_bytes_per_s.empty())
    return;
  for (std::size_t i : u.chans) {
    ChannelState& ch = *s.chans[i];
    ch.elapsed_s += static_cast<double>(t_ns - ch.round_last_ns) * 1e-9;
    ch.round_last_ns = t_ns;
  }
  s.report.round_tx_bytes_per_s.back() = static_cast<double>(u.bytes) / (static_cast<double>(t_ns - u.first_ns) * 1e-9);
}

void finish_report(Session& s) {
  const Params& p = s.p;
  SideReport& r = s.report;
  auto median = [](const std::vector<double>& v) { return compute_stats(v).median; };
  r.tx_bytes_per_s = median(r.round_tx_bytes_per_s);
  r.rx_bytes_per_s = median(r.round_rx_bytes_per_s);
  for (bool c2s : {true, false}) {
    if (!s.dir_used(c2s)) continue;
    for (std::uint32_t g = 0; g < p.gpus.size(); ++g)
      for (std::uint32_t c = 0; c < p.channels; ++c) {
        ChannelState& ch = *s.chans[s.chan_index(c2s, g, c)];
        ChannelReport cr;
        cr.dir = c2s ? "c2s" : "s2c";
        cr.sent = s.sends(c2s);
        cr.gpu = p.gpus[g];
        cr.channel = static_cast<int>(c);
        for (const auto& conn : s.conns) {
          if (conn->c2s != c2s || conn->gpu_slot != g || conn->channel != c) continue;
          if (conn->socket == 0) {
            cr.nic = conn->nic.name;
            cr.local_addr = conn->sock.valid() ? conn->sock.local_addr() : conn->local_desc;
            cr.peer_addr = conn->sock.valid() ? conn->sock.peer_addr() : conn->peer_desc;
            cr.registration = conn->registration;
          }
          if (conn->sock.valid()) cr.retransmits += conn->sock.retransmits();
        }
        cr.bytes = ch.bytes;
        cr.elapsed_s = ch.elapsed_s;
        cr.bytes_per_s = ch.elapsed_s > 0 ? static_cast<double>(ch.bytes) / ch.elapsed_s : 0;
        const Stats st = compute_stats(ch.lat_ns.values());
        cr.chunk_lat_p50_ns = st.median;
        cr.chunk_lat_p99_ns = st.p99;
        cr.window_mean = ch.occ_n ? ch.occ_sum / static_cast<double>(ch.occ_n) : 0;
        cr.window_max = ch.occ_max;
        if (p.mode == Mode::latency) {
          const auto v = ch.lat_ns.values();
          r.latency_ns.insert(r.latency_ns.end(), v.begin(), v.end());
        }
        r.channels.push_back(cr);
      }
  }
  r.workers = s.workers;
  r.warnings = s.warnings;
}

}  // namespace p2pscope::session
