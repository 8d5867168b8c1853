#include "transport/session/protocol.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "p2pscope/auth.hpp"
#include "p2pscope/bounded_json.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/enum_names.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tcp {
using namespace p2pscope::session;  // the limits (kMax*) checked here

// The engine's modes, named once (enum_names.hpp): to_string, the parser and its error.
constexpr std::array<EnumName<Mode>, 4> kModeNames{{{Mode::bw, "bw"},
                                                     {Mode::bidir, "bidir"},
                                                     {Mode::latency, "latency"},
                                                     {Mode::fullmesh, "fullmesh"}}};

std::string to_string(Mode m) { return enum_name(kModeNames, m); }

Mode parse_mode(const std::string& text) { return parse_enum(kModeNames, text, "unknown --mode"); }

void validate(const Params& p) {
  auto bad = [](const std::string& m) { throw UsageError(m); };
  if (p.channels == 0 || p.channels > 4096) bad("--channels must be in 1-4096");
  if (p.sockets_per_channel == 0 || p.sockets_per_channel > 256) bad("--sockets-per-channel must be in 1-256");
  if (p.window == 0 || p.window > 65536) bad("--window must be in 1-65536 (chunks in flight per channel)");
  if (p.transport.empty() || p.transport.size() > 200) bad("transport name empty or over 200 characters");
  if (p.size_bytes == 0) bad("--size must be at least 1 byte");
  if (p.size_bytes > kMaxSizeBytes) bad("--size " + format_size(p.size_bytes) + " is over the limit of 64 GiB");
  if (p.slot_memory_bytes % 4096 != 0 || p.slot_memory_bytes > (1u << 30))
    bad("--slot-memory must be a multiple of 4K up to 1G (0: a whole chunk per slot)");
  if (p.gpus.empty()) bad("--gpus lists no GPU");
  if (p.gpus.size() > 64) bad("--gpus lists more than 64 GPUs");
  for (int g : p.gpus)
    if (g < 0 || g > 1023) bad("--gpus: GPU index " + std::to_string(g) + " is out of range");
  if (p.iters == 0) bad("--iters must be at least 1");
  if (!(p.timeout_s >= 0.01 && p.timeout_s <= 3600)) bad("--timeout must be in [0.01, 3600] seconds");
  if (p.mode == Mode::latency) {
    if (p.size_bytes > (64u << 20)) bad("latency mode: --size (message size) must be at most 64 MiB");
    if (p.iters > 10'000'000) bad("latency mode: --iters over 10M");
    if (p.mem == MemKind::gpu)
      bad("latency mode ping-pongs host buffers; --mem gpu is supported in bw, bidir and fullmesh modes");
  } else {
    if (p.chunk_bytes == 0) bad("--chunk must be at least 1 byte");
    if (p.chunk_bytes > p.size_bytes)
      bad("--chunk " + format_size(p.chunk_bytes) + " is larger than --size " + format_size(p.size_bytes) +
          "; pick a chunk at most the transfer size");
    if (p.chunk_bytes > (1ull << 30)) bad("--chunk must be at most 1 GiB");
    if (p.iters > 100000) bad("--iters over 100000");
    // Every chunk of a round is tracked (its index and send time): without a cap, 64 GiB
    // in 1-byte chunks would make either side fill memory the buffer limits never see.
    const std::uint64_t per_pair = (p.size_bytes + p.chunk_bytes - 1) / p.chunk_bytes;
    const std::uint64_t chunks = per_pair * p.gpus.size() * (p.mode == Mode::bidir ? 2 : 1);  // <= 2^36 * 128
    if (chunks > kMaxChunksPerRound)
      bad("--size / --chunk makes " + std::to_string(chunks) + " chunks a round (x GPUs, x2 for bidir), over the limit of " +
          std::to_string(kMaxChunksPerRound) + ": each is tracked in memory; use a larger --chunk");
  }
  // Each factor is bounded above, so the product fits in 64 bits.
  const std::uint64_t dirs = p.mode == Mode::bidir ? 2 : 1;
  if (dirs * p.gpus.size() * p.channels * p.sockets_per_channel > kMaxConnections)
    bad("too many connections: gpus x channels x sockets-per-channel (x2 for bidir) is over " +
        std::to_string(kMaxConnections));
}

