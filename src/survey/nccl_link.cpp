// A survey link over NCCL's own send/recv (nccl_link.hpp).
#include "survey/nccl_link.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/child_process.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/file_tail.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/launcher.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/tune.hpp"
#include "survey/transport.hpp"

namespace p2pscope::survey {
namespace fs = std::filesystem;
namespace {

// The samples of one row of bench gpu's JSON, each checked: positive and finite.
std::vector<double> row_samples(const nlohmann::json& row) {
  std::vector<double> out;
  const auto s = row.find("samples_ns");
  if (s == row.end() || !s->is_array()) return out;
  for (const auto& v : *s)
    if (v.is_number() && v.get<double>() > 0 && v.get<double>() < 1e15) out.push_back(v.get<double>());
  return out;
}

}  // namespace

std::string rdma_device_of(const std::string& nic, const std::string& sysfs_root) {
  std::error_code ec;
  const fs::path nic_dev = fs::canonical(fs::path(sysfs_root) / "class/net" / nic / "device", ec);
  if (ec) return "";
  for (const auto& e : fs::directory_iterator(fs::path(sysfs_root) / "class/infiniband", ec)) {
    std::error_code ec2;
    if (fs::canonical(e.path() / "device", ec2) == nic_dev && !ec2) return e.path().filename().string();
  }
  return "";
}

std::map<std::string, std::string> nccl_link_env(const NcclLinkSpec& s) {
  std::map<std::string, std::string> env = {
      {"RANK", std::to_string(s.rank)},
      {"WORLD_SIZE", "2"},
      {"LOCAL_RANK", "0"},
      {"LOCAL_WORLD_SIZE", "1"},
      {"P2PSCOPE_RENDEZVOUS", fmt::format("{}:{}", s.rendezvous_ip, s.port)},
      {"P2PSCOPE_TOKEN", s.token},
      {"NCCL_HOSTID", "p2pscope-survey-" + s.host_id},
      // The rail's NIC and no other, for NCCL's sockets and its own bootstrap alike.
      {"NCCL_SOCKET_IFNAME", "=" + s.nic},
      {"NCCL_NVLS_ENABLE", "0"},
      {"NCCL_DEBUG", "INFO"},
      {"NCCL_DEBUG_FILE", (fs::path(s.dir) / fmt::format("nccl-rank{}.log", s.rank)).string()}};
  if (const std::string hca = rdma_device_of(s.nic); !hca.empty()) env["NCCL_IB_HCA"] = "=" + hca;
  if (!s.gpu.empty()) env["CUDA_VISIBLE_DEVICES"] = s.gpu;
  return env;
}

std::string nccl_link_problem() {
  const gpu::RuntimeInfo info = gpu::runtime_info();
  if (!info.nccl_built)
    return "--transport nccl: this p2pscope was built without NCCL (install NCCL's headers and rebuild), or "
           "survey with --transport tcp or net";
  if (info.device_count == 0)
    return fmt::format("--transport nccl: no GPU can be used here ({}); NCCL's send/recv needs one on every host: "
                       "survey these hosts with --transport tcp or net",
                       info.why_no_gpu.empty() ? "none visible" : info.why_no_gpu);
  return "";
}

std::string gpu_for_link(int rail, bool per_gpu) {
  int index = rail < 0 ? 0 : rail;
  if (per_gpu) index = detect_launcher().local_rank;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
    const std::vector<std::string> list = split_fields(visible, ',');
    if (!list.empty()) return std::string(trim(list[static_cast<std::size_t>(index) % list.size()]));
  }
  const int count = std::max(1, gpu::runtime_info().device_count);
  return std::to_string(index % count);
}

std::string nccl_link_dir(const std::string& kind, const std::string& server_host, const std::string& client_host,
                          int pass, int round, int rail) {
  const auto part = [](const std::string& name) {
    std::string out;
    for (const char c : name.substr(0, 64))
      out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
    return out;
  };
  return (fs::temp_directory_path() / fmt::format("p2pscope-survey-nccl-{}-{}-{}-p{}r{}-rail{}-{}", part(kind),
                                                  part(server_host), part(client_host), pass, round, rail, ::getpid()))
      .string();
}

