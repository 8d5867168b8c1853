#pragma once
// NUMA placement without libnuma: nodes and their CPUs from sysfs, memory bound with
// the mbind syscall, and first touch from a thread pinned to the node's CPUs (which
// also places the pages where mbind is refused, e.g. by a container's seccomp).
#include <cstddef>
#include <string>
#include <vector>

namespace p2pscope::bench::host {

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;  // intersected with this process's allowed CPUs
};

// Online nodes with their CPUs; one node 0 with every allowed CPU when sysfs has none.
std::vector<NumaNode> numa_nodes();
// Pins the calling thread to `cpus` (no-op when empty). Returns false on failure.
bool pin_thread(const std::vector<int>& cpus);
// mmap'd memory bound to a node; munmap on destruction.
class NodeBuffer {
 public:
  NodeBuffer() = default;
  NodeBuffer(std::size_t bytes, int node);  // throws Error when mmap fails
  NodeBuffer(NodeBuffer&& o) noexcept;
  NodeBuffer& operator=(NodeBuffer&& o) noexcept;
  NodeBuffer(const NodeBuffer&) = delete;
  NodeBuffer& operator=(const NodeBuffer&) = delete;
  ~NodeBuffer();
  unsigned char* data() const { return p_; }
  std::size_t size() const { return n_; }
  bool bound() const { return bound_; }  // mbind succeeded
 private:
  unsigned char* p_ = nullptr;
  std::size_t n_ = 0;
  bool bound_ = false;
};

// Bytes the kernel says are available (MemAvailable), 0 when unknown.
std::size_t mem_available_bytes();

}  // namespace p2pscope::bench::host
