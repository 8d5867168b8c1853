#pragma once
// Whether a thread of this process sleeps in the kernel now (its state 'S' in
// /proc/self/task/TID/stat): the wake-up tests send each piece only once the receiver
// sleeps, so their counts do not depend on which thread ran ahead.
#include <sys/types.h>

#include <fstream>
#include <iterator>
#include <string>

namespace p2pscope::test {

inline bool thread_asleep(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::size_t paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'S';
}

}  // namespace p2pscope::test
