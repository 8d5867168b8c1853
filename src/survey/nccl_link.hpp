#pragma once
// --transport nccl: a link measured by NCCL's own send/recv, as a job's collectives
// would move its bytes between the two hosts (NCCL's socket transport, IB, or the net
// plugin NCCL_NET_PLUGIN loads, whichever NCCL picks on that NIC).
//
// Each side runs one child process of this binary (`bench gpu --backend nccl --pairs
// 0:1,1:0`): rank 0 on the server host, rank 1 on the client host, meeting at rank 0's
// address on the rail with a fresh secret. A child of its own, not a communicator in the
// survey's process, because NCCL chooses its interfaces once per process
// (NCCL_SOCKET_IFNAME, NCCL_IB_HCA) and each rail must go over its own NIC; and because
// a hung or crashed NCCL then takes one link down, not the host's survey. Each child
// has its host's own NCCL_HOSTID, so namespace hosts of one machine (and ranks sharing a
// GPU) are hosts to NCCL too. The two directions run one after the other, each alone.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "p2pscope/free_port.hpp"  // free_port_on: rank 0's rendezvous port
#include "survey/survey.hpp"

namespace p2pscope {
class ChildProcess;
}

namespace p2pscope::survey {

struct NcclLinkSpec {
  int rank = 0;                 // 0: the server host's side (it reports), 1: the client's
  std::string rendezvous_ip;    // rank 0's address on the rail
  int port = 0;
  std::string token;            // the pair's secret (P2PSCOPE_TOKEN of both children)
  std::string nic;              // this side's NIC on the rail
  std::string host_id;          // NCCL_HOSTID: this survey host
  std::string gpu;              // CUDA_VISIBLE_DEVICES for the child ("" leaves it)
  std::uint64_t size_bytes = 0;
  int iters = 5, warmup = 1;
  double timeout_s = 60;        // the child's bound (the step's: past it the rank is dropped)
  std::string dir;              // its NCCL log and its stderr (created)
  std::string self = "/proc/self/exe";
};

// The child's environment on top of this process's: rendezvous, ranks, NCCL_HOSTID, the
// rail's NIC as NCCL_SOCKET_IFNAME ("=name": that one, not a prefix) and, where an RDMA
// device is that NIC's PCI function, NCCL_IB_HCA; NCCL_DEBUG=INFO into the dir.
std::map<std::string, std::string> nccl_link_env(const NcclLinkSpec& s);

// The RDMA device (/sys/class/infiniband/X) on NIC `nic`'s PCI function, "" for none.
std::string rdma_device_of(const std::string& nic, const std::string& sysfs_root = "/sys");

// Why this host cannot run NCCL links ("" where it can): no NCCL in this build, no GPU.
std::string nccl_link_problem();

// CUDA_VISIBLE_DEVICES for a link's child: the process's GPU under --per gpu (its
// launcher's local rank), else the rail's (rail modulo the GPUs), through the list this
// process was given where it has one.
std::string gpu_for_link(int rail, bool per_gpu);

// The folder of one link side's files under the temp dir: kind, both hosts, pass, round,
// rail and this pid. Host names come from other ranks (a stranger's, without a token), and
// the folder is removed after a clean run: only letters, digits, '-' and '_' of them are kept.
std::string nccl_link_dir(const std::string& kind, const std::string& server_host, const std::string& client_host,
                          int pass, int round, int rail);

// Whether `j` (another rank's entry in the step's ports; a stranger's, without a token)
// is a link offer as start_nccl_server makes it: {"port": 1..65535, "token": 32 hex digits}.
bool is_link_offer(const nlohmann::json& j);

// Rank 0's JSON (bench gpu's rows) into the record: bw, c2s from the 1 -> 0 row's samples
// and s2c from 0 -> 1 (each sample's rate); lat and size, both rows' times as latency_ns
// (one-way: NCCL's send/recv is one way). "" or why it holds no figure.
std::string take_nccl_figures(Record& rec, const std::string& json_text);

// The path NCCL took, from a child's NCCL_DEBUG=INFO file: "NET/Socket eth1" ("" unknown).
std::string nccl_path_of(const std::string& log_path);

class NcclLinkSide {
 public:
  explicit NcclLinkSide(NcclLinkSpec spec);  // starts the child; Error when it cannot
  ~NcclLinkSide();
  NcclLinkSide(const NcclLinkSide&) = delete;
  NcclLinkSide& operator=(const NcclLinkSide&) = delete;
  // Waits for the child. Rank 0: the figures (or the failure) into rec; rank 1: only a
  // failure, for rank 0's gather to join with the other side's (merge_link_sides). The
  // dir is removed after a clean run, kept (and named) after a failure.
  void finish(Record& rec);

 private:
  NcclLinkSpec spec_;
  std::unique_ptr<ChildProcess> child_;
};

// Rank 0: one record per task where both sides of an NCCL link reported (the server's
// figures; the client's failure joined to a failure, or kept where the server had none).
std::vector<Record> merge_link_sides(std::vector<Record> records);

}  // namespace p2pscope::survey
