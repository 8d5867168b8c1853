#pragma once
// Host tuning and the NCCL doctor: IRQ snapshots and their differences, a per-NIC
// TX/RX CPU plan with IRQ affinities, applying and undoing that plan through an
// FsRoot, NCCL environment and NCCL_DEBUG=INFO log checks, and the findings report.
// Library code: nothing here prints or exits. Bad user input throws UsageError,
// run-time failures throw Error. All functions are safe to call from any thread
// (no shared state); FsRoot writes are the only side effects.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
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
// The policy (also printed by `irq plan` and in docs/irq.md), per NUMA node that
// has chosen NICs, over its whole cores in CPU order after --reserve:
//   system: the first 1/6 of the node's cores (none when --reserve is given);
//   TX, RX: a third each of the cores left, shared by all the node's NICs;
//   application: the rest. On GCP A3-high (52 cores a node) this gives NCCL's
//   reference: system 8, TX 14, RX 14, application 16 cores.
// The management NIC (the default-route NIC that no GPU is near, PIX/PXB) is left
// out unless named. IRQs stay where they are unless plan_irqs (NCCL leaves them at
// their defaults); "per-nic" gives each NIC its own disjoint TX and RX cores.
struct PlanOptions {
  std::vector<std::string> nics;  // empty: every physical NIC with IRQs, less the management NIC
  std::vector<int> reserve;       // CPUs kept away from NIC threads and IRQs
  std::string style = "shared";   // "shared" (one TX and one RX set per node) or "per-nic"
  int system_cores = -1;          // per node; -1: the policy above
  int tx_cores = -1, rx_cores = -1;  // per node (shared) or per NIC (per-nic); -1: the policy
  bool plan_irqs = true;          // compute IRQ targets (the CLI asks only with --move-irqs)
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
  std::vector<IrqTarget> irqs;  // empty when IRQs are left at their defaults
};
// How one NUMA node's CPUs are shared out.
struct NodeShare {
  int numa = -1;
  std::vector<int> reserved, system, tx, rx, application;
};
struct IrqPlan {
  std::string hostname;
  std::string policy;                 // one line, the rule that made this plan
  std::vector<NodeShare> nodes;
  std::vector<NicPlan> nics;
  std::vector<std::string> excluded;  // "eth0: management NIC (default route, no GPU near)"
  bool irqs_planned = false;
  std::string tx_bindings, rx_bindings;  // NCCL_GPUDIRECTTCPX_{TX,RX}_BINDINGS values
  std::vector<std::string> warnings;
};
// The management NIC by the rule above, "" when there is none or the route is unknown.
std::string management_nic(const topo::Topology& t);
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
  // IRQs left out of `entries` because a file of theirs was refused under --root (a
  // symlink, "..", a hard link): never copied, never written. Not saved in the file.
  std::vector<IrqRefusal> refused;
};
nlohmann::json to_json(const IrqBackup& b);
IrqBackup backup_from_json(const nlohmann::json& j);  // throws UsageError

