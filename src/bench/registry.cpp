// Pattern names, the backend table (backend_table.hpp) and the default chooser; the
// nccl-tests formulas are in formulas.cpp. The CUDA and NCCL factories exist only when
// built with them (P2PSCOPE_HAVE_CUDA / _NCCL).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "bench/sweep.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/launcher.hpp"

namespace p2pscope::bench {

std::unique_ptr<Backend> make_host_backend(const BackendOptions& opts);
#if P2PSCOPE_HAVE_CUDA
std::unique_ptr<Backend> make_ce_backend(const BackendOptions& opts);
std::unique_ptr<Backend> make_sm_backend(const BackendOptions& opts);
std::unique_ptr<Backend> make_staged_backend(const BackendOptions& opts);
#else
constexpr MakeBackend make_ce_backend = nullptr, make_sm_backend = nullptr, make_staged_backend = nullptr;
#endif
#if P2PSCOPE_HAVE_NCCL
std::unique_ptr<Backend> make_nccl_backend(const BackendOptions& opts);
std::unique_ptr<Backend> make_nccl_ranks_backend(const BackendOptions& opts);
#endif

std::string to_string(Pattern p) { return enum_name(kPatternNames, p); }
Pattern parse_pattern(const std::string& text) { return parse_enum(kPatternNames, text, "unknown pattern"); }

namespace {
std::unique_ptr<Backend> make_nccl(const BackendOptions& opts) {
  const bool ranks = opts.bootstrap && opts.bootstrap->size() > 1;
  if (const int n = detect_launcher().size; n > 1 && !ranks)
    throw UsageError("backend 'nccl' was launched by a launcher as " + std::to_string(n) +
                     " processes, but this command runs as one process that drives every GPU itself: run it "
                     "without mpirun/srun (`p2pscope bench gpu --backend nccl` takes one process per GPU)");
#if P2PSCOPE_HAVE_NCCL
  return ranks ? make_nccl_ranks_backend(opts) : make_nccl_backend(opts);
#else
  return nullptr;
#endif
}

#if P2PSCOPE_HAVE_CUDA
constexpr bool kCuda = true;
#else
constexpr bool kCuda = false;
#endif
#if P2PSCOPE_HAVE_NCCL
constexpr bool kNccl = true;
#else
constexpr bool kNccl = false;
#endif

// The rows. Each says every capability it has (BackendCaps defaults to none).
const std::array<BackendInfo, 5> kBackends{{
    {.name = "host",
     .summary = "memcpy between host buffers on NUMA nodes: runs without a GPU",
     .can = {.latency = true, .verify = true},
     .bandwidth_size = "64M",
     .make = make_host_backend},
    {.name = "ce",
     .summary = "copy engines (cudaMemcpyPeerAsync); push = the source's engine",
     .aliases = {"ce-pull"},
     .variants = "push|pull|both, then @N (copy streams, 1-16), then +host[P] (P % through pinned host memory)",
     .needs = {.cuda = true, .min_gpus = 1},
     .can = kGpuCaps,
     .bandwidth_size = "1G",
     .make = kCuda ? make_ce_backend : nullptr},
    {.name = "sm",
     .summary = "copy kernels on the SMs (16-byte accesses); push = the source's SMs write",
     .aliases = {"sm-pull"},
     .variants = "push|pull, then @N (blocks per SM, 1-32)",
     .needs = {.cuda = true, .min_gpus = 1},
     .can = kGpuCaps,
     .bandwidth_size = "1G",
     .make = kCuda ? make_sm_backend : nullptr},
    {.name = "staged",
     .summary = "through pinned host memory; device N (one past the GPUs) is host memory",
     .needs = {.cuda = true, .min_gpus = 1},
     .can = {.gpu_memory = true, .host_endpoint = true, .device_timing = true, .verify = true},
     .bandwidth_size = "1G",
     .make = kCuda ? make_staged_backend : nullptr},
    {.name = "nccl",
     .summary = "NCCL send/recv; one process for every GPU, or one process per GPU under a launcher",
     .needs = {.cuda = true, .nccl = true, .min_gpus = 1},
     .can = {.gpu_memory = true, .gpu_links = true, .device_timing = true, .latency = true, .verify = true,
             .ranks = true},
     .bandwidth_size = "1G",
     .make = kNccl ? make_nccl : nullptr},
}};

std::string list_names(bool built) {
  std::string out;
  for (const auto& b : kBackends) {
    if (built_in(b) != built) continue;
    out += (out.empty() ? "" : ", ") + std::string(b.name);
    for (std::string_view a : b.aliases)
      if (!a.empty()) out += ", " + std::string(a);
  }
  return out;
}
}  // namespace

std::span<const BackendInfo> backend_table() { return kBackends; }

std::string missing_build(const BackendInfo& b, bool cuda_built, bool nccl_built) {
  if (b.needs.cuda && !cuda_built)
    return "this binary was built without CUDA; rebuild with nvcc present (cmake -DP2PSCOPE_WITH_CUDA=ON)";
  if (b.needs.nccl && !nccl_built)
    return "this binary was built without NCCL; install nccl.h and libnccl and rebuild with CUDA "
           "(cmake -DP2PSCOPE_WITH_CUDA=ON -DP2PSCOPE_WITH_NCCL=ON)";
  return "";
}

std::optional<BackendName> find_backend(std::string_view name) {
  for (const auto& b : kBackends) {
    if (name == b.name) return BackendName{&b, ""};
    // "sm-pull", "sm:push", "ce@4", "ce+host": the row's name, a separator, the variant.
    if (b.variants.empty() || name.size() <= b.name.size() + 1 || name.substr(0, b.name.size()) != b.name) continue;
    const char sep = name[b.name.size()];
    if (std::string_view("-:@+").find(sep) == std::string_view::npos) continue;
    const bool keep_sep = sep == '@' || sep == '+';
    return BackendName{&b, std::string(name.substr(b.name.size() + (keep_sep ? 0 : 1)))};
  }
  return std::nullopt;
}

BackendName resolve_backend(std::string_view name) {
  if (auto b = find_backend(name)) return *b;
  std::string variants;
  for (const auto& b : kBackends)
    if (!b.variants.empty()) variants += fmt::format("; {}-VARIANT: {}", b.name, b.variants);
  const std::string missing = list_names(false);
  throw UsageError(fmt::format("unknown backend '{}': built-in backends are {}{}{}", name, list_names(true), variants,
                               missing.empty() ? "" : "; not built into this binary: " + missing));
}

BackendCaps capabilities_of(std::string_view name) {
  const auto b = find_backend(name);
  return b ? b->info->can : BackendCaps{};
}

std::vector<std::string> backend_names() {
  std::vector<std::string> n;
  for (const auto& b : kBackends) {
    if (!built_in(b)) continue;
    n.emplace_back(b.name);
    for (std::string_view a : b.aliases)
      if (!a.empty()) n.emplace_back(a);
  }
  return n;
}

Machine this_machine(bool ranks) {
  const auto rt = gpu::runtime_info();
  return {rt.cuda_built, rt.nccl_built, rt.cuda_built ? rt.device_count : 0, ranks};
}

DefaultBackend default_backend(const Machine& m) {
  const int gpus = m.cuda_built ? m.gpus : 0;
  if (m.ranks) return {"nccl", "nccl: one process per GPU (launched by mpirun, srun or torchrun)"};
  if (gpus >= 2) return {"ce", fmt::format("ce: the copy engines between every pair of the {} GPUs", gpus)};
  if (gpus == 1) return {"staged", "staged: one GPU has no GPU pair, so it is paired with host memory (PCIe)"};
  return {"host", "host: no GPU, host memory copies"};
}

BackendCaps Backend::capabilities() const { return capabilities_of(name()); }

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& opts_in) {
  const BackendName b = resolve_backend(name);
  BackendOptions opts = opts_in;
  if (!b.variant.empty()) {
    if (!opts.variant.empty() && opts.variant != b.variant)
      throw UsageError("backend '" + name + "' and variant '" + opts.variant + "' disagree");
    opts.variant = b.variant;
  }
  if (opts.bootstrap && opts.bootstrap->size() > 1 && !b.info->can.ranks)
    throw UsageError("backend '" + name + "' drives every GPU from one process, but this is rank " +
                     std::to_string(opts.bootstrap->rank()) + " of " + std::to_string(opts.bootstrap->size()) +
                     " processes: run it without mpirun/srun/torchrun, or use --backend nccl for one process per GPU");
  if (!built_in(*b.info))
    throw UsageError(fmt::format("backend '{}' is not built in: {}", b.info->name, missing_build(*b.info, kCuda, kNccl)));
  return b.info->make(opts);
}

}  // namespace p2pscope::bench
