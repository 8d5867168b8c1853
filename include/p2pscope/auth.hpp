#pragma once
// Shared-secret authentication for everything that listens (bench tcp --server, the
// rendezvous): both ends hold one token (as iperf3's authentication and MPI
// launchers' job keys do) and prove it by a challenge-response, so the token never
// crosses the wire and a recorded exchange cannot be replayed (fresh nonces).
//
// The exchange, built from these pieces by each protocol:
//   server -> client: nonce_s            client -> server: nonce_c, proof(token, "client", nonce_s, nonce_c)
//   server checks with equal_constant_time, then -> client: proof(token, "server", nonce_s, nonce_c)
// The role string keeps one side's proof from being reflected back as the other's.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace p2pscope::auth {

// The shared secret: $P2PSCOPE_TOKEN, else the contents of the file named by
// $P2PSCOPE_TOKEN_FILE (refused with a clear Error if group/other-readable, not a
// regular file, empty, or over 4 KiB; one trailing newline stripped). nullopt: no
// secret configured (an empty P2PSCOPE_TOKEN counts as unset).
std::optional<std::string> load_token();
std::optional<std::string> load_token(const std::function<const char*(const char*)>& getenv_fn);

// `bytes` random bytes from getrandom(2), as 2*bytes lowercase hex digits. Throws
// Error if the kernel's generator cannot be read.
std::string random_nonce_hex(std::size_t bytes = 16);

// Lowercase hex HMAC-SHA256(token, role + ":" + nonce_a + ":" + nonce_b).
std::string proof(const std::string& token, const std::string& role, const std::string& nonce_a,
                  const std::string& nonce_b);

// True when a and b are equal; the time taken depends only on their lengths.
bool equal_constant_time(std::string_view a, std::string_view b);

// The primitives, exposed for their test vectors (FIPS 180-4, RFC 4231).
using Digest = std::array<std::uint8_t, 32>;
Digest sha256(std::string_view data);
Digest hmac_sha256(std::string_view key, std::string_view message);
std::string to_hex(const std::uint8_t* data, std::size_t n);

}  // namespace p2pscope::auth