// Reads the current state of `irqs` (under --root, with FsRoot::read_beneath: nothing from
// outside the tree). Throws UsageError naming IRQs that do not exist.
IrqBackup read_backup(const FsRoot& fs, const std::vector<int>& irqs);
// Writes `b` to `path` atomically (temporary file in the same folder, then rename), 0600:
// the affinities of a machine are its owner's to read.
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
// A diagnosis: what is wrong, the evidence, the fix. Not analyze's Finding (a measured
// anomaly of one config, with its value), which analyze groups by kind.
struct Finding {
  std::string id;        // stable, e.g. "env.unknown_variable"
  std::string severity;  // "error", "warning", "info"
  std::string title;
  std::vector<std::string> evidence;  // log lines, files, values
  std::string fix;                    // export lines or commands; "" if none
};
inline Finding make_finding(std::string id, std::string severity, std::string title, std::vector<std::string> evidence,
                            std::string fix) {
  return Finding{std::move(id), std::move(severity), std::move(title), std::move(evidence), std::move(fix)};
}
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
// One row of a result table, bandwidths in bytes/s (GB/s = 1e9); -1 where unknown
// (nccl-tests prints N/A for in-place columns of some ops).
struct PerfRow {
  std::uint64_t size_bytes = 0;
  std::uint64_t count = 0;
  std::string type, redop;
  double oop_time_us = -1, oop_algbw = -1, oop_busbw = -1;  // out-of-place
  double ip_time_us = -1, ip_algbw = -1, ip_busbw = -1;     // in-place
  long long oop_wrong = -1, ip_wrong = -1;       // -1: not checked (N/A)
  double oop_cv_pct = -1, ip_cv_pct = -1;         // nccl-tests -I: i_cv%, the iterations' spread
  std::vector<double> oop_iter_us;                // -I's JSON: each out-of-place iteration's time
  double busbw() const { return std::max(oop_busbw, ip_busbw); }
  bool wrong() const { return oop_wrong > 0 || ip_wrong > 0; }  // its data check failed
};
// A result table: an nccl-tests run in a log or in its plain output, a `bench nccl`
// JSON document, or a program's "allreduce 64MiB busbw=3.99 GB/s" line.
struct PerfRun {
  std::string source;     // file
  std::string tool;       // "nccl-tests", "bench nccl", "printed"
  std::string op;         // "all_reduce" (nccl-tests' name, from its binary or header), "" unknown
  std::string transport;  // the transport of the log it came with, "" unknown
  std::vector<PerfRow> rows;
  double avg_busbw = -1;  // nccl-tests' "# Avg bus bandwidth" line, bytes/s
  std::size_t rows_dropped = 0;  // beyond the cap on rows kept
  // nccl-tests' own facts of the run, where it printed them (its header, its "#  Rank"
  // lines, the JSON's config): each run of a file is counted apart from the others.
  std::string version;    // "2.19.1"
  int nranks = -1;        // ranks of this run (-1: its rank lines are missing)
  std::string gpu;        // the first rank's GPU, "NVIDIA H200"
  bool cpu_time = false;  // -C 1: the time columns are the host's CPU time, not the op's
  bool per_iteration = false;  // -I 1: i_min i_max i_p99 i_cv% beside each half
  // nccl-tests ends a run with its "Out of bounds" and "Avg bus bandwidth" lines: a table
  // without them was cut (the run killed, the file truncated); its complete rows stay.
  bool complete = false;
  std::size_t wrong_rows() const;  // rows whose data check failed (#wrong > 0)
  double peak_busbw() const;     // best busbw over the rows, -1 when none
  // The figure runs are compared by: nccl-tests' average when printed, else the peak.
  double headline_busbw() const { return avg_busbw > 0 ? avg_busbw : peak_busbw(); }
};
// Streams result tables out of lines; used by the NCCL log reader and for plain
// nccl-tests output. Bounded memory: at most kMaxRuns runs of kMaxRows rows.
class PerfTableParser {
 public:
  static constexpr std::size_t kMaxRuns = 256, kMaxRows = 4096;
  explicit PerfTableParser(std::string source) : source_(std::move(source)) {}
  // Returns true when the line belonged to a table (header, row, average).
  bool line(std::string_view l);
  // `transports`, when given, holds a transport per run in creation order (see
  // runs_started()); empty entries leave a run's transport as it is.
  std::vector<PerfRun> finish(const std::vector<std::string>* transports = nullptr);
  std::size_t runs_started() const { return started_; }
  std::size_t runs_dropped() const { return runs_dropped_; }

 private:
  PerfRun& current();
  bool header(std::string_view l);  // the column titles: where each figure is
  bool row(std::string_view l);
  // Where each figure of a row is, from the header's titles (-1: not printed): -I adds
  // four columns per half, -S a timestamp, nccl-tests < 2.10 has no root column.
  struct Half {
    int time = -1, algbw = -1, busbw = -1, wrong = -1, cv = -1;
  };
  struct Columns {
    int size = 0, count = 1, type = 2, redop = 3, needed = 0;
    Half oop, ip;
  };
  std::string source_, pending_op_, pending_version_, pending_gpu_;
  int pending_ranks_ = 0;
  bool pending_cpu_time_ = false;
  std::vector<PerfRun> runs_;
  bool open_ = false;  // the last run still takes rows
  Columns cols_;
  std::size_t runs_dropped_ = 0, started_ = 0;
  std::vector<std::size_t> index_;  // creation number of each kept run
};
// `bench nccl --format json` documents (or a JSON array of them); throws UsageError
// when it is not one.
PerfRun perf_from_bench_json(const nlohmann::json& j, const std::string& source);
// nccl-tests' own `-J FILE` JSON (version 2: config, results, average_bus_bandwidth), every
// field checked; UsageError naming the file and the field for one that is not.
bool is_nccl_tests_json(const nlohmann::json& j);
PerfRun perf_from_nccl_tests_json(const nlohmann::json& j, const std::string& source);
nlohmann::json to_json(const PerfRun& r);
// Where a point-to-point table (sendrecv: one link, one direction) stands beside a
// collective's nccl-tests "Avg bus bandwidth" (an average over its whole size sweep), the
// warning that the two are not one figure: the seeds set 19.18 GB/s of an all-reduce's
// average against a 2.75 GB/s point-to-point peak, while that run's busbw at 1 GB was
// 78.35 (issue 44 item 5). "" when no such pair is among `runs`.
std::string p2p_against_average(const std::vector<const PerfRun*>& runs);

