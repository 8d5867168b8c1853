#pragma once
// The client's check of the figures a server reports, against what the client sent and
// measured itself. A server that lied was printed as if it had measured (issue 32 item
// 13): exit 0 with another machine's invented numbers.
#include <string>

#include "p2pscope/tcp.hpp"

namespace p2pscope::session {

// Rounds shorter than this are not judged by rate: latency and thread start-up are a
// real part of them, and a receiver's window can be far shorter than its sender's.
inline constexpr double kJudgedRoundS = 0.05;
// How far a server's send rate may exceed the client's receive rate for the same bytes in
// judged rounds (the client's receives may start a latency before the first send).
inline constexpr double kRateSlack = 4;

// "" when the server's figures agree with the client's (or cannot be judged: a failed
// session); else what disagrees, in a sentence.
std::string check_server_figures(const tcp::Results& r);

}  // namespace p2pscope::session
