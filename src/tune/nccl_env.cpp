// Checks of the NCCL_* environment: names NCCL does not know, values outside what
// NCCL accepts, and settings that contradict each other.
#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "p2pscope/tune.hpp"

namespace p2pscope::tune {
namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::optional<long long> as_int(const std::string& v) {
  if (v.empty()) return std::nullopt;
  std::size_t i = v[0] == '-' ? 1 : 0;
  if (i == v.size()) return std::nullopt;
  for (std::size_t k = i; k < v.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(v[k]))) return std::nullopt;
  if (v.size() > 18) return std::nullopt;
  return std::stoll(v);
}

struct Range {
  const char* name;
  long long lo, hi;
  const char* meaning;
};
// Integer variables and the values NCCL accepts (NCCL docs, env.html).
constexpr Range kRanges[] = {
    {"NCCL_P2P_DISABLE", 0, 1, "1 disables peer-to-peer (NVLink/PCIe) transport"},
    {"NCCL_SHM_DISABLE", 0, 1, "1 disables the shared-memory transport"},
    {"NCCL_IB_DISABLE", 0, 1, "1 disables the IB/RoCE transport"},
    {"NCCL_NET_GDR_READ", 0, 1, "1 lets NICs read GPU memory directly when sending"},
    {"NCCL_CUMEM_ENABLE", 0, 1, "cuMem* allocation"},
    {"NCCL_COLLNET_ENABLE", 0, 1, "CollNet (SHARP) collectives"},
    {"NCCL_PXN_DISABLE", 0, 1, "PXN (send through a peer's NIC)"},
    {"NCCL_NVB_DISABLE", 0, 1, "NVLink bridge paths"},
    {"NCCL_IGNORE_CPU_AFFINITY", 0, 1, "ignore the job's CPU affinity"},
    {"NCCL_CHECK_POINTERS", 0, 1, "pointer checks"},
    {"NCCL_DMABUF_ENABLE", 0, 1, "DMA-BUF GPUDirect RDMA"},
    {"NCCL_GDRCOPY_ENABLE", 0, 1, "GDRCopy"},
    {"NCCL_RUNTIME_CONNECT", 0, 1, "lazy connection setup"},
    {"NCCL_IB_ADAPTIVE_ROUTING", 0, 1, "IB adaptive routing"},
    {"NCCL_IB_SPLIT_DATA_ON_QPS", 0, 1, "split messages over QPs"},
    {"NCCL_NVLS_ENABLE", 0, 2, "NVLink SHARP"},
    {"NCCL_MNNVL_ENABLE", 0, 2, "multi-node NVLink"},
    {"NCCL_CROSS_NIC", 0, 2, "0 same NIC per ring, 1 cross, 2 NCCL decides"},
    {"NCCL_P2P_PXN_LEVEL", 0, 2, "PXN use"},
    {"NCCL_IB_PCI_RELAXED_ORDERING", 0, 2, "PCI relaxed ordering"},
    {"NCCL_IB_TIMEOUT", 1, 31, "IB verbs timeout exponent (4.096 us * 2^n)"},
    {"NCCL_IB_RETRY_CNT", 0, 7, "IB retry count (3 bits)"},
    {"NCCL_IB_SL", 0, 15, "IB service level"},
    {"NCCL_IB_TC", 0, 255, "IB traffic class (DSCP << 2 | ECN)"},
    {"NCCL_IB_FIFO_TC", 0, 255, "IB traffic class of the control FIFO"},
    {"NCCL_IB_GID_INDEX", -1, 255, "GID table index; -1 lets NCCL choose"},
    {"NCCL_IB_ROCE_VERSION_NUM", 1, 2, "RoCE version for automatic GID choice"},
    {"NCCL_IB_QPS_PER_CONNECTION", 1, 128, "QPs per connection"},
    {"NCCL_SOCKET_NTHREADS", 1, 16, "socket helper threads per connection"},
    {"NCCL_NSOCKS_PERTHREAD", 1, 64, "sockets per helper thread"},
    {"NCCL_MIN_NCHANNELS", 1, 64, "minimum channels"},
    {"NCCL_MAX_NCHANNELS", 1, 64, "maximum channels"},
    {"NCCL_MIN_CTAS", 1, 64, "minimum CTAs"},
    {"NCCL_MAX_CTAS", 1, 64, "maximum CTAs"},
    {"NCCL_BUFFSIZE", 1, 1LL << 40, "buffer size in bytes"},
};

