// The sm backend: a 16-byte copy kernel on the SMs of the source (push: it writes
// remote memory) or of the destination (pull: it reads it). Device-local copies too.
#include <memory>

#include <fmt/format.h>

#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"
#include "transport/cuda/cuda_base.hpp"
#include "transport/cuda/kernels.hpp"

namespace p2pscope::bench {
namespace {
using namespace cuda;

struct SmMode {
  bool pull = false;
  int blocks_per_sm = 4;
  bool nvb = false;  // nvbandwidth's kernel shape (launch_copy_deep), the same-run reference
};

// push|pull[@N] (N blocks per SM, 1-32); "write" and "read" name push and pull;
// push@nvb / pull@nvb: nvbandwidth's shape (one block of 512 per SM, 12 loads in flight).
SmMode parse_sm_variant(const std::string& variant) {
  SmMode m;
  const auto at = variant.find('@');
  const std::string v = variant.substr(0, at);
  m.pull = v == "pull" || v == "read";
  if (!v.empty() && !m.pull && v != "push" && v != "write")
    throw UsageError("backend sm: unknown variant '" + variant + "': use push or pull (push@N: N blocks per SM)");
  if (at != std::string::npos && variant.substr(at + 1) == "nvb") {
    m.nvb = true;
    m.blocks_per_sm = 1;
    return m;
  }
  const long long n = at == std::string::npos ? 1 : parse_int(variant.substr(at + 1), "the number after @");
  if (n < 1 || n > 32) throw UsageError("sm variant: blocks per SM must be 1-32");
  if (at != std::string::npos) m.blocks_per_sm = static_cast<int>(n);
  return m;
}

class SmBackend final : public CudaBase {
 public:
  explicit SmBackend(SmMode mode) : CudaBase("sm", 0), mode_(mode) {}
  std::string name() const override { return mode_.pull ? "sm-pull" : "sm-push"; }

 protected:
  int lane_device(int src, int dst) const override { return mode_.pull ? dst : src; }
  std::string note(int src, int dst) const override {
    if (mode_.nvb)
      return fmt::format("{} kernel on GPU {} in nvbandwidth's shape ({} blocks x 512 threads, 12 strided 16-byte "
                         "loads in flight per thread)", mode_.pull ? "pull" : "push", initiator(src, dst),
                         blocks(initiator(src, dst)));
    return fmt::format("{} kernel on GPU {}, up to {} blocks x 512 threads, 16-byte accesses", mode_.pull ? "pull" : "push",
                       initiator(src, dst), blocks(initiator(src, dst)));
  }
  StageShape stage_shape() const override { return {}; }  // never stages
  void issue(int src, int dst, std::uint64_t n, cudaStream_t st) override {
    const int d = initiator(src, dst);
    DeviceGuard g(d);
    if (mode_.nvb)
      launch_copy_deep(recv_ptr(dst), send_ptr(src), n, sm_count(d), st, d);
    else
      launch_copy(recv_ptr(dst), send_ptr(src), n, blocks(d), 512, st, d);
  }

 private:
  int blocks(int d) const { return sm_count(d) * mode_.blocks_per_sm; }
  SmMode mode_;
};

}  // namespace

std::unique_ptr<Backend> make_sm_backend(const BackendOptions& opts) {
  return std::make_unique<SmBackend>(parse_sm_variant(opts.variant));
}

}  // namespace p2pscope::bench
