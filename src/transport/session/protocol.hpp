#pragma once
// Wire format. Control frames (handshake, rounds, results) are a fixed header
// {magic, version, type, length} followed by `length` bytes of JSON; length is
// checked against kMaxControlBytes before anything is allocated. Data sockets carry
// ChunkHeader + payload one way and Ack the other way.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/bounded_json.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope::session {
using namespace p2pscope::tcp;  // the engine's public types (Params, reports) and its sockets

inline constexpr std::uint32_t kMaxControlBytes = 4u << 20;
inline constexpr std::uint64_t kMaxSizeBytes = 64ull << 30;  // per GPU pair
inline constexpr std::uint32_t kMaxConnections = 4096;
inline constexpr std::uint64_t kMaxChunksPerRound = 1ull << 22;  // over all GPU pairs and directions

enum class FrameType : std::uint32_t {
  hello = 1,       // client -> server: {nonce}
  accept = 2,      // server -> client: {session, proof, timeout_s}
  reject = 3,      // either way: {reason}
  data_hello = 4,  // first frame of a data socket: {session, c2s, gpu_slot, channel, socket}
  go = 5,          // client -> server: {round}
  done = 6,        // server -> client: {round} when its side of the round finished
  result = 7,      // server -> client: the server's SideReport
  error = 8,       // either way: {reason} (the sender's side failed)
  challenge = 9,   // server -> client, answering hello: {nonce, auth: "required" | "none"}
  params = 10,     // client -> server: {proof, params}; the server reads params only after the proof
  net_handles = 11,  // either way (bench net): {handles: [hex listen handle or null per link]}
};

struct FrameHeader {
  std::uint32_t magic = kProtocolMagic;
  std::uint32_t version = kProtocolVersion;
  std::uint32_t type = 0;
  std::uint32_t length = 0;
};
static_assert(sizeof(FrameHeader) == 16);

struct ChunkHeader {
  std::uint64_t offset = 0;  // in the destination buffer
  std::uint32_t length = 0;
  std::uint32_t round = 0;
};
static_assert(sizeof(ChunkHeader) == 16);
// The last header a socket sends in a round (length 0): chunks are dealt as they go,
// so the receiver learns the end from the sender.
inline constexpr std::uint64_t kEndOfRound = ~std::uint64_t{0};

struct Ack {
  std::uint32_t round = 0;
  std::uint32_t status = 0;  // 0 ok, 1 verify mismatch
};
static_assert(sizeof(Ack) == 8);

void send_frame(Socket& s, FrameType type, const nlohmann::json& body);

struct Frame {
  FrameType type{};
  nlohmann::json body;
};
// The limits a frame's JSON body is parsed under (depth, values, string length), by type.
JsonLimits frame_limits(FrameType type);
// A frame's body from the peer, parsed under frame_limits(type): an object, or Error
// naming what was wrong (`from` names the peer). Nothing deeper than the limit is built.
nlohmann::json frame_body(FrameType type, std::string_view text, const std::string& from);

// What a bench tcp proof is bound to besides the nonces (docs/security.md): the
// server's address as the client dialed it (the server's local address of the control
// connection), the parameters' exact JSON, and, for the server's proof, the session id
// and timeout it accepted. A relay that forwards a client's nonces and proof to the
// real server dialed another address, or changed the parameters: the proof fails.
std::string client_binding(const std::string& server_addr, const nlohmann::json& params);
// `addresses`: the accept frame's net_addresses (null when it has none, as bench tcp's).
std::string server_binding(const std::string& client_binding, const std::string& session_id,
                           const nlohmann::json& timeout_s, const nlohmann::json& addresses = nullptr);

// The IPv4 addresses a peer vouches for (bench net: its plugin devices'), the field
// `net_addresses` of its params or accept frame: none when absent; UsageError unless a
// list of at most kMaxVouchedAddresses dotted IPv4 addresses.
inline constexpr std::size_t kMaxVouchedAddresses = 64;
std::vector<std::string> vouched_addresses(const nlohmann::json& frame);

// Reads one frame. A header with another magic or version throws ProtocolMismatch
// (after telling the peer why, when `refuse` is set); other faults throw Error.
Frame recv_frame(Socket& s, bool refuse);
// Reads a frame and checks its type; a reject/error frame from the peer becomes an
// Error carrying the peer's reason.
nlohmann::json expect_frame(Socket& s, FrameType type, const std::string& context);

class ProtocolMismatch : public Error {
 public:
  using Error::Error;
};

}  // namespace p2pscope::session