bool is_link_offer(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("port") || !j.contains("token")) return false;
  const auto& port = j["port"];
  const auto& token = j["token"];
  return port.is_number_integer() && port.get<long long>() >= 1 && port.get<long long>() <= 65535 &&
         token.is_string() && token.get<std::string>().size() == 32 &&
         token.get<std::string>().find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string take_nccl_figures(Record& rec, const std::string& json_text) {
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "rank 0's JSON does not parse";
  const auto rows = j.find("rows");
  if (rows == j.end() || !rows->is_array() || rows->empty()) return "rank 0's JSON holds no rows";
  rec.c2s_bytes_per_s.clear(), rec.s2c_bytes_per_s.clear(), rec.latency_ns.clear();
  for (const auto& row : *rows) {
    if (!row.is_object()) return "rank 0's JSON has a row that is no object";
    if (!row.value("supported", false))
      return "NCCL's send/recv was not supported: " + external_text(row.value("reason", std::string("?")), 300);
    if (row.value("check", std::string()).find("FAIL") != std::string::npos) return "NCCL's data check failed";
    const int src = row.value("src", -1), dst = row.value("dst", -1);
    const auto bytes = row.value("size_bytes", std::uint64_t{0});
    if (bytes == 0 || !((src == 0 && dst == 1) || (src == 1 && dst == 0)))
      return "rank 0's JSON has a row of neither direction of the pair";
    const std::vector<double> ns = row_samples(row);
    if (ns.empty()) return fmt::format("rank 0's JSON has no time for {} -> {}", src, dst);
    if (rec.step == "bw") {
      auto& rates = src == 1 ? rec.c2s_bytes_per_s : rec.s2c_bytes_per_s;  // rank 1 is the client
      for (double t : ns) rates.push_back(static_cast<double>(bytes) / t * 1e9);
    } else {
      rec.latency_ns.insert(rec.latency_ns.end(), ns.begin(), ns.end());
    }
  }
  if (rec.step == "bw" && (rec.c2s_bytes_per_s.empty() || rec.s2c_bytes_per_s.empty()))
    return "rank 0's JSON lacks one direction of the pair";
  return "";
}

std::string nccl_path_of(const std::string& log_path) {
  if (!fs::exists(log_path)) return "";
  const tune::NcclLog log = tune::read_nccl_log_file(log_path);
  std::string path = log.network.empty() ? "" : "NET/" + log.network;
  for (const auto& i : log.interfaces) path += (path.empty() ? "" : " ") + i.substr(0, i.find(':'));
  for (const auto& d : log.ib_devices) path += (path.empty() ? "" : " ") + d;
  if (!log.nccl_version.empty()) path = "NCCL " + log.nccl_version + (path.empty() ? "" : ", " + path);
  return external_text(path, 200);
}

NcclLinkSide::NcclLinkSide(NcclLinkSpec spec) : spec_(std::move(spec)) {
  fs::create_directories(spec_.dir);
  ChildSpec c;
  c.program = spec_.self;
  // Both ranks run the same arguments (the ranks check it); rank 0 prints the JSON.
  c.argv = {"p2pscope", "bench", "gpu", "--backend", "nccl", "--pairs", "0:1,1:0", "--sizes",
            std::to_string(spec_.size_bytes), "--iters", std::to_string(spec_.iters), "--warmup",
            std::to_string(spec_.warmup), "--format", "json"};
  c.env_set = nccl_link_env(spec_);
  c.env_unset = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                 "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS",
                 "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "P2PSCOPE_TOKEN_FILE",
                 "MASTER_ADDR", "MASTER_PORT"};
  c.out = ChildSpec::Output::capture;
  c.err = ChildSpec::Output::file;
  c.err_path = (fs::path(spec_.dir) / fmt::format("rank{}.err", spec_.rank)).string();
  child_ = std::make_unique<ChildProcess>(c);
}

NcclLinkSide::~NcclLinkSide() = default;

void NcclLinkSide::finish(Record& rec) {
  ChildWait how;
  how.timeout_s = spec_.timeout_s;
  how.kill_after_s = 3;
  const ChildResult res = child_->wait(how);
  const fs::path dir(spec_.dir);
  const std::string log = (dir / fmt::format("nccl-rank{}.log", spec_.rank)).string();
  std::string why;
  if (res.exit_code != 0) {
    const std::string tail = last_lines_of(dir / fmt::format("rank{}.err", spec_.rank), 3, 1500);
    why = fmt::format("NCCL rank {} ({}) {}{}", spec_.rank, spec_.rank == 0 ? "server side" : "client side",
                      res.timed_out ? fmt::format("timed out after {:.0f} s", spec_.timeout_s)
                                    : fmt::format("exited {}", res.exit_code),
                      tail.empty() ? "" : ": " + tail);
  } else if (spec_.rank == 0) {
    why = take_nccl_figures(rec, res.out);
  }
  if (spec_.rank == 0) rec.via = nccl_path_of(log);
  if (why.empty()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    return;
  }
  rec.failure = fmt::format("{} (its files: {})", why, dir.string());
}

std::vector<Record> merge_link_sides(std::vector<Record> records) {
  std::vector<Record> out;
  std::map<std::tuple<int, int, std::string, int, int, int, std::uint64_t>, std::size_t> at;
  for (Record& r : records) {
    const auto key = std::make_tuple(r.pass, r.round, r.step, r.server, r.client, r.rail, r.size_bytes);
    const auto it = at.find(key);
    if (r.step == "local" || r.step == "gpu" || it == at.end()) {
      if (r.step != "local" && r.step != "gpu") at[key] = out.size();
      out.push_back(std::move(r));
      continue;
    }
    Record& kept = out[it->second];
    if (!kept.failure.empty() && r.failure.empty()) std::swap(kept, r);  // the side with the figures stays
    if (r.failure.empty()) continue;
    if (kept.failure.empty()) {
      // The figures came through, so the other side's trouble was after them (its exit):
      // kept as a note on the link, not as its failure.
      kept.via += (kept.via.empty() ? "" : "; ") + ("the other side: " + r.failure);
    } else {
      kept.failure += "; " + r.failure;
    }
  }
  return out;
}

}  // namespace p2pscope::survey
