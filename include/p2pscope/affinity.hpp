#pragma once
// The CPUs the calling thread may run on (sched_getaffinity), as taskset, mpirun's
// binding or a pinning call left them. Empty if the kernel would not say.
#include <vector>

namespace p2pscope {

std::vector<int> allowed_cpus();

}  // namespace p2pscope
