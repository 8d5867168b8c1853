#pragma once
// What each backend needs and can do, one row per backend (gloo asks a transport for
// its capabilities; this asks the row). Names, aliases and variants resolve here, the
// default backend is chosen here, and callers that decide something about a backend
// ask one of its capabilities instead of comparing its name.
#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace p2pscope::bench {

class Backend;
struct BackendOptions;

struct BackendNeeds {
  bool cuda = false;  // a binary built with CUDA
  bool nccl = false;  // a binary built with NCCL
  int min_gpus = 0;   // GPUs it needs at all (ce and sm copy device-locally on one GPU)
};

// What a backend can do. Every capability defaults to none: a backend says what it has
// (a name nobody declared gets nothing, not a GPU backend's powers).
struct BackendCaps {
  bool gpu_memory = false;     // its devices are GPUs: NVML sensors, clock drift; the host waits on the GPU
  bool host_endpoint = false;  // one more device, the last, is host memory ("host" in --pairs)
  bool gpu_links = false;      // a GPU pair is measured over the GPUs' own link, not through host memory
  bool device_timing = false;  // samples timed on the device (events, %globaltimer)
  bool latency = false;        // the latency pattern (a ping-pong)
  bool verify = false;         // checks the data it moved
  bool ranks = false;          // runs as one process per GPU under a launcher (mpirun, srun, torchrun)
};
// A GPU backend copying over the GPUs' own links, device-timed, with ping-pong and check.
inline constexpr BackendCaps kGpuCaps{.gpu_memory = true, .gpu_links = true, .device_timing = true, .latency = true,
                                      .verify = true};

using MakeBackend = std::unique_ptr<Backend> (*)(const BackendOptions& opts);

struct BackendInfo {
  std::string_view name;
  std::string_view summary;
  // Whole names listed for users besides `name` (e.g. "ce-pull"); every one is also
  // name + '-' + a variant, so it resolves through `variants`.
  std::array<std::string_view, 3> aliases{};
  // Help for name + '-' / ':' / '@' / '+' + variant ("sm-pull", "ce@4", "ce+host");
  // empty: the backend has no variants.
  std::string_view variants{};
  BackendNeeds needs;
  BackendCaps can;
  std::string_view bandwidth_size;  // bench gpu's default size for the bandwidth patterns
  MakeBackend make = nullptr;       // null: not built into this binary
};

// Every backend p2pscope knows, built into this binary or not.
std::span<const BackendInfo> backend_table();
inline bool built_in(const BackendInfo& b) { return b.make != nullptr; }
// "" when a binary built with (cuda_built, nccl_built) has the backend; else what it
// lacks and how to build it.
std::string missing_build(const BackendInfo& b, bool cuda_built, bool nccl_built);

// A name as users write it: the row, and the variant ("pull", "@4", "+host"; "" none).
struct BackendName {
  const BackendInfo* info = nullptr;
  std::string variant;
};
// name, alias or name + variant; nullopt when no row matches.
std::optional<BackendName> find_backend(std::string_view name);
// As find_backend; UsageError listing every name (and the ones not built in) otherwise.
BackendName resolve_backend(std::string_view name);
// A backend's capabilities by name; a name outside the table gets none.
BackendCaps capabilities_of(std::string_view name);

// The machine a default is chosen for.
struct Machine {
  bool cuda_built = false, nccl_built = false;
  int gpus = 0;        // CUDA devices visible
  bool ranks = false;  // launched as one process per GPU (mpirun, srun, torchrun)
};
Machine this_machine(bool ranks = false);  // from gpu::runtime_info()

struct DefaultBackend {
  std::string name;
  std::string reason;  // "ce: the copy engines between every pair of the 2 GPUs"
};
// The one choice bench gpu, profile, profile --pattern and run make without --backend:
// ranks -> nccl; 2+ GPUs -> ce; one GPU -> staged (no GPU pair: GPU <-> host memory);
// none, or no CUDA -> host.
DefaultBackend default_backend(const Machine& m);

}  // namespace p2pscope::bench