nlohmann::json to_json(const Params& p) {
  return {{"mode", to_string(p.mode)},
          {"mem", p.mem == MemKind::gpu ? "gpu" : "host"},
          {"channels", p.channels},
          {"sockets_per_channel", p.sockets_per_channel},
          {"window", p.window},
          {"size_bytes", p.size_bytes},
          {"chunk_bytes", p.chunk_bytes},
          {"iters", p.iters},
          {"warmup", p.warmup},
          {"gpus", p.gpus},
          {"verify", p.verify},
          {"reverse", p.reverse},
          {"nodelay", p.nodelay},
          {"sockbuf_bytes", p.sockbuf_bytes},
          {"slot_memory_bytes", p.slot_memory_bytes},
          {"timeout_s", p.timeout_s},
          {"transport", p.transport}};
}

namespace {

// A peer's string field, sanitized, keeps this much: past every legitimate one (a
// transport name is at most 200 bytes), so what it cuts is refused by validate() anyway.
constexpr std::size_t kPeerFieldBytes = 1000;

// A peer's value as a refusal quotes it: 40 bytes of its JSON, cut between characters.
std::string shown(const nlohmann::json& v) { return external_text(out::dump_json(v), 40); }

// A count from the peer: a whole number that fits T. nlohmann's get<T> would wrap
// 2^32 + 1 to 1 and -1 to 2^32 - 1, and turn true or 2.5 into 1 or 2, silently.
template <class T>
T count_field(const nlohmann::json& j, const char* key) {
  const auto& v = j.at(key);
  const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
  if (!whole || v.get<std::uint64_t>() > std::numeric_limits<T>::max())
    throw UsageError(std::string("malformed parameters from peer: '") + key + "' must be a whole number in 0-" +
                     std::to_string(std::numeric_limits<T>::max()) + ", not " + shown(v));
  return static_cast<T>(v.get<std::uint64_t>());
}

// A string or boolean field from the peer, or UsageError naming it.
template <class T>
T typed_field(const nlohmann::json& j, const char* key) {
  const auto& v = j.at(key);
  const bool ok = std::is_same_v<T, bool> ? v.is_boolean() : v.is_string();
  if (!ok)
    throw UsageError(std::string("malformed parameters from peer: '") + key + "' must be " +
                     (std::is_same_v<T, bool> ? "true or false" : "a string") + ", not " + shown(v));
  // A string field is the peer's text: safe to print from here on (mode, mem, transport).
  if constexpr (std::is_same_v<T, std::string>) {
    return external_text(v.get<std::string>(), kPeerFieldBytes);
  } else {
    return v.get<T>();
  }
}

}  // namespace

