#pragma once
// Where a p2pscope process spends its time before, around and after the measurement:
// with P2PSCOPE_TRACE_PHASES=1 each call prints "[p2pscope +S.SSS s] WHAT" to stderr,
// S counted from the process's start (as the kernel recorded it, so the time before
// main is included). A step of `p2pscope run` that costs seconds more than its
// measurement shows where with it. Silent (one getenv) otherwise.
#include <string_view>

namespace p2pscope {

void trace_phase(std::string_view what);

}  // namespace p2pscope
