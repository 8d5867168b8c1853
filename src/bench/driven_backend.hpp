#pragma once
// One program, many ranks: rank 0 runs the whole program (a profile campaign, with
// its stop flag, re-warming, resume and output) against a DrivenBackend, which first
// tells every other rank which collective call comes next; the other ranks only
// serve_backend(), making the same call on their own backend. So the ranks can never
// disagree on the sequence of collective calls, whatever rank 0 decides at run time
// (a Ctrl-C, a re-warm, a resumed run skipping done ops).
#include <memory>

#include "p2pscope/backend.hpp"
#include "p2pscope/bootstrap.hpp"

namespace p2pscope::bench {

// Rank 0's view: forwards every collective call of `inner` (a backend built with the
// same bootstrap) to the serving ranks, then makes it itself. Its destructor tells
// them to stop.
std::unique_ptr<Backend> make_driven_backend(std::unique_ptr<Backend> inner, std::shared_ptr<Bootstrap> boot);

// Every other rank: makes the calls rank 0 announces on `inner`, until rank 0 says
// stop (returns) or is gone (throws Error naming it). A call that throws here is
// reported by the rank's own output; rank 0 sees the rank vanish.
void serve_backend(Backend& inner, Bootstrap& boot);

}  // namespace p2pscope::bench
