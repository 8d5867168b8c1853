// `p2pscope run`'s steps planned for this machine (run/plan.hpp).
#include "run/plan.hpp"

#include <map>

#include "p2pscope/backend_table.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::run {
namespace fs = std::filesystem;

void check_options(const RunOptions& o) {
  if (o.reps < 1) throw UsageError("--reps must be 1 or more (repetitions of each campaign size)");
  if (!(o.step_timeout_s > 0)) throw UsageError("--step-timeout must be more than 0 seconds");
  if (!o.sizes.empty()) {
    try {
      parse_size_list(o.sizes);
    } catch (const UsageError& e) {
      throw UsageError(std::string("--sizes: ") + e.what());
    }
  }
}

std::optional<fs::path> set_aside(const fs::path& dir) {
  if (!fs::exists(dir)) return std::nullopt;
  const fs::path old = dir.string() + ".prev-" + compact_timestamp(realtime_ns());
  std::error_code ec;
  fs::rename(dir, old, ec);
  if (ec) throw Error("cannot set the previous campaign " + dir.string() + " aside: " + ec.message());
  return old;
}

namespace {

// The backends a run's steps use on this machine, and why (a note beside the steps).
struct StepBackends {
  std::string gpu, campaign, sizes, bench_note, latency_pattern;
  bool gpus = false, pairs = false, gpu_campaign = false, gpu_links = false;
};

StepBackends step_backends(const RunOptions& o, const gpu::RuntimeInfo& rt) {
  StepBackends b;
  b.gpus = rt.cuda_built && rt.device_count >= 1;
  b.pairs = rt.cuda_built && rt.device_count >= 2;
  // One GPU has no GPU pair, but the staged backend pairs it with host memory (PCIe).
  b.gpu = bench::default_backend({rt.cuda_built, rt.nccl_built, rt.device_count, false}).name;
  b.campaign = !o.backend.empty() ? o.backend : b.gpu;
  // The first backend decides; an unknown name is the profile step's to refuse (the
  // other steps still run), planned here as a GPU backend.
  const auto named = bench::find_backend(b.campaign.substr(0, b.campaign.find(',')));
  const bench::BackendCaps can = named ? named->info->can : bench::BackendCaps{};
  b.gpu_campaign = can.gpu_memory;
  b.gpu_links = can.gpu_links;
  b.sizes = !o.sizes.empty() ? o.sizes : "1:" + std::string(named ? named->info->bandwidth_size : "1G");
  const std::string why_host = b.gpus ? "" : "host backend: " + rt.why_no_gpu;
  const std::string why_staged = b.gpus && !b.pairs ? "one GPU: GPU <-> host memory through the staged backend" : "";
  b.bench_note = why_host.empty() ? why_staged : why_host;
  // A ping-pong where the default backend has one (a GPU pair, or host memory); else
  // (one GPU, staged) the host-observed blocking copy.
  b.latency_pattern = bench::capabilities_of(b.gpu).latency ? "latency" : "blocking";
  return b;
}

// The simulator loop: the campaign's links as an ASTRA-sim network, and collectives
// predicted from them; checked against NCCL where GPU pairs and NCCL are here.
void add_simulator_steps(std::vector<Step>& s, const StepBackends& b, const gpu::RuntimeInfo& rt, const fs::path& out,
                         const std::string& campaign) {
  s.push_back({"export", {"export", campaign, "--to", "astra-sim", "--out", (out / "network.yml").string(), "--system",
                          (out / "system.json").string(), "--force"},
               "export.txt", "", "", {"profile"}});
  std::vector<std::string> predict = {"predict", campaign, "--ops", "allreduce,allgather", "--sizes", "1M,64M,1G",
                                      "--format", "json", "--html", (out / "predict.html").string(), "--force"};
  // Measured collectives compare with links measured GPU to GPU, not through host memory.
  if (b.pairs && rt.nccl_built && b.gpu_links) predict.push_back("--measure");
  // Priced (and measured) at all the GPUs only: the calibration times every op at 2
  // ranks, so 2-rank cells would check its fit, not a prediction, for 1.3 s of NCCL
  // set-up and timing.
  if (rt.device_count > 2) predict.insert(predict.end(), {"--ranks", std::to_string(rt.device_count)});
  s.push_back({"predict", predict, "predict.json", "", "", {"profile"}});
}

}  // namespace

