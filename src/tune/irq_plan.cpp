// The IRQ / thread plan: per NUMA node, system / TX / RX / application shares of its
// whole cores (the policy in tune.hpp), and optionally one core per IRQ.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "p2pscope/bindings.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/json_words.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::tune {
namespace {

using Core = std::vector<int>;  // thread siblings, sorted

bool has(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

// Queue role from the IRQ's action name, as drivers name them: "eth1-TxRx-3",
// "mlx5_comp5@pci:...", "gve-ntfy-blk2@pci:...", "virtio2-input.0", "eth0-tx-1".
std::string irq_role(const std::string& name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (has(n, "txrx") || has(n, "tx-rx") || has(n, "rxtx") || has(n, "comp") || has(n, "ntfy") ||
      has(n, "combined"))
    return "combined";
  if (has(n, "-tx") || has(n, "tx-") || has(n, "_tx") || has(n, "output")) return "tx";
  if (has(n, "-rx") || has(n, "rx-") || has(n, "_rx") || has(n, "input")) return "rx";
  if (has(n, "async") || has(n, "config") || has(n, "mgmnt") || has(n, "ctrl") || has(n, "admin") ||
      has(n, "event"))
    return "other";
  return "combined";
}

// Whole cores of a node, each all-free of reserved CPUs, ordered by first CPU.
std::vector<Core> free_cores(const topo::Topology& t, int node, bool single_node, const std::set<int>& reserved) {
  std::set<Core> cores;
  for (const auto& c : t.cpus) {
    const bool on_node = c.numa == node || (single_node && c.numa < 0);
    if (!on_node) continue;
    Core core = c.siblings.empty() ? Core{c.id} : c.siblings;
    std::sort(core.begin(), core.end());
    if (std::find(core.begin(), core.end(), c.id) == core.end()) core = {c.id};  // inconsistent tree
    cores.insert(core);
  }
  std::vector<Core> out;
  for (const auto& core : cores) {
    bool ok = true;
    for (int cpu : core) ok = ok && !reserved.count(cpu);
    if (ok) out.push_back(core);
  }
  std::sort(out.begin(), out.end(), [](const Core& a, const Core& b) { return a.front() < b.front(); });
  return out;
}

std::vector<int> flatten(const std::vector<Core>& cores, std::size_t begin, std::size_t end) {
  std::vector<int> out;
  for (std::size_t i = begin; i < end && i < cores.size(); ++i) out.insert(out.end(), cores[i].begin(), cores[i].end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string management_nic(const topo::Topology& t) {
  if (t.default_route_nic.empty()) return {};
  const topo::Nic* n = t.find_nic(t.default_route_nic);
  if (!n || n->is_virtual()) return {};
  for (const auto& g : t.gpus) {
    const std::string c = topo::path_class(t, g.pci, n->pci);
    if (c == "PIX" || c == "PXB") return {};  // a GPU's own NIC carries the default route
  }
  return n->name;
}

namespace {

void check_plan_options(const PlanOptions& opts) {
  if (opts.style != "shared" && opts.style != "per-nic")
    throw UsageError("--style must be 'shared' or 'per-nic', got '" + opts.style + "'");
  for (int v : {opts.system_cores, opts.tx_cores, opts.rx_cores})
    if (v < -1 || v > 4096) throw UsageError("core counts must be between 0 and 4096, got " + std::to_string(v));
  if (opts.tx_cores == 0 || opts.rx_cores == 0) throw UsageError("--tx-cores and --rx-cores need at least 1 core");
}

// Without --nics: every physical NIC with IRQs except the management one (unless it is the
// only one).
std::vector<const topo::Nic*> default_nics(const topo::Topology& t, IrqPlan& plan) {
  std::vector<const topo::Nic*> chosen;
  const std::string mgmt = management_nic(t);
  for (const auto& n : t.nics) {
    if (n.is_virtual() || n.irqs.empty()) continue;
    if (n.name == mgmt) {
      plan.excluded.push_back(n.name + ": management NIC (default route, no GPU behind its PCIe switch); name it in --nics to plan it");
      continue;
    }
    chosen.push_back(&n);
  }
  if (chosen.empty() && !plan.excluded.empty()) {  // the management NIC is the only one: plan it
    chosen.push_back(t.find_nic(mgmt));
    plan.excluded.clear();
    plan.warnings.push_back(mgmt + " carries the default route and is the only NIC with IRQs: planned anyway");
  }
  if (chosen.empty())
    throw UsageError("no physical NIC with IRQs found; name the NICs with --nics (see 'p2pscope topo')");
  if (!t.route_known && !t.gpus.empty())
    plan.warnings.push_back("default route unknown (no /proc/net/route): the management NIC was not identified; "
                            "list the data NICs with --nics");
  return chosen;
}

std::vector<const topo::Nic*> named_nics(const topo::Topology& t, const std::vector<std::string>& names, IrqPlan& plan) {
  std::vector<const topo::Nic*> chosen;
  for (const auto& name : names) {
    const topo::Nic* found = t.find_nic(name);
    if (!found) {
      std::string known;
      for (const auto& n : t.nics) known += (known.empty() ? "" : ", ") + n.name;
      throw UsageError("--nics: no NIC named '" + name + "' on this machine (NICs: " + known + ")");
    }
    if (std::find(chosen.begin(), chosen.end(), found) == chosen.end()) chosen.push_back(found);
  }
  for (const auto& n : t.nics)
    if (!n.is_virtual() && !n.irqs.empty() && std::find(chosen.begin(), chosen.end(), &n) == chosen.end())
      plan.excluded.push_back(n.name + ": not in --nics");
  return chosen;
}

// Group NICs by node; a NIC of unknown node on a one-node machine lives on node 0.
std::map<int, std::vector<const topo::Nic*>> nics_by_node(const std::vector<const topo::Nic*>& chosen,
                                                          const std::set<int>& nodes, bool single_node, IrqPlan& plan) {
  std::map<int, std::vector<const topo::Nic*>> by_node;
  for (const auto* n : chosen) {
    int node = n->numa;
    if (node < 0 && single_node) node = nodes.empty() || *nodes.rbegin() < 0 ? 0 : *nodes.rbegin();
    if (node < 0) {
      plan.warnings.push_back(n->name + ": NUMA node unknown on a multi-node machine; left out of the plan");
      continue;
    }
    by_node[node].push_back(n);
  }
  return by_node;
}

// How a node's free cores are carved: system cores first, then TX and RX sets, one pair
// per NIC or one pair the NICs share.
struct NodeSizes {
  int sys = 0;
  std::size_t tx_n = 0;
  std::size_t rx_n = 0;
  bool shared = true;
};

NodeSizes size_node(const PlanOptions& opts, int node, std::size_t nic_count, std::size_t all_cores,
                    std::size_t free_cores, bool reserved_any, IrqPlan& plan) {
  NodeSizes z;
  const bool shared_style = opts.style == "shared";
  const int auto_system = reserved_any ? 0 : -1;
  z.sys = opts.system_cores >= 0 ? opts.system_cores : auto_system;
  if (z.sys < 0) z.sys = static_cast<int>(all_cores / 6);
  z.sys = std::min<int>(z.sys, static_cast<int>(free_cores) - 2);
  const std::size_t left = free_cores - static_cast<std::size_t>(z.sys);
  z.tx_n = opts.tx_cores > 0 ? static_cast<std::size_t>(opts.tx_cores) : 0;
  z.rx_n = opts.rx_cores > 0 ? static_cast<std::size_t>(opts.rx_cores) : 0;
  const std::size_t per = shared_style ? 1 : nic_count;  // sets to carve
  if (z.tx_n == 0) z.tx_n = std::max<std::size_t>(1, left / 3 / per);
  if (z.rx_n == 0) z.rx_n = std::max<std::size_t>(1, left / 3 / per);
  z.shared = shared_style;
  if (!z.shared && per * (z.tx_n + z.rx_n) > left) {
    plan.warnings.push_back("NUMA node " + std::to_string(node) + " has " + std::to_string(left) + " free cores for " +
                            std::to_string(nic_count) + " NICs of " + std::to_string(z.tx_n) + "+" +
                            std::to_string(z.rx_n) + " cores: its NICs share one TX set and one RX set");
    z.shared = true;
  }
  if (z.shared && z.tx_n + z.rx_n > left) {
    plan.warnings.push_back("NUMA node " + std::to_string(node) + ": " + std::to_string(z.tx_n) + " TX + " +
                            std::to_string(z.rx_n) + " RX cores asked, " + std::to_string(left) +
                            " free: shrunk to fit, nothing left for the application");
    z.tx_n = std::max<std::size_t>(1, left / 2);
    z.rx_n = left - z.tx_n;
  }
  return z;
}

// One NIC's TX and RX CPUs, and (with plan_irqs) each IRQ on a core of its role's set in turn.
NicPlan plan_nic(const topo::Nic& nic, int node, const std::vector<Core>& tx_cores, const std::vector<Core>& rx_cores,
                 bool plan_irqs) {
  NicPlan np;
  np.name = nic.name;
  np.numa = node;
  np.tx_cpus = flatten(tx_cores, 0, tx_cores.size());
  np.rx_cpus = flatten(rx_cores, 0, rx_cores.size());
  std::map<std::string, std::size_t> next;  // round-robin position per set
  for (const auto& irq : plan_irqs ? nic.irqs : std::vector<topo::Irq>{}) {
    IrqTarget tgt;
    tgt.irq = irq.irq;
    tgt.name = irq.name;
    tgt.role = irq_role(irq.name);
    const bool to_tx = tgt.role == "tx";
    const auto& set = to_tx ? tx_cores : rx_cores;
    auto& at = next[to_tx ? "tx" : "rx"];
    tgt.cpus = set[at++ % set.size()];
    tgt.mask = format_cpumask(tgt.cpus);
    np.irqs.push_back(std::move(tgt));
  }
  return np;
}

void plan_node(const topo::Topology& t, const PlanOptions& opts, int node, const std::vector<const topo::Nic*>& nics,
               bool single_node, const std::set<int>& reserved, IrqPlan& plan) {
  const auto all = free_cores(t, node, single_node, {});
  const auto cores = free_cores(t, node, single_node, reserved);
  const std::size_t k = nics.size();
  if (cores.size() < 2)
    throw UsageError("NUMA node " + std::to_string(node) + " has " + std::to_string(cores.size()) +
                     " whole core(s) free after --reserve; TX and RX need one core each: reserve fewer CPUs");
  const NodeSizes z = size_node(opts, node, k, all.size(), cores.size(), !reserved.empty(), plan);
  NodeShare share;
  share.numa = node;
  for (const auto& c : all)
    if (std::find(cores.begin(), cores.end(), c) == cores.end()) share.reserved.insert(share.reserved.end(), c.begin(), c.end());
  std::sort(share.reserved.begin(), share.reserved.end());
  share.system = flatten(cores, 0, static_cast<std::size_t>(z.sys));
  std::size_t pos = static_cast<std::size_t>(z.sys);
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t begin = z.shared ? static_cast<std::size_t>(z.sys) : pos;
    const std::vector<Core> tx_cores(cores.begin() + begin, cores.begin() + begin + z.tx_n);
    const std::vector<Core> rx_cores(cores.begin() + begin + z.tx_n, cores.begin() + begin + z.tx_n + z.rx_n);
    if (!z.shared) pos += z.tx_n + z.rx_n;
    NicPlan np = plan_nic(*nics[i], node, tx_cores, rx_cores, opts.plan_irqs);
    if (nics[i]->irqs.empty()) plan.warnings.push_back(np.name + " has no IRQs (virtual NIC?); only thread bindings planned");
    share.tx.insert(share.tx.end(), np.tx_cpus.begin(), np.tx_cpus.end());
    share.rx.insert(share.rx.end(), np.rx_cpus.begin(), np.rx_cpus.end());
    plan.nics.push_back(std::move(np));
  }
  for (auto* v : {&share.tx, &share.rx}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  const std::size_t used_end = z.shared ? static_cast<std::size_t>(z.sys) + z.tx_n + z.rx_n : pos;
  share.application = flatten(cores, used_end, cores.size());
  plan.nodes.push_back(std::move(share));
}

// The plan's one-line policy, in words: what was asked or chosen by default.
std::string policy_text(const PlanOptions& opts, bool reserved_any) {
  std::string sizes = opts.system_cores >= 0 ? std::to_string(opts.system_cores) + " system core(s)"
                      : !reserved_any        ? "the first 1/6 of its cores for the system"
                                             : "no system cores beyond --reserve";
  sizes += ", then ";
  sizes += opts.tx_cores > 0 ? std::to_string(opts.tx_cores) + " TX core(s)" : std::string("a third of the rest for TX");
  sizes += " and ";
  sizes += opts.rx_cores > 0 ? std::to_string(opts.rx_cores) + " RX core(s)" : std::string("a third for RX");
  return "per NUMA node, whole cores in CPU order: " + sizes +
         (opts.style == "shared" ? ", one TX and one RX set shared by the node's NICs" : ", disjoint per NIC") +
         ", the rest for the application; management NIC left out unless named; IRQs " +
         (opts.plan_irqs ? "moved onto the NIC's RX/TX cores" : "left at their defaults (as NCCL does)");
}

}  // namespace

IrqPlan make_plan(const topo::Topology& t, const PlanOptions& opts) {
  check_plan_options(opts);
  IrqPlan plan;
  plan.hostname = t.hostname;
  plan.irqs_planned = opts.plan_irqs;
  const std::set<int> reserved(opts.reserve.begin(), opts.reserve.end());
  std::set<int> nodes;
  for (const auto& c : t.cpus) nodes.insert(c.numa);
  const bool single_node = nodes.size() <= 1 || (nodes.size() == 2 && nodes.count(-1));

  const std::vector<const topo::Nic*> chosen = opts.nics.empty() ? default_nics(t, plan) : named_nics(t, opts.nics, plan);
  for (const auto& [node, nics] : nics_by_node(chosen, nodes, single_node, plan))
    plan_node(t, opts, node, nics, single_node, reserved, plan);

  std::vector<NicBinding> tx, rx;
  for (const auto& n : plan.nics) {
    tx.push_back({n.name, n.tx_cpus});
    rx.push_back({n.name, n.rx_cpus});
  }
  if (!plan.nics.empty()) {
    plan.tx_bindings = format_bindings(tx);
    plan.rx_bindings = format_bindings(rx);
  }
  plan.policy = policy_text(opts, !reserved.empty());
  return plan;
}

nlohmann::json to_json(const IrqPlan& p) {
  nlohmann::json j;
  j["hostname"] = p.hostname;
  auto& nics = j["nics"] = nlohmann::json::array();
  for (const auto& n : p.nics) {
    nlohmann::json irqs = nlohmann::json::array();
    for (const auto& i : n.irqs)
      irqs.push_back({{"irq", i.irq}, {"name", i.name}, {"role", i.role}, {"cpus", format_cpulist(i.cpus)},
                      {"mask", i.mask}});
    nics.push_back({{"name", n.name},
                    {"numa", n.numa},
                    {"tx_cpus", format_cpulist(n.tx_cpus)},
                    {"rx_cpus", format_cpulist(n.rx_cpus)},
                    {"irqs", irqs}});
  }
  j["policy"] = p.policy;
  j["irqs_planned"] = p.irqs_planned;
  j["excluded"] = p.excluded;
  auto& nodes = j["nodes"] = nlohmann::json::array();
  for (const auto& n : p.nodes)
    nodes.push_back({{"numa", n.numa}, {"reserved", format_cpulist(n.reserved)}, {"system", format_cpulist(n.system)},
                     {"tx", format_cpulist(n.tx)}, {"rx", format_cpulist(n.rx)},
                     {"application", format_cpulist(n.application)}});
  j["env"] = {{"NCCL_GPUDIRECTTCPX_TX_BINDINGS", p.tx_bindings}, {"NCCL_GPUDIRECTTCPX_RX_BINDINGS", p.rx_bindings}};
  j["warnings"] = p.warnings;
  return j;
}

IrqPlan plan_from_json(const nlohmann::json& j) {
  try {
    IrqPlan p;
    p.hostname = j.value("hostname", "");
    p.policy = j.value("policy", "");
    p.irqs_planned = j.value("irqs_planned", true);
    for (const auto& n : j.at("nics")) {
      NicPlan np;
      np.name = n.at("name").get<std::string>();
      np.numa = n.value("numa", -1);
      np.tx_cpus = parse_cpulist(n.value("tx_cpus", ""));
      np.rx_cpus = parse_cpulist(n.value("rx_cpus", ""));
      for (const auto& i : n.at("irqs")) {
        IrqTarget t;
        t.irq = i.at("irq").get<int>();
        t.name = i.value("name", "");
        t.role = i.value("role", "");
        t.cpus = parse_cpulist(i.at("cpus").get<std::string>());
        t.mask = i.value("mask", "");
        if (t.cpus.empty()) throw UsageError("plan: IRQ " + std::to_string(t.irq) + " has an empty CPU set");
        if (!t.mask.empty() && parse_cpumask(t.mask) != t.cpus)
          throw UsageError("plan: IRQ " + std::to_string(t.irq) + " mask '" + t.mask + "' does not match cpus '" +
                           format_cpulist(t.cpus) + "'");
        np.irqs.push_back(std::move(t));
      }
      p.nics.push_back(std::move(np));
    }
    if (j.contains("env")) {
      p.tx_bindings = j["env"].value("NCCL_GPUDIRECTTCPX_TX_BINDINGS", "");
      p.rx_bindings = j["env"].value("NCCL_GPUDIRECTTCPX_RX_BINDINGS", "");
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("not an 'irq plan' JSON document: ") + json_error_words(e.what()));
  }
}

}  // namespace p2pscope::tune
