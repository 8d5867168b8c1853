#pragma once
// Topology discovery: CPUs, NUMA nodes, PCI devices, NICs with their IRQs, RDMA
// devices, GPUs, and the connection classes between GPUs and NICs. Everything is
// read through an FsRoot, so captured trees drive the tests. Unknown values are
// -1 / empty strings, never exceptions.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "p2pscope/fsroot.hpp"

namespace p2pscope::topo {

struct Cpu {
  int id = -1;
  int core = -1;     // topology/core_id
  int package = -1;  // topology/physical_package_id
  int numa = -1;
  std::vector<int> siblings;  // thread_siblings_list (includes itself)
};

struct NumaNode {
  int id = -1;
  std::vector<int> cpus;
};

struct PciDevice {
  std::string address;  // "0000:00:03.0"
  std::uint32_t class_code = 0;  // 0x030200
  std::uint16_t vendor = 0, device = 0;
  int numa = -1;
  std::vector<int> local_cpus;
  std::string link_speed;  // "32.0 GT/s PCIe" as the kernel writes it; "" unknown
  int link_width = -1;
  // Bridges above this device, nearest first, as PCI addresses.
  std::vector<std::string> bridges;
  std::string root_complex;  // "pci0000:00"
};

// One interrupt line as /proc/interrupts and /proc/irq describe it.
struct Irq {
  int irq = -1;
  std::string chip;   // e.g. "PCI-MSIX-0000:00:03.0" or "IR-PCI-MSI"
  std::string name;   // action names, e.g. "virtio0-input.0"
  std::vector<int> affinity;             // /proc/irq/N/smp_affinity_list: the CPUs allowed
  std::vector<int> effective;            // effective_affinity_list: where the kernel routes it; empty unknown
  std::vector<std::uint64_t> per_cpu;    // counts, indexed like the header's CPU columns
  std::vector<int> cpu_columns;          // CPU id of each per_cpu column
  std::uint64_t total() const;
};

// /proc/interrupts parsed. Lines that are not numbered IRQs (NMI, LOC...) are kept
// separately; malformed lines are skipped and counted.
struct InterruptTable {
  std::vector<int> cpu_columns;
  std::vector<Irq> irqs;  // numbered lines only
  std::map<std::string, std::vector<std::uint64_t>> named;  // "LOC", "NMI", ...
  int malformed_lines = 0;
};
InterruptTable parse_interrupts(const std::string& text);

struct Nic {
  std::string name;
  std::string pci;   // nearest PCI ancestor; "" for virtual NICs
  int numa = -1;
  std::string mac;
  int mtu = -1;
  long long speed_mbps = -1;
  std::string state;  // operstate
  int rx_queues = -1, tx_queues = -1;  // -1: not known (no queues directory, e.g. not captured)
  std::vector<Irq> irqs;  // with affinity and per-CPU counts
  bool is_virtual() const { return pci.empty(); }
};

struct Gid {
  int index = -1;
  std::string gid;   // "0000:0000:0000:0000:0000:ffff:0a00:0001"
  std::string type;  // "IB", "RoCE v1", "RoCE v2" (from gid_attrs/types)
  std::string netdev;  // gid_attrs/ndevs
  bool ipv4_mapped = false;
  std::string ipv4;  // dotted form when ipv4_mapped
};

struct RdmaPort {
  int port = -1;
  std::string state;       // "4: ACTIVE"
  std::string link_layer;  // "Ethernet" / "InfiniBand"
  std::string rate;
  std::vector<Gid> gids;   // non-zero entries only
};

struct RdmaDevice {
  std::string name;  // mlx5_0
  std::string pci;
  int numa = -1;
  std::vector<std::string> netdevs;
  std::vector<RdmaPort> ports;
};

struct Gpu {
  int index = -1;  // PCI order
  std::string pci;
  int numa = -1;
  std::string name;  // from CUDA/NVML when known, else "NVIDIA <device id>"
  std::uint16_t device_id = 0;
  int cuda_index = -1;
  std::uint64_t memory_bytes = 0;
  int sm_count = -1;
  std::string uuid;
  int temperature_c = -1;
  int sm_clock_mhz = -1, mem_clock_mhz = -1;
};

struct Topology {
  std::string hostname;
  std::vector<Cpu> cpus;
  std::vector<NumaNode> numa_nodes;
  std::vector<PciDevice> pci;
  std::vector<Nic> nics;
  std::vector<RdmaDevice> rdma;
  std::vector<Gpu> gpus;
  InterruptTable interrupts;
  // nvlinks[i][j]: NVLink count between GPU i and j (0 when none or unknown).
  std::vector<std::vector<int>> nvlinks;
  // Where nvlinks came from: "NVML", "capture (nvidia-smi topo -m)"; "" = unknown, so
  // GPU-GPU links are shown as unknown, never as the PCIe path alone.
  std::string gpu_links_source;
  std::string default_route_nic;  // from /proc/net/route; "" unknown or none
  bool route_known = false;       // /proc/net/route was readable
  std::vector<std::string> warnings;  // e.g. "3 malformed /proc/interrupts lines skipped"

  const Nic* find_nic(const std::string& name) const;
  const PciDevice* find_pci(const std::string& address) const;
  int numa_of_cpu(int cpu) const;
};

// Connection class in nvidia-smi / NCCL words: "X" (self), "NV#", "PIX", "PXB",
// "PHB", "NODE", "SYS". A PCIe switch (upstream and downstream ports together)
// counts as one bridge, as in NCCL.
std::string path_class(const Topology& t, const std::string& pci_a, const std::string& pci_b);
// GPU-GPU cells are "?" when gpu_links_source is empty (a capture without nvidia-smi).
std::vector<std::vector<std::string>> gpu_gpu_matrix(const Topology& t);
// The link class of two GPUs: "NV#", the PCIe class when links are known, else "?".
std::string gpu_link_class(const Topology& t, int gpu_a, int gpu_b);

// Where a NIC's interrupts go, each fact on its own: the CPUs allowed (smp_affinity),
// the effective affinity, and the CPUs whose counters say they served them.
struct IrqPlacement {
  std::vector<int> allowed, effective, counted;  // unions over the NIC's IRQs; empty unknown
  std::uint64_t count = 0, off_node_count = 0;   // counts since boot; off_node: CPUs of another node
  double off_node_share() const { return count ? static_cast<double>(off_node_count) / static_cast<double>(count) : -1; }
};
IrqPlacement irq_placement(const Topology& t, const Nic& n);
// The share of a NIC's interrupts above which it is named as served off its node,
// by topo and by doctor alike.
constexpr double kOffNodeThreshold = 0.10;
std::vector<std::vector<std::string>> gpu_nic_matrix(const Topology& t);

struct DiscoverOptions {
  // NVLink counts, names, UUIDs, temperatures, clocks via NVML (dlopen), live root only.
  // CUDA facts (cuda_index, memory, SMs) are added by p2pscope_gpu's enrich_with_cuda(),
  // because this library never links CUDA.
  bool use_nvml = true;
};
Topology discover(const FsRoot& fs, const DiscoverOptions& opts = {});

// The `--format json` document of `p2pscope topo` (without metadata).
nlohmann::json to_json(const Topology& t);
// The readable form of `p2pscope topo`: CPU/NUMA summary, GPU/NIC matrix (as
// `nvidia-smi topo -m`), NIC table with where each NIC's IRQs are served, RDMA, warnings.
std::string to_text(const Topology& t);

}  // namespace p2pscope::topo