Params params_from_json(const nlohmann::json& j) {
  Params p;
  try {
    if (!j.is_object()) throw UsageError("malformed parameters from peer: not a JSON object");
    p.mode = parse_mode(typed_field<std::string>(j, "mode"));
    const auto mem = typed_field<std::string>(j, "mem");
    if (mem != "host" && mem != "gpu") throw UsageError("mem '" + mem + "' is neither host nor gpu");
    p.mem = mem == "gpu" ? MemKind::gpu : MemKind::host;
    p.channels = count_field<std::uint32_t>(j, "channels");
    p.sockets_per_channel = count_field<std::uint32_t>(j, "sockets_per_channel");
    p.window = count_field<std::uint32_t>(j, "window");
    p.size_bytes = count_field<std::uint64_t>(j, "size_bytes");
    p.chunk_bytes = count_field<std::uint64_t>(j, "chunk_bytes");
    p.iters = count_field<std::uint32_t>(j, "iters");
    p.warmup = count_field<std::uint32_t>(j, "warmup");
    const auto& gpus = j.at("gpus");
    if (!gpus.is_array()) throw UsageError("malformed parameters from peer: 'gpus' is not a list");
    if (gpus.size() > 64) throw UsageError("--gpus lists more than 64 GPUs");
    p.gpus.clear();
    for (const auto& g : gpus) {
      if (!g.is_number_integer() || g.get<std::int64_t>() < 0 || g.get<std::int64_t>() > 1023)
        throw UsageError("malformed parameters from peer: 'gpus' holds " + shown(g) + ", not a GPU index in 0-1023");
      p.gpus.push_back(g.get<int>());
    }
    p.verify = typed_field<bool>(j, "verify");
    p.reverse = typed_field<bool>(j, "reverse");
    p.nodelay = typed_field<bool>(j, "nodelay");
    p.sockbuf_bytes = count_field<std::uint32_t>(j, "sockbuf_bytes");
    // A peer from before the field: whole-chunk slots, as it allocates them itself.
    p.slot_memory_bytes = j.contains("slot_memory_bytes") ? count_field<std::uint32_t>(j, "slot_memory_bytes") : 0;
    if (!j.at("timeout_s").is_number()) throw UsageError("malformed parameters from peer: 'timeout_s' is not a number");
    p.timeout_s = j.at("timeout_s").get<double>();
    if (j.contains("transport")) p.transport = typed_field<std::string>(j, "transport");
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("malformed parameters from peer: ") + e.what());
  }
  if (p.warmup > 1000) throw UsageError("warmup over 1000 rounds");
  validate(p);
  return p;
}

}  // namespace p2pscope::tcp

