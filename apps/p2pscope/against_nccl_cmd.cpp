// `bench tcp|net --against-nccl`: the checks before any work and the printing; the runs
// and the comparison are src/versus/ (against_run.hpp).
#include "against_nccl_cmd.hpp"

#include <arpa/inet.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"
#include "versus/against_run.hpp"

namespace p2pscope::app {
namespace {

bool is_ipv4(const std::string& s) {
  in_addr a{};
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}

// The GPU both NCCL ranks see: the engine's --gpus index, through this process's own
// CUDA_VISIBLE_DEVICES where it has one (the children get the physical name).
std::string visible_gpu(int index) {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!v || !*v) return std::to_string(index);
  std::vector<std::string> items;
  std::string_view rest(v);
  for (std::size_t at = 0; at <= rest.size();) {
    const std::size_t comma = std::min(rest.find(',', at), rest.size());
    items.emplace_back(trim(rest.substr(at, comma - at)));
    at = comma + 1;
  }
  if (index < 0 || static_cast<std::size_t>(index) >= items.size())
    throw UsageError(fmt::format("--gpus {}: CUDA_VISIBLE_DEVICES={} shows {} GPU(s)", index, v, items.size()));
  return items[static_cast<std::size_t>(index)];
}

void check(const AgainstNcclCommand& c) {
  if (!P2PSCOPE_HAVE_NCCL)
    throw UsageError("--against-nccl runs NCCL's send/recv, and this p2pscope was built without NCCL "
                     "(install libnccl-dev and rebuild)");
  if (!c.loopback)
    throw UsageError("--against-nccl runs both ends on this host: give --loopback (between hosts, run "
                     "`p2pscope bench gpu --backend nccl` under your launcher beside bench tcp/net)");
  if (c.params.mode != tcp::Mode::bw || c.params.reverse)
    throw UsageError("--against-nccl compares one-way send/recv: use --mode bw without --reverse");
  if (c.params.gpus.size() != 1)
    throw UsageError("--against-nccl compares one GPU pair: give one GPU in --gpus (e.g. --gpus 0)");
  for (const auto& n : c.local.nics)
    if (is_ipv4(n))
      throw UsageError("--nics " + n + ": --against-nccl gives NCCL the same NICs by name (NCCL_SOCKET_IFNAME): "
                       "name them, e.g. --nics eth1");
  if (c.output && c.output->name() == "csv") throw UsageError("--against-nccl prints text or json (csv has no table for it)");
}

std::string make_files_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/p2pscope-against-nccl-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw Error("cannot make a folder for the NCCL ranks' files under " + tmpl);
  return tmpl;
}

}  // namespace

void run_against_nccl(AgainstNcclCommand c, const std::function<void(const std::string&)>& print, Context& ctx) {
  check(c);
  versus::AgainstSpec spec;
  spec.params = c.params;
  spec.local = c.local;
  spec.transport = c.plugin_path.empty() ? "sockets" : "plugin '" + c.plugin_name + "'";
  std::vector<std::string> ifnames = c.local.nics;
  if (ifnames.empty()) ifnames = {"lo"};  // loopback: the engine's 127.0.0.1
  spec.nccl.env = c.plugin_path.empty() ? versus::nccl_env_for_sockets(ifnames)
                                        : versus::nccl_env_for_plugin(c.plugin_path, c.plugin_name);
  spec.nccl.gpu = c.params.mem == tcp::MemKind::gpu ? visible_gpu(c.params.gpus[0]) : visible_gpu(0);
  spec.nccl.dir = make_files_dir();
  spec.nccl.timeout_s = std::max(120.0, 4 * c.params.timeout_s);
  spec.progress = [](const std::string& line) { std::fprintf(stderr, "--against-nccl: %s\n", line.c_str()); };
  const versus::AgainstRun run = versus::run_against_nccl(spec);
  out::Report rep;
  rep.text.emplace_back(versus::format_against_nccl(run.comparison));
  std::string files = "NCCL's ranks' files (JSON, NCCL_DEBUG=INFO logs): " + spec.nccl.dir + "\n";
  for (const auto& e : run.errors) files += "failed: " + e + "\n";
  rep.text.emplace_back(files);
  rep.json = [&] {
    nlohmann::json body = {{"against_nccl", versus::to_json(run.comparison)},
                           {"nccl_env", run.nccl.env},
                           {"nccl_files", run.nccl.files},
                           {"errors", run.errors}};
    if (run.engine) body["engine"] = tcp::to_json(*run.engine);
    if (run.shaped) body["engine_at_nccl_shape"] = tcp::to_json(*run.shaped);
    return out::JsonDoc(out::measured_json(run_metadata(ctx.argv), body));
  };
  print(c.output->print(rep));
  if (!run.errors.empty()) {
    for (const auto& e : run.errors) std::fprintf(stderr, "p2pscope: --against-nccl: %s\n", e.c_str());
    ctx.exit_code = 1;
  }
}

}  // namespace p2pscope::app