const std::set<std::string> kTopoLevels = {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"};

std::string ev(const std::string& name, const std::string& value) { return name + "=" + value; }

}  // namespace

nlohmann::json to_json(const Finding& f) {
  return {{"id", f.id}, {"severity", f.severity}, {"title", f.title}, {"evidence", f.evidence}, {"fix", f.fix}};
}

namespace {

// Lookups in the environment being checked.
struct Env {
  const std::map<std::string, std::string>& vars;
  const std::string* get(const char* n) const {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : &it->second;
  }
  bool is(const char* n, const char* v) const {
    const auto* x = get(n);
    return x && upper(*x) == v;
  }
  std::optional<long long> num(const char* n) const { return get(n) ? as_int(*get(n)) : std::nullopt; }
};

// NCCL_* names NCCL does not read: typos, PyTorch's names.
void unknown_variable_findings(const Env& e, std::vector<Finding>& out) {
  for (const auto& [name, value] : e.vars) {
    if (name.rfind("NCCL_", 0) != 0) continue;
    if (is_known_nccl_variable(name)) continue;
    if (name.rfind("NCCL_TESTS_", 0) == 0 || name.rfind("NCCL_FASTRAK_", 0) == 0) continue;  // other tools
    // Set by NVIDIA's containers to say which NCCL they ship (as CUDA_VERSION); seen on the
    // device machines. NCCL does not read it, and unsetting it changes nothing.
    if (name == "NCCL_VERSION") continue;
    if (name == "NCCL_ASYNC_ERROR_HANDLING" || name == "NCCL_BLOCKING_WAIT" || name == "NCCL_DESYNC_DEBUG") {
      out.push_back(make_finding("env.pytorch_variable", "info", name + " is read by PyTorch, not by NCCL",
                                 {ev(name, value)}, "export TORCH_" + name + "=" + value + "   # the current PyTorch name"));
      continue;
    }
    const std::string near = closest_nccl_variable(name);
    out.push_back(make_finding("env.unknown_variable", "warning",
                               name + " is not an NCCL variable" + (near.empty() ? "" : "; did you mean " + near + "?"),
                               {ev(name, value)},
                               near.empty() ? "unset " + name : "unset " + name + "\nexport " + near + "=" + value));
  }
}

// Values outside what NCCL accepts, one variable at a time.
void value_findings(const Env& e, std::vector<Finding>& out) {
  for (const auto& r : kRanges) {
    const auto* v = e.get(r.name);
    if (!v) continue;
    const auto n = as_int(*v);
    if (!n || *n < r.lo || *n > r.hi)
      out.push_back(make_finding("env.out_of_range", "error",
                                 std::string(r.name) + "='" + *v + "' is not an integer in " + std::to_string(r.lo) + ".." +
                                     std::to_string(r.hi) + " (" + r.meaning + ")",
                                 {ev(r.name, *v)}, "unset " + std::string(r.name)));
  }
  for (const char* n : {"NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL"}) {
    const auto* v = e.get(n);
    if (!v) continue;
    const auto i = as_int(*v);
    const bool ok = (i && *i >= 0 && *i <= 5) || kTopoLevels.count(upper(*v));
    if (!ok)
      out.push_back(make_finding("env.out_of_range", "error",
                                 std::string(n) + "='" + *v + "' is not a path level (LOC, NVL, PIX, PXB, PHB, SYS)",
                                 {ev(n, *v)}, "unset " + std::string(n)));
  }
  if (const auto* v = e.get("NCCL_DEBUG")) {
    static const std::set<std::string> levels = {"VERSION", "WARN", "INFO", "TRACE", "ABORT"};
    if (!levels.count(upper(*v)))
      out.push_back(make_finding("env.out_of_range", "error", "NCCL_DEBUG='" + *v + "' is not VERSION, WARN, INFO or TRACE",
                                 {ev("NCCL_DEBUG", *v)}, "export NCCL_DEBUG=INFO"));
  }
  if (const auto* v = e.get("NCCL_NTHREADS")) {
    const auto n = as_int(*v);
    if (!n || (*n != 64 && *n != 128 && *n != 256 && *n != 512))
      out.push_back(make_finding("env.out_of_range", "error", "NCCL_NTHREADS='" + *v + "' must be 64, 128, 256 or 512",
                                 {ev("NCCL_NTHREADS", *v)}, "unset NCCL_NTHREADS"));
  }
  if (const auto* v = e.get("NCCL_SOCKET_IFNAME")) {
    std::string s = *v;
    if (!s.empty() && (s[0] == '^' || s[0] == '=')) s.erase(0, 1);
    if (!v->empty() && v->front() != '^' && (s == "lo" || s.rfind("docker", 0) == 0 || s.rfind("veth", 0) == 0 ||
                              s.rfind("virbr", 0) == 0))
      out.push_back(make_finding("env.socket_ifname_virtual", "warning",
                                 "NCCL_SOCKET_IFNAME=" + *v + " selects a loopback/virtual interface that other hosts cannot reach",
                                 {ev("NCCL_SOCKET_IFNAME", *v)}, "export NCCL_SOCKET_IFNAME=<the host's data interface, e.g. eth0>"));
  }
}

// NCCL_IB_DISABLE=1 and what it makes moot.
void ib_disabled_findings(const Env& e, std::vector<Finding>& out) {
  std::vector<std::string> ib;
  for (const auto& [n, v] : e.vars)
    if (n.rfind("NCCL_IB_", 0) == 0 && n != "NCCL_IB_DISABLE") ib.push_back(ev(n, v));
  if (!ib.empty()) {
    ib.insert(ib.begin(), ev("NCCL_IB_DISABLE", "1"));
    out.push_back(make_finding("env.contradiction", "warning",
                               "NCCL_IB_* settings are ignored because NCCL_IB_DISABLE=1 turns the IB/RoCE transport off", ib,
                               "unset NCCL_IB_DISABLE"));
  }
  if (e.is("NCCL_NET", "IB"))
    out.push_back(make_finding("env.contradiction", "error", "NCCL_NET=IB asks for the IB transport that NCCL_IB_DISABLE=1 disables",
                               {ev("NCCL_IB_DISABLE", "1"), ev("NCCL_NET", *e.get("NCCL_NET"))}, "unset NCCL_IB_DISABLE"));
  out.push_back(make_finding("env.ib_disabled", "warning",
                             "NCCL_IB_DISABLE=1: inter-node traffic uses TCP sockets even where RDMA NICs exist",
                             {ev("NCCL_IB_DISABLE", "1")}, "unset NCCL_IB_DISABLE"));
}

// Settings that contradict each other or limits that span two variables.
void contradiction_findings(const Env& e, std::vector<Finding>& out) {
  if (e.is("NCCL_P2P_DISABLE", "1") && e.get("NCCL_P2P_LEVEL"))
    out.push_back(make_finding("env.contradiction", "warning",
                               "NCCL_P2P_LEVEL is set but NCCL_P2P_DISABLE=1 turns P2P off, so the level is ignored",
                               {ev("NCCL_P2P_DISABLE", "1"), ev("NCCL_P2P_LEVEL", *e.get("NCCL_P2P_LEVEL"))},
                               "unset NCCL_P2P_DISABLE   # keep NCCL_P2P_LEVEL, or unset NCCL_P2P_LEVEL to keep P2P off"));
  if (e.is("NCCL_IB_DISABLE", "1")) ib_disabled_findings(e, out);
  if (e.is("NCCL_NET", "SOCKET") && e.get("NCCL_IB_HCA"))
    out.push_back(make_finding("env.contradiction", "warning", "NCCL_IB_HCA is set but NCCL_NET=Socket never uses IB devices",
                               {ev("NCCL_NET", *e.get("NCCL_NET")), ev("NCCL_IB_HCA", *e.get("NCCL_IB_HCA"))},
                               "unset NCCL_NET   # or unset NCCL_IB_HCA"));
  for (auto [lo, hi] : {std::pair{"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"}, std::pair{"NCCL_MIN_CTAS", "NCCL_MAX_CTAS"}}) {
    const auto a = e.num(lo), b = e.num(hi);
    if (a && b && *a > *b)
      out.push_back(make_finding("env.contradiction", "error", std::string(lo) + " is larger than " + hi,
                                 {ev(lo, *e.get(lo)), ev(hi, *e.get(hi))}, "unset " + std::string(lo)));
  }
  const auto t = e.num("NCCL_SOCKET_NTHREADS"), s = e.num("NCCL_NSOCKS_PERTHREAD");
  if (t && s && *t * *s > 64)
    out.push_back(make_finding("env.out_of_range", "error",
                               "NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = " + std::to_string(*t * *s) +
                                   " exceeds NCCL's limit of 64 sockets per connection",
                               {ev("NCCL_SOCKET_NTHREADS", *e.get("NCCL_SOCKET_NTHREADS")),
                                ev("NCCL_NSOCKS_PERTHREAD", *e.get("NCCL_NSOCKS_PERTHREAD"))},
                               "export NCCL_SOCKET_NTHREADS=4\nexport NCCL_NSOCKS_PERTHREAD=4"));
}

// Valid settings that cost performance or do nothing.
void costly_setting_findings(const Env& e, std::vector<Finding>& out) {
  if (e.is("NCCL_P2P_DISABLE", "1") && e.is("NCCL_SHM_DISABLE", "1"))
    out.push_back(make_finding("env.intra_node_network", "warning",
                               "NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1: GPUs of one host talk through the network transport",
                               {ev("NCCL_P2P_DISABLE", "1"), ev("NCCL_SHM_DISABLE", "1")},
                               "unset NCCL_P2P_DISABLE NCCL_SHM_DISABLE"));
  else if (e.is("NCCL_P2P_DISABLE", "1"))
    out.push_back(make_finding("env.p2p_disabled", "warning",
                               "NCCL_P2P_DISABLE=1: GPUs of one host exchange data through host shared memory, not NVLink/PCIe P2P",
                               {ev("NCCL_P2P_DISABLE", "1")}, "unset NCCL_P2P_DISABLE"));
  if (const auto* v = e.get("NCCL_NET_GDR_LEVEL"); v && (upper(*v) == "LOC" || *v == "0"))
    out.push_back(make_finding("env.gdr_disabled", "warning",
                               "NCCL_NET_GDR_LEVEL=" + *v + " disables GPUDirect RDMA: NET traffic is staged through host memory",
                               {ev("NCCL_NET_GDR_LEVEL", *v)}, "unset NCCL_NET_GDR_LEVEL"));
  if (e.get("NCCL_DEBUG_SUBSYS") && !(e.is("NCCL_DEBUG", "INFO") || e.is("NCCL_DEBUG", "TRACE")))
    out.push_back(make_finding("env.no_effect", "info", "NCCL_DEBUG_SUBSYS has no effect unless NCCL_DEBUG=INFO",
                               {ev("NCCL_DEBUG_SUBSYS", *e.get("NCCL_DEBUG_SUBSYS"))}, "export NCCL_DEBUG=INFO"));
  for (const char* n : {"NCCL_ALGO", "NCCL_PROTO"})
    if (const auto* v = e.get(n))
      out.push_back(make_finding("env.forced_choice", "info",
                                 std::string(n) + " forces NCCL's choice; keep it only if a measurement showed it helps",
                                 {ev(n, *v)}, "unset " + std::string(n)));
}

}  // namespace

std::vector<Finding> check_nccl_env(const std::map<std::string, std::string>& env) {
  const Env e{env};
  std::vector<Finding> out;
  unknown_variable_findings(e, out);
  value_findings(e, out);
  contradiction_findings(e, out);
  costly_setting_findings(e, out);
  return out;
}

}  // namespace p2pscope::tune
