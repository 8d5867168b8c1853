#pragma once
// The rendezvous's bytes on the wire, shared by rank 0 (rendezvous.cpp) and the other
// ranks (tcp_bootstrap.cpp). Integers are little-endian on the wire.
//
// The meeting, version 2 (every size below is fixed or bounded before anything is
// allocated; nothing about the run is sent before the peer has proven itself):
//   peer -> 0 intro   20 bytes: "P2PSRDV1", u32 version, 8 reserved bytes. Version 1's
//                     whole hello was 20 bytes, so a version-1 binary is told at once
//                     that versions differ, in a frame it can print.
//   0 -> peer frame   'C' + ('T': shared secret required | 'N': none) + nonce_0 (32 hex)
//   peer -> 0 hello   168 bytes: nonce_p (32 hex), proof (64 hex: auth::proof(token,
//                     "rendezvous-rank", nonce_0, nonce_p), or 64 '-' without a secret),
//                     job (64 hex: sha256 of the job id), u32 rank, u32 size.
//                     Rank 0 checks the proof before it looks at job, rank or size.
//   0 -> peer frame   'A' + rank 0's own proof ("rendezvous-root"; empty without a
//                     secret): this rank holds its place. Later 'W': everyone is here.
//   0 -> peer frame   'R' + text at any point: refused (the text says why and what to do).
// Frames are u32 length + payload; during the meeting at most kMaxMeetingFrame bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "p2pscope/error.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope::rdv {

inline constexpr char kMagic[8] = {'P', '2', 'P', 'S', 'R', 'D', 'V', '1'};
inline constexpr std::uint32_t kVersion = 2;
inline constexpr std::size_t kIntroBytes = 20;
inline constexpr std::size_t kNonceHexBytes = 32;  // 16 random bytes
inline constexpr std::size_t kProofHexBytes = 64;  // HMAC-SHA256
inline constexpr std::size_t kHelloBytes = kNonceHexBytes + 2 * kProofHexBytes + 8;
inline constexpr std::uint32_t kMaxMeetingFrame = 4096;
inline constexpr std::uint32_t kMaxFrame = 256u << 20;  // collectives' messages
inline constexpr char kRankRole[] = "rendezvous-rank";
inline constexpr char kRootRole[] = "rendezvous-root";

void put_u32(std::string& out, std::uint32_t v);
std::uint32_t get_u32(const char* p);

std::string intro_bytes();

struct Hello {
  std::string nonce, proof, job;  // hex text, as on the wire
  std::uint32_t rank = 0, size = 0;
};
std::string hello_bytes(const Hello& h);
Hello parse_hello(const char* p);  // kHelloBytes bytes

// sha256 of the job id, hex: the same on every rank of one job; the id itself stays home.
std::string job_digest(const std::string& job_id);

// u32 length + data; `data` over `limit` throws Error.
std::string frame(const std::string& data);
void send_frame(tcp::Socket& s, const std::string& data, std::uint32_t limit = kMaxFrame);
// An announced length over the limit: the other end is no p2pscope peer of ours.
class FrameTooLarge : public Error {
 public:
  using Error::Error;
};
// Reads one frame, refusing (FrameTooLarge) an announced length over `limit` before
// allocating.
std::string recv_frame(tcp::Socket& s, std::uint32_t limit = kMaxFrame);

// One connection attempt to ip:port within timeout_s. An invalid socket on failure,
// with `err` the errno value (ETIMEDOUT when the time ran out): the caller words the hint
// (the rendezvous's "nothing listens there" is not bench tcp's).
tcp::Socket connect_ipv4(const std::string& ip, std::uint16_t port, double timeout_s, int& err);

}  // namespace p2pscope::rdv
