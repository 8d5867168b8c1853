// NCCL's send/recv between two ranks of this machine: see nccl_pair_run.hpp.
#include "versus/nccl_pair_run.hpp"

#include <unistd.h>

#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/auth.hpp"
#include "p2pscope/child_process.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/file_tail.hpp"
#include "p2pscope/free_port.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::versus {
using tune::NcclLog;
namespace fs = std::filesystem;
namespace {

ChildSpec rank_spec(const NcclPairSpec& s, int rank, int port, const std::string& token, const fs::path& dir) {
  ChildSpec c;
  c.program = s.self;
  c.argv = {"p2pscope", "bench", "gpu", "--backend", "nccl", "--pairs", "0:1", "--sizes", std::to_string(s.size_bytes),
            "--iters", std::to_string(s.iters), "--warmup", std::to_string(s.warmup),
            // Every rank runs the same command (the ranks check it); only rank 0 writes.
            "--format", "json", "--out", (dir / "nccl-rank0.json").string(), "--force"};
  c.env_set = s.env;
  c.env_set["RANK"] = std::to_string(rank);
  c.env_set["WORLD_SIZE"] = "2";
  c.env_set["LOCAL_RANK"] = "0";
  c.env_set["LOCAL_WORLD_SIZE"] = "1";
  c.env_set["P2PSCOPE_RENDEZVOUS"] = fmt::format("127.0.0.1:{}", port);
  c.env_set["P2PSCOPE_TOKEN"] = token;
  // Two "hosts" to NCCL: its network transport, even where both ranks share one GPU.
  c.env_set["NCCL_HOSTID"] = fmt::format("p2pscope-against-nccl-{}-host{}", ::getpid(), rank);
  c.env_set["NCCL_DEBUG"] = "INFO";
  c.env_set["NCCL_DEBUG_FILE"] = (dir / fmt::format("nccl-rank{}.log", rank)).string();
  if (!s.gpu.empty()) c.env_set["CUDA_VISIBLE_DEVICES"] = s.gpu;
  c.env_unset = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "PMI_RANK",
                 "PMI_SIZE", "P2PSCOPE_TOKEN_FILE", "MASTER_ADDR", "MASTER_PORT"};
  c.out = ChildSpec::Output::file;
  c.out_path = (dir / fmt::format("rank{}.out", rank)).string();
  c.err_to_out = true;
  return c;
}

}  // namespace

std::map<std::string, std::string> nccl_env_for_sockets(const std::vector<std::string>& ifnames) {
  return {{"NCCL_NET", "Socket"},         {"NCCL_NET_PLUGIN", "none"},
          {"NCCL_P2P_DISABLE", "1"},      {"NCCL_SHM_DISABLE", "1"},
          {"NCCL_IB_DISABLE", "1"},       {"NCCL_NVLS_ENABLE", "0"},
          {"NCCL_SOCKET_IFNAME", "=" + join(ifnames, ",")}};  // "=": exactly these names, not prefixes
}

std::map<std::string, std::string> nccl_env_for_plugin(const std::string& plugin_path, const std::string& plugin_name) {
  return {{"NCCL_NET_PLUGIN", plugin_path}, {"NCCL_NET", plugin_name},  {"NCCL_P2P_DISABLE", "1"},
          {"NCCL_SHM_DISABLE", "1"},        {"NCCL_NVLS_ENABLE", "0"}};
}

std::string read_pair_json(const std::string& text, NcclPairRun& run) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "rank 0's JSON does not parse";
  const auto rows = j.find("rows");
  if (rows == j.end() || !rows->is_array() || rows->empty()) return "rank 0's JSON holds no rows";
  const auto& row = (*rows)[0];
  if (!row.value("supported", false)) return "NCCL's send/recv was not supported: " + row.value("reason", std::string("?"));
  const auto t = row.find("time_ns");
  const std::uint64_t bytes = row.value("size_bytes", std::uint64_t{0});
  if (t == row.end() || !t->is_object() || bytes == 0) return "rank 0's JSON row has no time";
  const double median = t->value("median", 0.0), p5 = t->value("p5", 0.0), p95 = t->value("p95", 0.0);
  if (!(median > 0)) return "rank 0's JSON row has no positive median time";
  run.bytes_per_s = static_cast<double>(bytes) / (median * 1e-9);
  if (p5 > 0 && p95 >= p5) {  // the slowest time is the lowest rate
    run.lo_bytes_per_s = static_cast<double>(bytes) / (p95 * 1e-9);
    run.hi_bytes_per_s = static_cast<double>(bytes) / (p5 * 1e-9);
  }
  run.iters = static_cast<int>(t->value("n", 0));
  if (row.value("check", std::string()).find("FAIL") != std::string::npos) return "NCCL's data check failed";
  return {};
}

NcclPairRun run_nccl_pair(const NcclPairSpec& s) {
  NcclPairRun run;
  run.env = s.env;
  const fs::path dir(s.dir);
  const int port = free_port_on("127.0.0.1");
  const std::string token = auth::random_nonce_hex(16);
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 1; r >= 0; --r) ranks.push_back(std::make_unique<ChildProcess>(rank_spec(s, r, port, token, dir)));
  ChildWait how;
  how.timeout_s = s.timeout_s;
  how.stop = s.stop;
  // Rank 0 first: it reports; a rank 1 that died makes rank 0 fail at its next call.
  const ChildResult r0 = ranks[1]->wait(how);
  how.timeout_s = 30;  // rank 0 is done: rank 1 has no reason to run much longer
  const ChildResult r1 = ranks[0]->wait(how);
  for (const char* f : {"nccl-rank0.json", "nccl-rank0.log", "nccl-rank1.log", "rank0.out", "rank1.out"})
    if (fs::exists(dir / f)) run.files.push_back((dir / f).string());
  if (fs::exists(dir / "nccl-rank0.log")) run.log = tune::read_nccl_log_file((dir / "nccl-rank0.log").string());
  const auto fail = [&](const ChildResult& c, int rank) {
    std::string why = c.timed_out ? fmt::format("timed out after {:.0f} s", s.timeout_s)
                                  : fmt::format("exited {}", c.exit_code);
    const std::string tail = last_lines_of((dir / fmt::format("rank{}.out", rank)).string(), 4, 2000);
    return fmt::format("NCCL rank {} {}{}", rank, why, tail.empty() ? "" : ":\n" + tail);
  };
  if (r0.exit_code != 0) {
    run.error = fail(r0, 0);
  } else if (r1.exit_code != 0) {
    run.error = fail(r1, 1);
  } else if (const auto text = try_read_regular_file(dir / "nccl-rank0.json", 64u << 20); !text) {
    run.error = "NCCL rank 0 wrote no JSON (" + (dir / "nccl-rank0.json").string() + ")";
  } else {
    run.error = read_pair_json(*text, run);
  }
  return run;
}

}  // namespace p2pscope::versus
