#pragma once
// Host tuning and the NCCL doctor: IRQ snapshots and their differences, a per-NIC
// TX/RX CPU plan with IRQ affinities, applying and undoing that plan through an
// FsRoot, NCCL environment and NCCL_DEBUG=INFO log checks, and the findings report.
// Library code: nothing here prints or exits. Bad user input throws UsageError,
// run-time failures throw Error. All functions are safe to call from any thread
// (no shared state); FsRoot writes are the only side effects.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "p2pscope/fsroot.hpp"
#include "p2pscope/topo.hpp"

namespace p2pscope::tune {

// ---------------------------------------------------------------- IRQ snapshot
struct IrqRecord {
  int irq = -1;
  std::string chip;    // "PCI-MSIX-0000:00:05.0"
  std::string name;    // action names, "gve-ntfy-blk0@pci:0000:00:05.0"
  std::string device;  // owning NIC name, else PCI address from the chip, else ""
  bool is_nic = false;
  int numa = -1;       // NUMA node of the owning device; -1 unknown
  std::vector<int> affinity;           // smp_affinity_list
  std::vector<std::uint64_t> per_cpu;  // interrupt counts, same order as cpu_columns
  std::uint64_t total() const;
};

struct IrqSnapshot {
  std::string hostname;
  std::int64_t time_ns = 0;       // CLOCK_REALTIME when taken
  std::vector<int> cpu_columns;   // CPU id of each per_cpu column
  std::map<int, int> cpu_numa;    // CPU id -> NUMA node
  std::vector<IrqRecord> irqs;    // sorted by irq number
  std::vector<std::string> warnings;
};

// Builds a snapshot from a discovered topology (its interrupt table and NICs).
IrqSnapshot snapshot_from_topology(const topo::Topology& t, std::int64_t time_ns);
// discover() through `fs` (no NVML) and snapshot_from_topology(); affinity lists
// missing from the topology are read from /proc/irq/N/smp_affinity_list.
IrqSnapshot take_snapshot(const FsRoot& fs);

nlohmann::json to_json(const IrqSnapshot& s);
// Throws UsageError naming the missing/invalid field.
IrqSnapshot snapshot_from_json(const nlohmann::json& j);

// ------------------------------------------------------------------ IRQ diff
struct IrqDelta {
  int irq = -1;
  std::string name, device;
  int numa = -1;
  std::uint64_t count = 0;            // interrupts between the snapshots
  std::uint64_t remote_count = 0;     // of those, served by CPUs off the device's node
  double per_s = 0;
};
struct CpuLoad {
  int cpu = -1;
  int numa = -1;
  std::uint64_t count = 0;
  double per_s = 0;
};
struct NicLoad {
  std::string nic;
  int numa = -1;
  std::uint64_t count = 0, remote_count = 0;
  double per_s = 0;
  std::vector<int> serving_cpus;  // CPUs that took at least one of its interrupts
};
// A NIC whose interrupts were mostly (>= 50 %) served by CPUs of another node, or
// whose IRQ affinities exclude its own node entirely.
struct NumaMismatch {
  std::string nic;
  int nic_numa = -1;
  std::vector<int> irqs;
  std::vector<int> serving_numa;  // nodes whose CPUs served them
  double remote_share = 0;        // 0..1 of the NIC's interrupts
  std::string reason;
};
struct IrqDiff {
  double interval_s = 0;
  std::vector<IrqDelta> irqs;     // busiest first; zero-delta IRQs omitted
  std::vector<CpuLoad> cpus;      // busiest first; every CPU column
  std::vector<NicLoad> nics;
  double imbalance = 0;           // max / mean of per-CPU counts (0 when idle)
  std::vector<NumaMismatch> mismatches;
  std::vector<std::string> warnings;  // IRQs that appeared/disappeared, counter resets
};
// `b` taken after `a`. With a default-constructed `a` (no IRQs) the result covers
// everything since boot.
IrqDiff diff(const IrqSnapshot& a, const IrqSnapshot& b);
nlohmann::json to_json(const IrqDiff& d);

// ------------------------------------------------------------------ IRQ plan
struct PlanOptions {
  std::vector<std::string> nics;  // empty: every non-virtual NIC that has IRQs
  std::vector<int> reserve;       // CPUs kept away from NIC threads and IRQs
};
struct IrqTarget {
  int irq = -1;
  std::string name;
  std::string role;       // "tx", "rx", "combined" or "other" (by IRQ name)
  std::vector<int> cpus;  // one whole core (thread siblings)
  std::string mask;       // format_cpumask(cpus)
};
struct NicPlan {
  std::string name;
  int numa = -1;
  std::vector<int> tx_cpus, rx_cpus;
  std::vector<IrqTarget> irqs;
};
struct IrqPlan {
  std::string hostname;
  std::vector<NicPlan> nics;
  std::string tx_bindings, rx_bindings;  // NCCL_GPUDIRECTTCPX_{TX,RX}_BINDINGS values
  std::vector<std::string> warnings;
};
// Per NIC, on its NUMA node: TX and RX sets of whole cores, disjoint, none reserved;
// a node's free cores are split evenly among its NICs (TX first half, RX second).
// IRQs go round-robin over cores: tx/combined/other to RX cores except tx to TX.
// Throws UsageError for an unknown NIC or a node without two free cores.
IrqPlan make_plan(const topo::Topology& t, const PlanOptions& opts);
nlohmann::json to_json(const IrqPlan& p);
IrqPlan plan_from_json(const nlohmann::json& j);  // throws UsageError

// ------------------------------------------------------------ apply / reset
struct IrqChange {
  int irq = -1;
  std::string name;
  std::string from_mask, to_mask;
  std::vector<int> from_cpus, to_cpus;
  bool changed() const { return from_cpus != to_cpus; }
};
struct IrqRefusal {
  int irq = -1;
  std::string reason;  // "write failed: Input/output error (managed IRQ?)", "read back 0-3"
};
struct ApplyResult {
  bool dry_run = true;
  std::vector<IrqChange> changes;   // every IRQ of the plan, changed or not
  std::vector<int> applied;         // written and read back equal
  std::vector<IrqRefusal> refused;
};
// The exact contents of smp_affinity and smp_affinity_list of some IRQs, with the
// IRQ names and the host, so that reset restores byte for byte on the same machine.
struct IrqBackup {
  std::string hostname;
  std::int64_t time_ns = 0;
  struct Entry {
    int irq = -1;
    std::string name;
    std::string smp_affinity, smp_affinity_list;  // raw file contents
  };
  std::vector<Entry> entries;
};
nlohmann::json to_json(const IrqBackup& b);
IrqBackup backup_from_json(const nlohmann::json& j);  // throws UsageError

// Reads the current state of `irqs`. Throws UsageError naming IRQs that do not exist.
IrqBackup read_backup(const FsRoot& fs, const std::vector<int>& irqs);
// Writes `b` to `path` atomically (temporary file in the same folder, then rename).
void write_backup_file(const std::string& path, const IrqBackup& b);
IrqBackup read_backup_file(const std::string& path);

// Compares the plan with the machine (refusing, with the reason, IRQs that do not
// exist or now carry another name, and a plan made on another host). With
// dry_run=false it needs root on the live root (Error otherwise), first writes the
// backup of every planned IRQ to `backup_path` (atomically; required), then writes
// each changed IRQ, reads it back and records refusals without stopping.
ApplyResult apply_plan(const FsRoot& fs, const IrqPlan& plan, bool dry_run, const std::string& backup_path = "");
// Restores a backup. Throws UsageError when the backup names another host, an IRQ
// that no longer exists, or an IRQ whose name changed.
ApplyResult reset_from_backup(const FsRoot& fs, const IrqBackup& b, bool dry_run);

// ------------------------------------------------------------------ findings
struct Finding {
  std::string id;        // stable, e.g. "env.unknown_variable"
  std::string severity;  // "error", "warning", "info"
  std::string title;
  std::vector<std::string> evidence;  // log lines, files, values
  std::string fix;                    // export lines or commands; "" if none
};
nlohmann::json to_json(const Finding& f);

// NCCL_* variables: unknown names (with the closest real one), out-of-range values,
// contradictions. `env` maps names to values (only NCCL_* are looked at).
std::vector<Finding> check_nccl_env(const std::map<std::string, std::string>& env);
// The closest known NCCL variable by edit distance, "" when none is close enough.
std::string closest_nccl_variable(std::string_view name);
bool is_known_nccl_variable(std::string_view name);

// ------------------------------------------------------------ NCCL log parser
struct ChannelUse {
  int channel = -1;
  int from_rank = -1, to_rank = -1;
  std::string transport;  // "P2P/CUMEM", "P2P/IPC", "SHM", "NET/Socket", "NET/IB", "CollNet", ...
  std::string detail;     // the full "via ..." text, e.g. "NET/IB/0/GDRDMA"
  bool gdr = false;       // GDRDMA on a NET channel
};
struct GdrStatus {
  std::string gpu;   // bus id as logged
  std::string hca;   // HCA index / name
  bool enabled = false;
  std::string line;
};
struct NcclLog {
  std::string file;
  std::string nccl_version;       // "2.28.3+cuda13.0"
  int nranks = -1;
  std::vector<int> ranks;         // ranks seen in the log
  std::string network;            // from "Using network X" ("Socket", "IB", plugin name)
  std::vector<std::string> interfaces;  // NET/Socket or NET/IB "Using" entries, "eth0:10.0.0.1"
  std::vector<std::string> ib_devices;  // "mlx5_0:1/RoCE"
  std::vector<ChannelUse> channels;
  std::map<std::string, int> transports;  // transport -> channel-connection count
  std::vector<GdrStatus> gdr;
  int coll_channels = -1;         // from "N coll channels"
  int p2p_channels = -1;
  std::vector<std::string> env_lines;   // "NCCL_X set by environment to Y"
  std::vector<std::string> warn_lines;  // "NCCL WARN ..."
  std::vector<std::string> evidence;    // the key lines, in order, capped
  std::vector<std::string> warnings;    // parser warnings: truncated, garbled, empty
  bool init_complete = false;
  // The transports that really carried data (counts > 0), most used first.
  std::vector<std::string> used_transports() const;
  // "P2P", "SHM", "NET/Socket", "NET/IB", "CollNet", "mixed: ...", "unknown".
  std::string primary_transport() const;
};
NcclLog parse_nccl_log(std::string_view text, const std::string& file);
nlohmann::json to_json(const NcclLog& l);
std::vector<Finding> log_findings(const NcclLog& l);

// ------------------------------------------------------------------ doctor
// RDMA ports, GID index, NCCL_IB_HCA / NCCL_SOCKET_IFNAME advice, GPU-NIC path
// classes and NCCL_NET_GDR_LEVEL, RoCE TC/PFC/ECN, IRQ NUMA mismatches.
std::vector<Finding> topology_findings(const topo::Topology& t,
                                       const std::map<std::string, std::string>& env);
// The RoCE v2 GID with an IPv4-mapped address for NCCL_IB_GID_INDEX, -1 if none.
int roce_v2_ipv4_gid_index(const topo::RdmaPort& port);
// Interfaces fit for NCCL_SOCKET_IFNAME: up, not lo, not docker/veth/virbr/bridges.
std::vector<std::string> socket_interfaces(const topo::Topology& t);
std::vector<Finding> irq_findings(const IrqSnapshot& s);

struct DoctorReport {
  std::vector<NcclLog> logs;
  std::vector<Finding> findings;  // errors first, then warnings, then info
  std::map<std::string, std::string> env;  // NCCL_* at the time
  nlohmann::json topology;        // topo::to_json, or null
};
void sort_findings(std::vector<Finding>& f);
nlohmann::json to_json(const DoctorReport& r);

// Transport comparison from `doctor --compare-transports`.
struct TransportRun {
  std::string label;      // "default", "NCCL_P2P_DISABLE=1", ...
  std::map<std::string, std::string> env;
  NcclLog log;
  double busbw_bytes_per_s = 0;  // best bus bandwidth over the sizes, 0 if unknown
  int exit_code = 0;
  std::string error;
};

// Markdown in the sections of the NCCL optimization report template: executive
// summary, initial diagnosis, environment inspection, issues found, optimizations,
// performance results, log evidence, key learnings. `results` are p2pscope result
// JSON documents (bench/sweep), shown in the performance table.
std::string render_report(const DoctorReport& r, const topo::Topology* t,
                          const std::vector<nlohmann::json>& results,
                          const std::vector<TransportRun>& runs);

}  // namespace p2pscope::tune
