// `p2pscope irq snapshot|diff|plan|apply|reset`: where interrupts run, a NUMA-aware
// TX/RX CPU plan, and applying/undoing it safely (dry run unless --yes, backup first).
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "commands.hpp"
#include "output_option.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tune.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::app {
namespace {

struct IrqOptions {
  std::string root = "/";
  std::string out, format = "text", interval = "5s";
  std::string a, b, plan_file, backup;
  std::vector<std::string> nics;
  std::string reserve, style = "shared";
  int system_cores = -1, tx_cores = -1, rx_cores = -1;
  bool yes = false, dry_run = false, move_irqs = false, force = false;
  int top = 10;
};

nlohmann::json read_json_file(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw UsageError(std::string("cannot open ") + what + " '" + path + "': " + errno_text(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw UsageError(std::string(what) + " '" + path + "' is not valid JSON");
  return j;
}

void emit(const std::string& text, const std::string& out, bool force) {
  if (out.empty() || out == "-") {
    std::cout << text;
    return;
  }
  write_file_atomic(out, text, force ? Replace::allow : Replace::refuse);
  std::cerr << "wrote " << out << "\n";
}

std::string diff_text(const tune::IrqDiff& d, int top) {
  std::ostringstream o;
  o << "interval " << fixed(d.interval_s, 2) << " s, imbalance (max/mean per CPU) " << fixed(d.imbalance, 2) << "\n\n";
  Table irqs({"irq", "name", "device", "numa", "count", "per_s", "remote"});
  for (std::size_t i = 0; i < d.irqs.size() && static_cast<int>(i) < top; ++i) {
    const auto& x = d.irqs[i];
    irqs.add_row({std::to_string(x.irq), x.name, x.device, std::to_string(x.numa), std::to_string(x.count),
                  fixed(x.per_s, 1), std::to_string(x.remote_count)});
  }
  o << "busiest IRQs\n" << irqs.to_text() << "\n";
  Table cpus({"cpu", "numa", "count", "per_s"});
  for (std::size_t i = 0; i < d.cpus.size() && static_cast<int>(i) < top; ++i)
    cpus.add_row({std::to_string(d.cpus[i].cpu), std::to_string(d.cpus[i].numa), std::to_string(d.cpus[i].count),
                  fixed(d.cpus[i].per_s, 1)});
  o << "busiest CPUs\n" << cpus.to_text() << "\n";
  Table nics({"nic", "numa", "count", "per_s", "remote", "serving_cpus"});
  for (const auto& n : d.nics)
    nics.add_row({n.nic, std::to_string(n.numa), std::to_string(n.count), fixed(n.per_s, 1),
                  std::to_string(n.remote_count), format_cpulist(n.serving_cpus)});
  o << "per NIC\n" << nics.to_text() << "\n";
  if (d.mismatches.empty()) o << "NUMA mismatches: none\n";
  for (const auto& m : d.mismatches) o << "NUMA MISMATCH " << m.nic << ": " << m.reason << "\n";
  for (const auto& w : d.warnings) o << "warning: " << w << "\n";
  return o.str();
}

std::string plan_text(const tune::IrqPlan& p) {
  std::ostringstream o;
  o << "policy: " << p.policy << "\n";
  for (const auto& x : p.excluded) o << "left out: " << x << "\n";
  Table shares({"numa", "reserved", "system", "TX", "RX", "application"});
  auto cell = [](const std::vector<int>& v) { return v.empty() ? std::string("-") : format_cpulist(v); };
  for (const auto& n : p.nodes)
    shares.add_row({std::to_string(n.numa), cell(n.reserved), cell(n.system), cell(n.tx), cell(n.rx), cell(n.application)});
  o << "\n" << shares.to_text() << "\n";
  if (!p.irqs_planned) o << "IRQs: left at their defaults (NCCL does not move them); --move-irqs plans them\n\n";
  for (const auto& n : p.nics) {
    o << n.name << " (NUMA " << n.numa << "): TX " << format_cpulist(n.tx_cpus) << "   RX " << format_cpulist(n.rx_cpus)
      << "\n";
    Table t({"irq", "name", "role", "cpus", "smp_affinity"});
    for (const auto& i : n.irqs) t.add_row({std::to_string(i.irq), i.name, i.role, format_cpulist(i.cpus), i.mask});
    if (!n.irqs.empty()) o << t.to_text();
    o << "\n";
  }
  o << "export NCCL_GPUDIRECTTCPX_TX_BINDINGS=\"" << p.tx_bindings << "\"\n";
  o << "export NCCL_GPUDIRECTTCPX_RX_BINDINGS=\"" << p.rx_bindings << "\"\n";
  o << "p2pscope bench tcp ... --tx-bind \"" << p.tx_bindings << "\" --rx-bind \"" << p.rx_bindings << "\"\n";
  for (const auto& w : p.warnings) o << "warning: " << w << "\n";
  return o.str();
}

void print_apply(const tune::ApplyResult& r, const char* verb) {
  Table t({"irq", "name", "from", "to", "from_mask", "to_mask", "change"});
  int changes = 0;
  std::set<int> refused;
  for (const auto& x : r.refused) refused.insert(x.irq);
  for (const auto& c : r.changes) {
    changes += c.changed() ? 1 : 0;
    // What happened, not what was asked: a refused IRQ kept its old CPUs. One refused
    // before any write (a link under --root) is refused in a dry run too.
    const std::string what = !c.changed()           ? "-"
                             : refused.count(c.irq) ? "REFUSED"
                             : r.dry_run            ? "would"
                                                    : "yes";
    t.add_row({std::to_string(c.irq), c.name, format_cpulist(c.from_cpus), format_cpulist(c.to_cpus), c.from_mask,
               c.to_mask, what});
  }
  std::cout << t.to_text();
  if (r.dry_run) {
    std::cout << "dry run: " << changes << " of " << r.changes.size() << " IRQs would change; add --yes to " << verb
              << "\n";
    for (const auto& x : r.refused) std::cout << "REFUSED irq " << x.irq << ": " << x.reason << "\n";
    return;
  }
  std::cout << verb << ": " << r.applied.size() << " IRQ(s) written and read back\n";
  for (const auto& x : r.refused) std::cout << "REFUSED irq " << x.irq << ": " << x.reason << "\n";
}

// What irq diff and irq plan print: their text, or their JSON, each made only when printed.
out::Report irq_report(out::TextFn text, std::function<nlohmann::json()> json) {
  out::Report rep;
  rep.text.emplace_back(std::move(text));
  rep.json = std::move(json);
  return rep;
}

// irq diff: two snapshot files, one file against the machine now, or the machine sampled twice.
void run_irq_diff(const IrqOptions& o) {
  const out::Output output = chosen_output(o.format);
  const FsRoot fs(o.root);
  tune::IrqSnapshot a, b;
  if (!o.a.empty() && !o.b.empty()) {
    a = tune::snapshot_from_json(read_json_file(o.a, "snapshot"));
    b = tune::snapshot_from_json(read_json_file(o.b, "snapshot"));
  } else {
    const double secs = parse_duration_s(o.interval);
    if (secs <= 0 || secs > 3600) throw UsageError("--duration must be between 0 and 1h, got '" + o.interval + "'");
    if (o.a.empty()) {  // sample the machine twice, --duration apart
      a = tune::take_snapshot(fs);
      std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    } else {  // A against the machine now
      a = tune::snapshot_from_json(read_json_file(o.a, "snapshot"));
    }
    b = tune::take_snapshot(fs);
  }
  const auto r = tune::diff(a, b);
  std::cout << output.print(irq_report([&] { return diff_text(r, o.top); }, [&] { return tune::to_json(r); }));
}

// One function per subcommand of `irq`; they share one IrqOptions (one subcommand runs).
void add_snapshot_command(CLI::App* irq, const std::shared_ptr<IrqOptions>& opt, Context& ctx) {
  auto* snap = irq->add_subcommand("snapshot", "IRQs with owners, affinity and per-CPU counts, as JSON");
  snap->add_option("--root", opt->root, "Root of a captured tree instead of /");
  snap->add_option("--out", opt->out, "Write the JSON here instead of stdout");
  snap->add_flag("--force", opt->force, "Replace the --out file if it exists");
  snap->callback([opt, &ctx] {
    const FsRoot fs(opt->root);
    const auto j = out::measured_json(run_metadata(ctx.argv), tune::to_json(tune::take_snapshot(fs)));
    emit(out::dump_json(j, 2) + "\n", opt->out, opt->force);
  });
}

void add_diff_command(CLI::App* irq, const std::shared_ptr<IrqOptions>& opt) {
  auto* d = irq->add_subcommand("diff", "Interrupt rates between two snapshots, or over --duration on this machine");
  d->add_option("a", opt->a, "Earlier snapshot JSON (omit both to sample the live system)");
  d->add_option("b", opt->b, "Later snapshot JSON (omit to compare A with the machine now)");
  d->add_option("--duration", opt->interval, "Sample this long when B is not given (default 5s; as monitor --duration)");
  d->add_option("--root", opt->root, "Root for live sampling");
  add_format_option(*d, opt->format, {out::Format::text, out::Format::json}, "text or json");
  d->add_option("--top", opt->top, "Rows of busiest IRQs/CPUs in text output");
  d->callback([opt] { run_irq_diff(*opt); });
}

void add_plan_command(CLI::App* irq, const std::shared_ptr<IrqOptions>& opt) {
  auto* plan = irq->add_subcommand("plan", "Per-NIC TX/RX CPU sets and IRQ targets on the NIC's NUMA node");
  plan->add_option("--nics", opt->nics, "NICs to plan (default: every physical NIC with IRQs)")->delimiter(',');
  plan->add_option("--reserve", opt->reserve, "CPUs to keep free, e.g. 0-7 (replaces the system-core share)");
  plan->add_option("--style", opt->style, "shared (one TX and one RX set per NUMA node, NCCL's reference) or per-nic")
      ->check(CLI::IsMember({"shared", "per-nic"}));
  plan->add_option("--system-cores", opt->system_cores, "Cores per node left to the system first (default: 1/6 of the node)");
  plan->add_option("--tx-cores", opt->tx_cores, "TX cores per node (shared) or per NIC (per-nic); default a third of the rest");
  plan->add_option("--rx-cores", opt->rx_cores, "RX cores, like --tx-cores");
  plan->add_flag("--move-irqs", opt->move_irqs, "Also plan IRQ affinities onto the TX/RX cores (default: leave IRQs alone)");
  plan->add_option("--root", opt->root, "Root of a captured tree instead of /");
  add_format_option(*plan, opt->format, {out::Format::text, out::Format::json}, "text or json");
  plan->add_option("--out", opt->out, "Write the plan here instead of stdout");
  plan->add_flag("--force", opt->force, "Replace the --out file if it exists");
  plan->callback([opt] {
    const out::Output output = chosen_output(opt->format);
    const FsRoot fs(opt->root);
    topo::DiscoverOptions dopts;
    dopts.use_nvml = false;
    const auto t = topo::discover(fs, dopts);
    tune::PlanOptions po;
    po.nics = opt->nics;
    po.reserve = parse_cpulist(opt->reserve);
    po.style = opt->style;
    po.system_cores = opt->system_cores;
    po.tx_cores = opt->tx_cores;
    po.rx_cores = opt->rx_cores;
    po.plan_irqs = opt->move_irqs;
    const auto p = tune::make_plan(t, po);
    emit(output.print(irq_report([&] { return plan_text(p); }, [&] { return tune::to_json(p); })), opt->out,
         opt->force);
  });
}

void add_apply_command(CLI::App* irq, const std::shared_ptr<IrqOptions>& opt, Context& ctx) {
  auto* apply = irq->add_subcommand("apply", "Apply a plan's IRQ affinities (dry run unless --yes)");
  apply->add_option("plan", opt->plan_file, "Plan JSON from 'irq plan --format json'")->required();
  apply->add_flag("--yes", opt->yes, "Really write (needs root on the live system)");
  apply->add_flag("--dry-run", opt->dry_run, "Show the changes only (the default)");
  apply->add_option("--backup", opt->backup, "Backup file written before any change (default irq-backup-<time>.json)");
  apply->add_option("--root", opt->root, "Root of a captured tree instead of /");
  apply->callback([opt, &ctx] {
    const FsRoot fs(opt->root);
    const auto plan = tune::plan_from_json(read_json_file(opt->plan_file, "plan"));
    const bool dry = !opt->yes || opt->dry_run;
    std::string backup = opt->backup;
    if (!dry && backup.empty()) backup = "irq-backup-" + compact_timestamp(realtime_ns()) + ".json";
    const auto r = tune::apply_plan(fs, plan, dry, backup);
    print_apply(r, "apply");
    if (!dry) std::cout << "backup: " << backup << "   (undo: p2pscope irq reset --backup " << backup << " --yes)\n";
    if (!r.refused.empty()) ctx.exit_code = 3;
  });
}

void add_reset_command(CLI::App* irq, const std::shared_ptr<IrqOptions>& opt, Context& ctx) {
  auto* reset = irq->add_subcommand("reset", "Restore the IRQ affinities saved by 'irq apply' (dry run unless --yes)");
  reset->add_option("--backup", opt->backup, "Backup file from 'irq apply'")->required();
  reset->add_flag("--yes", opt->yes, "Really write (needs root on the live system)");
  reset->add_option("--root", opt->root, "Root of a captured tree instead of /");
  reset->callback([opt, &ctx] {
    const FsRoot fs(opt->root);
    const auto r = tune::reset_from_backup(fs, tune::read_backup_file(opt->backup), !opt->yes);
    print_apply(r, "reset");
    if (!r.refused.empty()) ctx.exit_code = 3;
  });
}

}  // namespace

void add_irq_commands(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<IrqOptions>();
  auto* irq = app.add_subcommand("irq", "IRQ snapshots, NUMA-aware TX/RX CPU plans, apply and reset");
  irq->require_subcommand(1);
  add_snapshot_command(irq, opt, ctx);
  add_diff_command(irq, opt);
  add_plan_command(irq, opt);
  add_apply_command(irq, opt, ctx);
  add_reset_command(irq, opt, ctx);
}

}  // namespace p2pscope::app
