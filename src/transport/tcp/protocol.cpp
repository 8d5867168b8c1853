#include "transport/tcp/protocol.hpp"

#include <cstdio>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tcp {

std::string to_string(Mode m) {
  switch (m) {
    case Mode::bw: return "bw";
    case Mode::bidir: return "bidir";
    case Mode::latency: return "latency";
    case Mode::fullmesh: return "fullmesh";
  }
  return "?";
}

Mode parse_mode(const std::string& text) {
  for (Mode m : {Mode::bw, Mode::bidir, Mode::latency, Mode::fullmesh})
    if (to_string(m) == text) return m;
  throw UsageError("unknown --mode '" + text + "'; expected bw, bidir, latency or fullmesh");
}

void validate(const Params& p) {
  auto bad = [](const std::string& m) { throw UsageError(m); };
  if (p.channels == 0 || p.channels > 4096) bad("--channels must be in 1-4096");
  if (p.sockets_per_channel == 0 || p.sockets_per_channel > 256) bad("--sockets-per-channel must be in 1-256");
  if (p.window == 0 || p.window > 65536) bad("--window must be in 1-65536 (chunks in flight per channel)");
  if (p.transport.empty() || p.transport.size() > 200) bad("transport name empty or over 200 characters");
  if (p.size_bytes == 0) bad("--size must be at least 1 byte");
  if (p.size_bytes > kMaxSizeBytes) bad("--size " + format_size(p.size_bytes) + " is over the limit of 64 GiB");
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
          {"timeout_s", p.timeout_s},
          {"transport", p.transport}};
}

Params params_from_json(const nlohmann::json& j) {
  Params p;
  try {
    p.mode = parse_mode(j.at("mode").get<std::string>());
    const auto mem = j.at("mem").get<std::string>();
    if (mem != "host" && mem != "gpu") throw UsageError("mem '" + mem + "' is neither host nor gpu");
    p.mem = mem == "gpu" ? MemKind::gpu : MemKind::host;
    p.channels = j.at("channels").get<std::uint32_t>();
    p.sockets_per_channel = j.at("sockets_per_channel").get<std::uint32_t>();
    p.window = j.at("window").get<std::uint32_t>();
    p.size_bytes = j.at("size_bytes").get<std::uint64_t>();
    p.chunk_bytes = j.at("chunk_bytes").get<std::uint64_t>();
    p.iters = j.at("iters").get<std::uint32_t>();
    p.warmup = j.at("warmup").get<std::uint32_t>();
    p.gpus = j.at("gpus").get<std::vector<int>>();
    p.verify = j.at("verify").get<bool>();
    p.reverse = j.at("reverse").get<bool>();
    p.nodelay = j.at("nodelay").get<bool>();
    p.sockbuf_bytes = j.at("sockbuf_bytes").get<std::uint32_t>();
    p.timeout_s = j.at("timeout_s").get<double>();
    p.transport = j.value("transport", std::string("sockets"));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("malformed parameters from peer: ") + e.what());
  }
  if (p.warmup > 1000) throw UsageError("warmup over 1000 rounds");
  validate(p);
  return p;
}

void send_frame(Socket& s, FrameType type, const nlohmann::json& body) {
  const std::string text = body.dump();
  if (text.size() > kMaxControlBytes) throw Error("control message too large (" + std::to_string(text.size()) + " B)");
  FrameHeader h;
  h.type = static_cast<std::uint32_t>(type);
  h.length = static_cast<std::uint32_t>(text.size());
  s.send_two(&h, sizeof h, text.data(), text.size());
}

Frame recv_frame(Socket& s, bool refuse) {
  FrameHeader h;
  s.recv_all(&h, sizeof h);
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
  s.recv_all(text.data(), text.size());
  Frame f;
  f.type = static_cast<FrameType>(h.type);
  f.body = nlohmann::json::parse(text, nullptr, false);
  if (f.body.is_discarded() || !f.body.is_object()) throw Error(s.label() + ": control message is not a JSON object");
  return f;
}

nlohmann::json expect_frame(Socket& s, FrameType type, const std::string& context) {
  Frame f = recv_frame(s, false);
  if (f.type == FrameType::reject || f.type == FrameType::error) {
    const auto it = f.body.find("reason");
    const std::string reason = it != f.body.end() && it->is_string() ? it->get<std::string>().substr(0, 2000)
                                                                      : "(no reason given)";
    throw Error(context + ": peer " + (f.type == FrameType::reject ? "refused: " : "failed: ") + reason);
  }
  if (f.type != type)
    throw Error(context + ": unexpected control message type " + std::to_string(static_cast<unsigned>(f.type)));
  return f.body;
}

}  // namespace p2pscope::tcp