struct NcclLog {
  std::string file;
  std::string nccl_version;       // "2.28.3+cuda13.0"
  int nranks = -1;
  std::vector<int> ranks;         // ranks seen in the log
  std::string network;            // from "Using network X" ("Socket", "IB", plugin name)
  std::vector<std::string> interfaces;  // NET/Socket or NET/IB "Using" entries, "eth0:10.0.0.1"
  std::vector<std::string> ib_devices;  // "mlx5_0:1/RoCE"
  std::vector<ChannelUse> channels;    // the first kMaxChannels; transports counts them all
  std::map<std::string, int> gdr_channels;  // transport -> channel connections with GDRDMA
  std::map<std::string, int> transports;  // transport -> channel-connection count
  std::vector<GdrStatus> gdr;
  int coll_channels = -1;         // from "N coll channels"
  int p2p_channels = -1;
  std::vector<std::string> env_lines;   // "NCCL_X set by environment to Y"
  std::vector<std::string> warn_lines;  // "NCCL WARN ..."
  std::vector<std::string> evidence;    // the key lines, in order, capped
  std::vector<std::string> warnings;    // parser warnings: truncated, garbled, empty
  bool init_complete = false;
  int nccl_lines = 0;             // 0: plain program output (e.g. nccl-tests without NCCL_DEBUG)
  std::vector<PerfRun> perf;      // result tables found in the log, transport filled in
  std::string socket_ifname;      // NCCL_SOCKET_IFNAME as the log says it was set, "" if not
  // The external net plugin as the log tells it: what its run loaded, not what this
  // machine would load. net_plugin "p2pscope-refnet (v11)" from "Loaded net plugin";
  // net_plugin_request from "NCCL_NET_PLUGIN set by environment to" or "Plugin name set
  // by env to"; net_plugin_none when NCCL said it found none ("Could not find",
  // "No plugin found"); net_plugin_lines the proof.
  std::string net_plugin, net_plugin_request;
  bool net_plugin_none = false;
  std::vector<std::string> net_plugin_lines;
  // The lines the signature catalogue (nccl_signatures.hpp) looks for, by marker key:
  // the first few of each (raw text: findings sanitize what they print) and the count.
  std::map<std::string, std::vector<std::string>> marks;
  std::map<std::string, int> mark_counts;
  int info_lines = 0;   // "NCCL INFO" lines: 0 in a NCCL_DEBUG=WARN log
  // A file can hold several runs (a user who reruns into one log): each is its own
  // NcclLog, numbered 1..run_count in file order.
  int run_index = 1, run_count = 1;
  // "run.log" or "run.log (run 2 of 3)": how findings name this run.
  std::string label() const;
  const std::vector<std::string>& marked(const std::string& key) const;
  // NET/Socket ran over the loopback device only: not a network measurement.
  bool loopback() const;
  // The transports that really carried data (counts > 0), most used first.
  std::vector<std::string> used_transports() const;
  // "P2P", "SHM", "NET/Socket", "NET/IB", "CollNet", "mixed: ...", "unknown".
  std::string primary_transport() const;
};
NcclLog parse_nccl_log(std::string_view text, const std::string& file);
// Reads the file line by line (memory bounded by the caps above, not the file size).
// Throws UsageError when it cannot be opened.
NcclLog read_nccl_log_file(const std::string& path);
// The same file read run by run: a new run starts where a process (host:pid) that the
// current run has not seen prints a line after the current run has seen all its ranks
// (every "rank R nranks N" from 0 to N-1). One run's ranks, transports, tables and
// environment never mix with another's. At most kMaxRunsPerFile runs; later lines join
// the last one (with a warning).
constexpr std::size_t kMaxRunsPerFile = 64;
std::vector<NcclLog> read_nccl_log_runs(const std::string& path);
std::vector<NcclLog> parse_nccl_log_runs(std::string_view text, const std::string& file);
nlohmann::json to_json(const NcclLog& l);
std::vector<Finding> log_findings(const NcclLog& l);
// The bus bandwidth (bytes/s) no table of this run can pass: twice the largest totalBw
// that NCCL's own topology line gives the GPU's links ("=== System : maxBw X totalBw Y
// ==="); twice, as NVLS all-reduce can pass the per-GPU link rate. -1 where the log has no
// topology line. A table above it is refused by name (perf.beyond_links): a misread layout.
double links_limit(const NcclLog& l);

