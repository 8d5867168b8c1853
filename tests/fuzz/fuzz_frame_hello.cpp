// The hello frame's body from a peer, parsed and read as the receiving side does (frame_fuzz.hpp).
#include "frame_fuzz.hpp"

P2PSCOPE_FRAME_FUZZER(hello)
