#include "transport/host/numa.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sstream>
#include <utility>

#include "p2pscope/affinity.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::bench::host {
namespace {
constexpr int kMpolBind = 2;  // linux/mempolicy.h

}  // namespace

std::vector<NumaNode> numa_nodes() {
  const FsRoot fs("/");
  const auto allowed = allowed_cpus();
  std::vector<NumaNode> nodes;
  for (const auto& name : fs.list("/sys/devices/system/node")) {
    if (name.rfind("node", 0) != 0 || name.size() < 5) continue;
    int id = 0;
    try { id = static_cast<int>(parse_int(name.substr(4), "NUMA node")); } catch (const Error&) { continue; }
    NumaNode n{id, {}};
    if (auto cl = fs.read_line("/sys/devices/system/node/" + name + "/cpulist")) {
      try {
        for (int c : parse_cpulist(*cl))
          for (int a : allowed)
            if (a == c) n.cpus.push_back(c);
      } catch (const Error&) {
      }
    }
    nodes.push_back(n);
  }
  if (nodes.empty()) nodes.push_back({0, allowed});
  return nodes;
}

bool pin_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

NodeBuffer::NodeBuffer(std::size_t bytes, int node) : n_(bytes) {
  if (bytes == 0) return;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw_errno("mmap of " + format_size(bytes) + " for NUMA node " + std::to_string(node));
  p_ = static_cast<unsigned char*>(p);
  if (node >= 0 && node < 1024) {
    unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {};
    mask[static_cast<unsigned>(node) / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
    bound_ = syscall(SYS_mbind, p, bytes, kMpolBind, mask, 1024ul, 0u) == 0;
  }
}

NodeBuffer::NodeBuffer(NodeBuffer&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), bound_(o.bound_) {}

NodeBuffer& NodeBuffer::operator=(NodeBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) munmap(p_, n_);
    p_ = std::exchange(o.p_, nullptr);
    n_ = std::exchange(o.n_, 0);
    bound_ = o.bound_;
  }
  return *this;
}

NodeBuffer::~NodeBuffer() {
  if (p_) munmap(p_, n_);
}

std::size_t mem_available_bytes() {
  const FsRoot fs("/");
  const auto text = fs.read("/proc/meminfo");
  if (!text) return 0;
  std::istringstream in(*text);
  std::string key;
  std::size_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

}  // namespace p2pscope::bench::host