// ------------------------------------------------------------------ doctor
// RDMA ports, GID index, NCCL_IB_HCA / NCCL_SOCKET_IFNAME advice, GPU-NIC path
// classes and NCCL_NET_GDR_LEVEL, RoCE TC/PFC/ECN, IRQ NUMA mismatches.
// `env_source` names where each variable came from ("log run.log"); a variable not
// in it is labelled as the doctor's own shell.
std::vector<Finding> topology_findings(const topo::Topology& t, const std::map<std::string, std::string>& env,
                                       const std::map<std::string, std::string>& env_source = {});
// The RoCE v2 GID with an IPv4-mapped address for NCCL_IB_GID_INDEX, -1 if none.
int roce_v2_ipv4_gid_index(const topo::RdmaPort& port);
// Interfaces fit for NCCL_SOCKET_IFNAME: up, not lo, not docker/veth/virbr/bridges, not
// the management NIC (unless it is the only one).
std::vector<std::string> socket_interfaces(const topo::Topology& t);
std::vector<Finding> irq_findings(const IrqSnapshot& s);
// One finding naming every NIC whose interrupts landed off its node above
// topo::kOffNodeThreshold (the rule `topo` marks NO by), with allowed / effective /
// counted CPUs as separate evidence.
std::vector<Finding> irq_placement_findings(const topo::Topology& t);
// For a report made from a captured tree: fix lines that inspect the live machine
// become what to capture on the host; changes are marked "on the host".
void advise_for_capture(std::vector<Finding>& findings, const std::string& root);
// "P2P 160.70 GB/s, SHM 23.30, Socket 3.20: socket fallback costs 50x" over the logs'
// result tables (nccl-tests' average where printed, else the peak); "" with fewer than
// two transports. Loopback runs are named as such and left out of the ratio.
std::string transport_comparison(const std::vector<NcclLog>& logs);

struct DoctorReport {
  std::vector<NcclLog> logs;
  std::vector<PerfRun> results;   // from --results (bench nccl JSON) and compare runs
  std::string root = "/";         // a captured tree when not "/"
  std::map<std::string, std::string> env_source;  // variable -> "log X"; absent: the doctor's shell
  std::vector<Finding> findings;  // errors first, then warnings, then info
  std::map<std::string, std::string> env;  // NCCL_* at the time
  nlohmann::json topology;        // topo::to_json, or null
};
void sort_findings(std::vector<Finding>& f);

// What `doctor` is given: logs (NCCL_DEBUG=INFO or plain nccl-tests output), `bench
// nccl --format json` files, a root (captured tree or "/") and the NCCL_* variables of
// the doctor's own shell.
struct DoctorInputs {
  std::vector<std::string> log_files, result_files;
  std::string root = "/";
  std::map<std::string, std::string> shell_env;
};
// Reads everything (logs streamed), runs every check and sorts the findings. Facts
// about a run come from its log: a variable a log sets overrides the shell's (the
// first log that sets it wins, named in env_source); env checks run per source.
// The topology (when readable) is stored in *topo_out. Throws UsageError for an
// unreadable log or results file.
DoctorReport diagnose(const DoctorInputs& in, topo::Topology* topo_out = nullptr, bool* have_topo = nullptr);
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
// performance results (every result table of the logs and r.results, with the
// transport each came from, and the transport comparison), log evidence, key
// learnings. Sections that do not apply (no RDMA device) take one line.
std::string render_report(const DoctorReport& r, const topo::Topology* t, const std::vector<TransportRun>& runs);

}  // namespace p2pscope::tune
