#pragma once
// `p2pscope survey`: one process per host, started by a launcher and met over the
// rendezvous (bootstrap), measures every host's links in rounds of disjoint pairs and
// says which link, NIC or host is slow (docs/survey.md).
//
// Rank 0 drives: it sends each step's tasks to every rank (broadcast_live), each rank
// runs its part (servers listen, clients run bench tcp's engine against them), and
// rank 0 gathers the records (gather_live). A rank that dies or hangs is dropped there
// and the survey goes on without it; every record is handed to `record` as soon as its
// step ends, so nothing measured is lost when the run stops later.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "p2pscope/tcp.hpp"
#include "survey/expect.hpp"
#include "survey/outliers.hpp"
#include "survey/rails.hpp"
#include "survey/schedule.hpp"
#include "survey/verdict.hpp"

namespace p2pscope {
class Bootstrap;
}

namespace p2pscope::survey {

// One session's figures, as the client side saw both sides.
struct Record {
  int pass = 1, round = 0;
  std::string step;          // "bw", "lat", "local", "gpu" (a device pair inside the host)
  int server = 0, client = 0, rail = 0;
  int group = 2;             // hosts of the group it ran in at once (2: the pair alone)
  int dev_src = -1, dev_dst = -1;  // gpu: the directed device pair (bench gpu's device numbers)
  std::string backend;             // gpu: ce, or host where the host has no GPU pair
  std::uint64_t size_bytes = 0;    // size: the message size of its ping-pongs (latency_ns)
  std::string failure;       // empty: completed
  std::string via;           // --transport nccl: the path NCCL took ("NCCL 2.28.3, NET/Socket eth1")
  std::vector<double> c2s_bytes_per_s, s2c_bytes_per_s;  // per timed round, as each receiver saw it
  std::vector<double> latency_ns;                        // one-way: round trip / 2
  double wall_s = 0;
};

struct Options {
  PairsSpec pairs;
  std::uint64_t seed = 1;
  std::vector<std::string> nics;          // one per rail, the same names on every host; empty: found
  std::vector<Rail> rails;                // --rails; empty: NIC i with NIC i
  std::vector<std::string> expect_hosts;  // --hosts: the host names the ranks must be, each once
  tcp::Params bw, lat;                    // the two sessions of a link (bidir, latency)
  std::vector<std::uint64_t> sizes;       // --sizes: ping-pongs of each size per link (a campaign)
  std::string transport = "tcp";          // tcp (sockets), net (an NCCL net plugin: transport.hpp), nccl (nccl_link.hpp)
  std::string plugin;                     // net: a path, file or NAME; empty: NCCL_NET_PLUGIN's rules
  bool latency = true, local = true, recheck = true;
  // --per gpu: a process per GPU (as torchrun and srun --ntasks-per-node=G start them).
  // The ranks on one host make that host; rail r's sessions run from its r-th rank (mod
  // their count), so each NIC's sessions run in its GPU's process; the local ceiling and
  // the device pairs from its first rank.
  bool per_gpu = false;
  // Inside each host: every directed device pair, copied by `gpu_backend` ("auto": ce with
  // 2+ GPUs, the host backend (memory between NUMA nodes) without a GPU; "none": not run).
  std::string gpu_backend = "auto";
  std::uint64_t gpu_size = 256ull << 20;
  int gpu_iters = 9;
  double round_timeout_s = 60;  // a step's bound: a rank silent past it is dropped
  double max_time_s = 0;        // the whole survey's bound (0: none); rounds past it are not started
  OutlierOptions outliers;
  Expectation expect;           // --expect: optional; a whole class below it is a finding
  std::string rendezvous_host;  // its NIC is left out when the NICs are found
  std::vector<Record> resumed;  // --resume: records of an earlier run of these hosts, not measured again
  std::function<void(const std::string&)> progress;     // rank 0
  std::function<void(const nlohmann::json&)> record;    // rank 0: each record, as its step ends
};

struct NicInfo {
  std::string name, ipv4;
  long long speed_mbps = -1;
};

struct HostInfo {
  int rank = 0;
  std::string host, boot_id;
  int cpus = 0;
  std::vector<int> allowed_cpus;  // where this rank may run (sched_getaffinity)
  std::vector<NicInfo> nics;  // by rail
  std::string transport;      // what its links move data over ("tcp", the plugin it loaded)
  std::string problem;        // set when this host cannot take part (a NIC it lacks)
};

struct Result {
  std::vector<HostInfo> hosts;
  std::vector<Rail> rails;  // resolved: --rails, or NIC i with NIC i
  std::string transport = "tcp";  // rank 0's: every host's is the same (check_hosts)
  std::vector<Record> records;
  std::vector<std::string> gone;  // by host: why it dropped out ("" while present)
  std::vector<std::vector<int>> members;  // by host: its ranks, lowest first (one each unless --per gpu)
  std::vector<Judged> judged;
  Verdict verdict;
  ClusterNames names;
  int rounds = 0, recheck_rounds = 0;
  double wall_s = 0;
  bool shared_kernel = false;  // every host on one kernel (namespaces of one machine)
  // ... and two of them may run on the same CPUs: local ceilings and ping-pongs one at a
  // time, or each would time the other's share of a core. Hosts pinned to CPUs of their
  // own run them at once, as separate machines do.
  bool shared_cpus = false;
  std::vector<std::string> notes;
};

// This host as it enters the survey (NICs resolved, or `problem` set).
HostInfo describe_host(int rank, const Options& o);
// UsageError naming what is wrong with the hosts together: a host's problem, two ranks
// on one host, hosts with different rail counts or transports, a --hosts list with a duplicate, a rank
// on a host the list lacks, a listed host without a rank.
void check_hosts(const std::vector<HostInfo>& hosts, const Options& o);
// Every rank's description (by rank) into r.hosts and r.members: one host a rank, or under
// --per gpu the ranks of one host name together (the lowest rank's description stands for
// the host, in the order of their lowest ranks). UsageError for a rank's problem, or for
// ranks of one host that see different NICs.
void group_ranks(const std::vector<HostInfo>& ranks, const Options& o, Result& r);
// The host of `rank` in `members` (-1: none).
int host_of(const std::vector<std::vector<int>>& members, int rank);

// Collective over `boot`: every rank calls it. Rank 0 returns the whole result; the
// others return theirs (hosts only) when rank 0 ends the survey.
Result run(Bootstrap& boot, const Options& o);

// Figures for the statistics, from records (pass 1 and 2, both directions, latency).
// `rails` empty: NIC i with NIC i.
std::vector<Figure> figures_of(const std::vector<Record>& records, const std::vector<HostInfo>& hosts,
                               const std::vector<Rail>& rails = {});
// The class of link a <-> b on `rail`: "NIC 200 Mb/s", the slower end's speed.
std::string link_class_of(const std::vector<HostInfo>& hosts, const std::vector<Rail>& rails, int a, int b, int rail);
// What identifies a task across a resumed run: "1:bw:host0:host1:0".
std::string task_key(const Record& r, const std::vector<HostInfo>& hosts);

nlohmann::json to_json(const Record& r);
Record record_from_json(const nlohmann::json& j);  // Error on a malformed record
nlohmann::json to_json(const HostInfo& h);
HostInfo host_from_json(const nlohmann::json& j);

}  // namespace p2pscope::survey