std::vector<Step> plan_steps(const RunOptions& o, const gpu::RuntimeInfo& rt, const fs::path& out) {
  const StepBackends b = step_backends(o, rt);
  const std::string campaign = (out / "campaign").string();
  std::vector<Step> s;
  s.push_back({"topo", {"topo", "--format", "json", "--force", "--out", (out / "topology.json").string()}, "", ""});
  s.push_back({"topo-text", {"topo"}, "topology.txt", ""});
  // Drift windows of 0.5 s at the start and the end: the rate comes from readings a whole
  // campaign apart, and with jittered pokes the 4-GPU bound was +-690-695 ns with windows
  // of 2 s and of 1 s (4 x H200).
  s.push_back({"profile",
               {"profile", "--out", campaign, "--backend", b.campaign, "--sizes", b.sizes, "--reps",
                std::to_string(o.reps), "--warmup", "2", "--drift", b.gpu_campaign ? "0.5s" : "0", "--thermal-warmup",
                "off", "--monitor"},
               "profile.txt", b.campaign == b.gpu ? b.bench_note : ""});
  s.push_back({"bench-gpu",
               {"bench", "gpu", "--backend", b.gpu, "--pattern", "uni", "--sizes",
                std::string(bench::resolve_backend(b.gpu).info->bandwidth_size), "--format", "json"},
               "bench-gpu.json", b.bench_note});
  s.push_back({"bench-latency",
               {"bench", "gpu", "--backend", b.gpu, "--pattern", b.latency_pattern, "--sizes", "8", "--format", "json"},
               "bench-latency.json", b.bench_note});
  if (rt.nccl_built && b.gpus)
    s.push_back({"nccl-allreduce", {"bench", "nccl", "--op", "allreduce", "--sizes", "1M,64M,1G", "--format", "json"},
                 "nccl-allreduce.json", ""});
  else
    s.push_back({"nccl-allreduce", {}, "", "", rt.nccl_built ? "no GPU" : "NCCL not built in"});
  s.push_back({"tcp-loopback",
               {"bench", "tcp", "--loopback", "--channels", "2", "--size", "64M", "--iters", "10", "--format", "json"},
               "tcp-loopback.json", ""});
  s.push_back({"analyze", {"analyze", campaign}, "analyze.txt", "", "", {"profile"}});
  add_simulator_steps(s, b, rt, out, campaign);
  return s;
}

void skip_steps(std::vector<Step>& steps, const std::vector<std::string>& skip, bool campaign_there) {
  for (auto& s : steps)
    for (const auto& k : skip)
      if (s.name == k) s.args.clear(), s.skipped_because = "--skip";
  // A step reading a skipped step's output is skipped with it: failing it would say nothing new.
  for (auto& s : steps)
    for (const auto& need : s.needs)
      for (const auto& other : steps)
        if (other.name == need && other.args.empty() && !s.args.empty() && !(need == "profile" && campaign_there))
          s.args.clear(), s.skipped_because = "needs " + need + ", which is skipped";
}

std::set<std::string> files_not_of_this_run(const std::vector<Step>& steps, const std::vector<StepResult>& results) {
  const std::map<std::string, std::string> also = {
      {"topo", "topology.json"}, {"export", "network.yml"}, {"predict", "predict.html"}};
  std::set<std::string> files;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i < results.size() && results[i].status != "skipped") continue;
    files.insert(steps[i].name + ".json");
    if (!steps[i].stdout_name.empty()) files.insert(steps[i].stdout_name);
    if (const auto a = also.find(steps[i].name); a != also.end()) files.insert(a->second);
  }
  return files;
}

}  // namespace p2pscope::run
