// Pattern names, nccl-tests formulas and the backend registry. The CUDA and NCCL
// factories exist only when built with them (P2PSCOPE_HAVE_CUDA / _NCCL).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "bench/formulas.hpp"
#include "bench/sweep.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/launcher.hpp"

namespace p2pscope::bench {

std::unique_ptr<Backend> make_host_backend(const BackendOptions& opts);
#if P2PSCOPE_HAVE_CUDA
std::unique_ptr<Backend> make_cuda_backend(const std::string& name, const BackendOptions& opts);
#endif
#if P2PSCOPE_HAVE_NCCL
std::unique_ptr<Backend> make_nccl_backend(const BackendOptions& opts);
std::unique_ptr<Backend> make_nccl_ranks_backend(const BackendOptions& opts);
#endif

std::string to_string(Pattern p) {
  switch (p) {
    case Pattern::unidirectional: return "unidirectional";
    case Pattern::bidirectional: return "bidirectional";
    case Pattern::latency: return "latency";
  }
  return "?";
}

Pattern parse_pattern(const std::string& text) {
  if (text == "unidirectional" || text == "uni") return Pattern::unidirectional;
  if (text == "bidirectional" || text == "bidir" || text == "bi") return Pattern::bidirectional;
  if (text == "latency" || text == "lat") return Pattern::latency;
  throw UsageError("unknown pattern '" + text + "': use unidirectional, bidirectional or latency");
}

std::vector<std::string> backend_names() {
  std::vector<std::string> n{"host"};
#if P2PSCOPE_HAVE_CUDA
  n.insert(n.end(), {"ce", "ce-pull", "sm", "sm-pull", "staged"});  // ce = ce-push, sm = sm-push
#endif
#if P2PSCOPE_HAVE_NCCL
  n.push_back("nccl");
#endif
  return n;
}

std::unique_ptr<Backend> make_backend(const std::string& name_in, const BackendOptions& opts_in) {
  // "sm-pull" / "sm:push" / "ce-pull@4" / "ce@4" / "ce+host" name the sm or ce backend with its variant.
  std::string name = name_in;
  BackendOptions opts = opts_in;
  for (const std::string base : {"sm", "ce"}) {
    if (name.size() <= 2 || name.compare(0, 2, base) != 0 || std::string("-:@+").find(name[2]) == std::string::npos) continue;
    const std::string variant = name.substr(name[2] == '@' || name[2] == '+' ? 2 : 3);
    if (!opts.variant.empty() && opts.variant != variant)
      throw UsageError("backend '" + name + "' and variant '" + opts.variant + "' disagree");
    opts.variant = variant;
    name = base;
  }
  const bool ranks = opts.bootstrap && opts.bootstrap->size() > 1;
  if (ranks && name != "nccl")
    throw UsageError("backend '" + name + "' drives every GPU from one process, but this is rank " +
                     std::to_string(opts.bootstrap->rank()) + " of " + std::to_string(opts.bootstrap->size()) +
                     " processes: run it without mpirun/srun/torchrun, or use --backend nccl for one process per GPU");
  if (name == "host") return make_host_backend(opts);
  const bool cuda_name = name == "ce" || name == "sm" || name == "staged";
  if (cuda_name) {
#if P2PSCOPE_HAVE_CUDA
    return make_cuda_backend(name, opts);
#else
    throw UsageError("backend '" + name + "' is not built in: this binary was built without CUDA; "
                     "rebuild with nvcc present (cmake -DP2PSCOPE_WITH_CUDA=ON)");
#endif
  }
  if (name == "nccl") {
    if (const int n = detect_launcher().size; n > 1 && !ranks)
      throw UsageError("backend 'nccl' was launched by a launcher as " + std::to_string(n) +
                       " processes, but this command runs as one process that drives every GPU itself: run it "
                       "without mpirun/srun (`p2pscope bench gpu --backend nccl` takes one process per GPU)");
#if P2PSCOPE_HAVE_NCCL
    return ranks ? make_nccl_ranks_backend(opts) : make_nccl_backend(opts);
#else
    throw UsageError("backend 'nccl' is not built in: this binary was built without NCCL; install nccl.h and "
                     "libnccl and rebuild with CUDA (cmake -DP2PSCOPE_WITH_CUDA=ON -DP2PSCOPE_WITH_NCCL=ON)");
#endif
  }
  std::string known;
  for (const auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("unknown backend '" + name + "': built-in backends are " + known);
}

NcclOp parse_nccl_op(const std::string& t) {
  if (t == "allreduce") return NcclOp::allreduce;
  if (t == "allgather") return NcclOp::allgather;
  if (t == "reducescatter") return NcclOp::reducescatter;
  if (t == "alltoall") return NcclOp::alltoall;
  if (t == "sendrecv") return NcclOp::sendrecv;
  throw UsageError("unknown NCCL op '" + t + "': use allreduce, allgather, reducescatter, alltoall or sendrecv");
}

std::string to_string(NcclOp op) {
  switch (op) {
    case NcclOp::allreduce: return "allreduce";
    case NcclOp::allgather: return "allgather";
    case NcclOp::reducescatter: return "reducescatter";
    case NcclOp::alltoall: return "alltoall";
    case NcclOp::sendrecv: return "sendrecv";
  }
  return "?";
}

double busbw_factor(NcclOp op, int n) {
  if (n < 1) return 0;
  switch (op) {
    case NcclOp::allreduce: return 2.0 * (n - 1) / n;
    case NcclOp::allgather:
    case NcclOp::reducescatter:
    case NcclOp::alltoall: return static_cast<double>(n - 1) / n;
    case NcclOp::sendrecv: return 1.0;
  }
  return 0;
}

std::string busbw_formula_text(NcclOp op) {
  switch (op) {
    case NcclOp::allreduce: return "nccl-tests: algbw = S/t, busbw = algbw * 2(n-1)/n";
    case NcclOp::allgather:
    case NcclOp::reducescatter: return "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n";
    case NcclOp::alltoall: return "nccl-tests: algbw = S/t (S = n x chunk), busbw = algbw * (n-1)/n";
    case NcclOp::sendrecv: return "nccl-tests: algbw = S/t, busbw = algbw";
  }
  return "";
}

}  // namespace p2pscope::bench