namespace p2pscope::session {

std::string client_binding(const std::string& server_addr, const nlohmann::json& params) {
  const auth::Digest d = auth::sha256(params.dump());
  return "|v2|server=" + server_addr + "|params=" + auth::to_hex(d.data(), d.size());
}

std::string server_binding(const std::string& client_binding, const std::string& session_id,
                           const nlohmann::json& timeout_s, const nlohmann::json& addresses) {
  const std::string b = client_binding + "|session=" + session_id + "|timeout_s=" + timeout_s.dump();
  return addresses.is_null() ? b : b + "|addresses=" + out::dump_json(addresses);
}

std::vector<std::string> vouched_addresses(const nlohmann::json& frame) {
  const auto it = frame.is_object() ? frame.find("net_addresses") : frame.end();
  if (!frame.is_object() || it == frame.end()) return {};
  const auto bad = [&] {
    return UsageError("malformed parameters from peer: 'net_addresses' must be a list of at most " +
                      std::to_string(kMaxVouchedAddresses) + " IPv4 addresses, not " + tcp::shown(*it));
  };
  if (!it->is_array() || it->size() > kMaxVouchedAddresses) throw bad();
  std::vector<std::string> out;
  for (const auto& a : *it) {
    if (!a.is_string()) throw bad();
    const std::string text = external_text(a.get<std::string>(), 20);
    tcp::parse_ipv4(text, "a vouched address");  // UsageError naming it
    out.push_back(text);
  }
  return out;
}

JsonLimits frame_limits(FrameType type) {
  JsonLimits l;
  l.max_bytes = kMaxControlBytes;
  l.max_depth = 8;  // the deepest frame of ours (results: report, list, record) is 3
  // Results carry a rate per round (100,000 at most each way) and a record per worker
  // (4096 at most); every other frame is a few fields, or a handle per link.
  l.max_elements = type == FrameType::result ? (1u << 20) : (1u << 15);
  l.max_string_bytes = 64u << 10;  // a reason, a warning, a hex handle: far below
  return l;
}

nlohmann::json frame_body(FrameType type, std::string_view text, const std::string& from) {
  BoundedJson j = parse_json_bounded(text, frame_limits(type));
  if (!j.ok())
    throw Error(from + ": control message (type " + std::to_string(static_cast<unsigned>(type)) +
                ") refused: " + external_text(j.error, 300));
  if (!j.value.is_object()) throw Error(from + ": control message is not a JSON object");
  return std::move(j.value);
}

void send_frame(Socket& s, FrameType type, const nlohmann::json& body) {
  // Replaced, never thrown: a frame carrying a reason is sent whatever that reason holds.
  const std::string text = out::dump_json(body);
  if (text.size() > kMaxControlBytes) throw Error("control message too large (" + std::to_string(text.size()) + " B)");
  FrameHeader h;
  h.type = static_cast<std::uint32_t>(type);
  h.length = static_cast<std::uint32_t>(text.size());
  s.send_two(&h, sizeof h, text.data(), text.size());
}

namespace {

// A frame arrives whole by its deadline: SO_RCVTIMEO alone bounds each recv, and a
// peer trickling a byte a second would renew it for ever (deadline 0: no deadline).
void recv_by(Socket& s, void* data, std::size_t n, std::int64_t deadline_ns, double budget_s) {
  if (deadline_ns == 0) {
    s.recv_all(data, n);
    return;
  }
  auto* p = static_cast<char*>(data);
  for (std::size_t got = 0; got < n;) {
    const std::size_t k = s.recv_now(p + got, n - got);
    got += k;
    if (k || got == n) continue;
    const std::int64_t left_ns = deadline_ns - monotonic_ns();
    if (left_ns <= 0)
      throw IoError(s.label() + ": recv timed out: a control message did not arrive whole within " +
                        fixed(budget_s, 1) + " s (peer silent or trickling past --timeout; link down or peer stalled?)",
                    IoCause::timeout);
    pollfd pf{s.fd(), POLLIN, 0};
    const int ms = static_cast<int>(std::clamp<std::int64_t>(left_ns / 1'000'000 + 1, 1, 1000));
    if (::poll(&pf, 1, ms) < 0 && errno != EINTR) throw IoError(s.label() + ": poll failed", IoCause::reset);
  }
}

}  // namespace

Frame recv_frame(Socket& s, bool refuse) {
  const double budget_s = s.timeout_s();
  const std::int64_t deadline_ns = budget_s > 0 ? monotonic_ns() + static_cast<std::int64_t>(budget_s * 1e9) : 0;
  FrameHeader h;
  recv_by(s, &h, sizeof h, deadline_ns, budget_s);
  std::string why;
  char buf[160];
  if (h.magic != kProtocolMagic) {
    std::snprintf(buf, sizeof buf, "peer is not speaking the p2pscope tcp protocol (magic 0x%08x, expected 0x%08x)",
                  h.magic, kProtocolMagic);
    why = buf;
  } else if (h.version != kProtocolVersion) {
    why = "peer speaks p2pscope tcp protocol version " + std::to_string(h.version) + ", this side speaks version " +
          std::to_string(kProtocolVersion) + "; run the same p2pscope version on both sides";
  }
  if (!why.empty()) {
    if (refuse) {
      try {
        send_frame(s, FrameType::reject, {{"reason", why}});
      } catch (const Error&) {
      }
    }
    throw ProtocolMismatch("refused " + s.peer_addr() + ": " + why);
  }
  if (h.length > kMaxControlBytes)
    throw Error(s.label() + ": control message of " + std::to_string(h.length) + " bytes is over the " +
                std::to_string(kMaxControlBytes) + "-byte limit");
  std::string text(h.length, '\0');
  recv_by(s, text.data(), text.size(), deadline_ns, budget_s);
  Frame f;
  f.type = static_cast<FrameType>(h.type);
  f.body = frame_body(f.type, text, s.label());
  return f;
}

nlohmann::json expect_frame(Socket& s, FrameType type, const std::string& context) {
  Frame f = recv_frame(s, false);
  if (f.type == FrameType::reject || f.type == FrameType::error) {
    const auto it = f.body.find("reason");
    const std::string reason =
        it != f.body.end() && it->is_string() ? external_text(it->get<std::string>(), 2000) : "(no reason given)";
    throw Error(context + ": peer " + (f.type == FrameType::reject ? "refused: " : "failed: ") + reason);
  }
  if (f.type != type)
    throw Error(context + ": unexpected control message type " + std::to_string(static_cast<unsigned>(f.type)));
  return std::move(f.body);
}

}  // namespace p2pscope::session
