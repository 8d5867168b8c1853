#pragma once
// A generated GCP A3-high tree (2 x 52 cores x 2 threads = 208 CPUs, NUMA 0: 0-51,104-155,
// NUMA 1: 52-103,156-207; eth0 management with the default route; eth1/eth2 on node 0,
// eth3/eth4 on node 1 with IRQs served by node 0; allowed masks 0-207, effective one CPU),
// made by tests/fixtures/make-two-socket.py once per test binary.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace p2pscope::test {

// "" when python3 is missing (the caller skips, saying so).
inline std::string a3_high_tree() {
  static const std::string dir = [] {
    const std::string d = (std::filesystem::temp_directory_path() / ("p2pscope-a3-" + std::to_string(::getpid()))).string();
    const std::string cmd = "python3 " + std::string(P2PSCOPE_FIXTURES_DIR) + "/make-two-socket.py " + d +
                            " --cores 52 --gpus 8 --queues 16 --wide-affinity --hostname a3-high >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return std::string();
    std::atexit([] { std::filesystem::remove_all((std::filesystem::temp_directory_path() /
                                                  ("p2pscope-a3-" + std::to_string(::getpid())))); });
    return d;
  }();
  return dir;
}

}  // namespace p2pscope::test
