// `p2pscope bench gpu`: point-to-point bandwidth and latency through one backend
// (host, ce[-pull|-both][@N], sm, sm-pull, staged, nccl). Text (matrix for one size, rows for a
// sweep), CSV or JSON with run metadata and topology; --out FILE or DIR.
// `bench nccl` (collectives) is in cmd_bench_nccl.cpp.
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "bench/sweep.hpp"
#include "bench_common.hpp"
#include "profile/setup.hpp"
#include "progress.hpp"
#include "p2pscope/phase_trace.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/signals.hpp"
#include "p2pscope/text.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::app {
namespace {

struct GpuOptions : BenchCommon {
  std::string backend, variant, pattern = "uni", pairs;
  bool no_verify = false;
  std::string testcase;  // nvbandwidth's -t NAME
  bool list = false;     // nvbandwidth's --list
  int buffer_mib = 0;    // nvbandwidth's -b (MiB)
  const CLI::App* cmd = nullptr;  // to tell a flag given from one left at its default
};

// nvbandwidth's testcases that bench gpu measures the same way, and how.
struct Testcase {
  const char* name;
  const char* backend;
  const char* variant;
  const char* pattern;
  const char* pairs;  // "" every GPU pair; "h2d" host to each GPU; "d2h" each GPU to host
  const char* note;
};
constexpr Testcase kTestcases[] = {
    {"device_to_device_memcpy_read_ce", "ce", "pull", "uni", "", "the destination's copy engine reads"},
    {"device_to_device_memcpy_write_ce", "ce", "push", "uni", "", "the source's copy engine writes"},
    {"device_to_device_bidirectional_memcpy_read_ce", "ce", "pull", "bidir", "", "both ways at once, total"},
    {"device_to_device_bidirectional_memcpy_write_ce", "ce", "push", "bidir", "", "both ways at once, total"},
    {"device_to_device_memcpy_read_sm", "sm", "pull", "uni", "", "copy kernel on the destination"},
    {"device_to_device_memcpy_write_sm", "sm", "push", "uni", "", "copy kernel on the source"},
    {"device_to_device_bidirectional_memcpy_read_sm", "sm", "pull", "bidir", "", "both ways at once, total"},
    {"device_to_device_bidirectional_memcpy_write_sm", "sm", "push", "bidir", "", "both ways at once, total"},
    {"host_to_device_memcpy_ce", "staged", "", "uni", "h2d", "pinned host memory to each GPU"},
    {"device_to_host_memcpy_ce", "staged", "", "uni", "d2h", "each GPU to pinned host memory"},
    {"host_to_device_bidirectional_memcpy_ce", "staged", "", "bidir", "h2d", "both ways at once, total"},
    {"device_to_host_bidirectional_memcpy_ce", "staged", "", "bidir", "d2h", "both ways at once, total"},
    {"device_to_device_latency_sm", "sm", "", "latency", "",
     "NOT the same figure: nvbandwidth chases pointers (a load, ~0.8 us on NVLink); p2pscope times a message ping-pong"},
};

std::string testcase_list() {
  std::string out = "nvbandwidth testcase -> p2pscope bench gpu (default size 512M, as nvbandwidth's -b 512)\n";
  for (const auto& t : kTestcases)
    out += fmt::format("  {:<48} --backend {}{}{} --pattern {}{}   # {}\n", t.name, t.backend, *t.variant ? " --variant " : "",
                       t.variant, t.pattern, std::string(t.pairs) == "h2d"   ? " --pairs host:0,..."
                                             : std::string(t.pairs) == "d2h" ? " --pairs 0:host,..."
                                                                             : "",
                       t.note);
  out += "Not measured by p2pscope: the all_to_one / one_to_all / all_to_host / host_to_all testcases and the "
         "*_memcpy_sm host cases.\n";
  return out;
}

// -t NAME: the options that measure it; a given --backend/--variant/--pattern/--pairs
// that disagrees is refused rather than silently replaced.
void apply_testcase(GpuOptions& o) {
  if (o.buffer_mib < 0) throw UsageError("-b/--bufferSize is in MiB and must be 1 or more");
  if (o.buffer_mib > 0) {
    if (!o.sizes.empty()) throw UsageError("-b/--bufferSize (nvbandwidth's MiB) and --sizes both give the size: use one");
    o.sizes = std::to_string(o.buffer_mib) + "M";
  }
  if (o.testcase.empty()) return;
  const Testcase* tc = nullptr;
  for (const auto& t : kTestcases)
    if (o.testcase == t.name) tc = &t;
  if (!tc) {
    std::string near;
    for (const auto& t : kTestcases)
      if (std::string(t.name).find(o.testcase) != std::string::npos) near += std::string(near.empty() ? "" : ", ") + t.name;
    throw UsageError("-t/--testcase '" + o.testcase + "' is not an nvbandwidth testcase bench gpu measures" +
                     (near.empty() ? std::string() : "; did you mean " + near + "?") +
                     " (`p2pscope bench gpu --list` names them all)");
  }
  auto given = [&](const char* flag) { return o.cmd && o.cmd->count(flag) > 0; };
  for (const char* f : {"--backend", "--variant", "--pattern", "--pairs"})
    if (given(f))
      throw UsageError(std::string("-t ") + tc->name + " sets " + f + " itself (see `p2pscope bench gpu --list`): drop " + f +
                       " or drop -t");
  o.backend = tc->backend;
  o.variant = tc->variant;
  o.pattern = tc->pattern;
  const std::string pairs = tc->pairs;
  if (!pairs.empty()) {
    const int n = gpu::runtime_info().device_count;
    if (n < 1) throw Error(std::string("-t ") + tc->name + " needs a GPU: " + gpu::runtime_info().why_no_gpu);
    for (int d = 0; d < n; ++d) o.pairs += (o.pairs.empty() ? "" : ",") + (pairs == "h2d" ? "host:" + std::to_string(d) : std::to_string(d) + ":host");
  }
  if (o.sizes.empty() && std::string(tc->pattern) != "latency") o.sizes = "512M";  // nvbandwidth's default buffer
}

// nvbandwidth's "SUM <testcase> <GB/s>" under its matrix: the sum over the pairs at `size`.
std::string sum_line(const std::string& testcase, const bench::SweepResult& r, std::uint64_t size) {
  double sum = 0;
  for (const auto& row : r.rows)
    if (row.bytes == size && row.support.ok && row.time_ns.median > 0)
      sum += bench::gbps(static_cast<double>(row.bytes), row.time_ns.median);
  return fmt::format("SUM {} {:.2f}\n", testcase, sum);
}

// What the sweep measured, for every printer: for people a header, the matrix when
// there is one size (and nvbandwidth's SUM under -t), the rows and their notes; the rows
// for csv; `json` builds the document (with metadata) only when JSON is printed.
out::Report gpu_report(const GpuOptions& o, const bench::SweepSpec& spec, const bench::SweepResult& r,
                       std::function<out::JsonDoc()> json) {
  out::Report rep;
  std::string head = "# p2pscope bench gpu: " + bench::describe(r) + "\n";
  for (std::size_t d = 0; d < r.device_names.size(); ++d)
    head += fmt::format("# device {}: {}\n", d, r.device_names[d]);
  rep.text.emplace_back(std::move(head));
  if (spec.sizes.size() == 1) {
    const bool t = spec.mode == bench::Mode::latency || spec.mode == bench::Mode::blocking;
    const char* what = t                                         ? " (us, median)"
                       : spec.mode == bench::Mode::bidirectional ? " total (GB/s, median)"
                                                                 : " (GB/s, median)";
    rep.text.emplace_back("\n" + bench::to_string(spec.mode) + what + " at " + format_size(spec.sizes[0]) +
                          "; row = source, column = destination\n");
    rep.text.emplace_back(bench::matrix_table(r, spec.sizes[0]));
    rep.text.emplace_back((!o.testcase.empty() && !t ? sum_line(o.testcase, r, spec.sizes[0]) : "") + "\n");
  }
  rep.tables.push_back(bench::rows_table(r));
  rep.text.emplace_back(rep.tables.back());
  std::string notes, last_note;
  for (const auto& row : r.rows)
    if (!row.note.empty() && row.note != last_note) notes += "# " + (last_note = row.note) + "\n";
  if (!r.stopped.empty()) notes += "# " + r.stopped + "\n";
  rep.text.emplace_back(std::move(notes));
  rep.json = std::move(json);
  return rep;
}

void run_gpu(GpuOptions& o, Context& ctx) {
  if (o.list) {
    std::cout << testcase_list();
    return;
  }
  apply_testcase(o);
  const out::Output output = check_bench_common(o);
  const auto mode = bench::parse_mode(o.pattern);
  const auto rt = gpu::runtime_info();
  trace_phase("bench gpu: CUDA runtime read");
  start_topology_discovery();
  // Under mpirun/srun/torchrun: one process per GPU, meeting through the bootstrap;
  // every rank measures, rank 0 alone reports.
  std::string backend = o.backend;
  const Launched ranks = bring_up_ranks(ctx, [&backend](const LaunchInfo& l) {
    if (backend.empty()) backend = bench::default_backend(bench::this_machine(true)).name;
    if (!bench::resolve_backend(backend).info->can.ranks)
      throw UsageError(fmt::format("this is rank {} of {} processes ({}), and only --backend nccl runs as one process "
                                   "per GPU; backend {} drives every GPU from one process: run it without the launcher",
                                   l.rank, l.size, l.launcher, backend));
  });
  const LaunchInfo& launch = ranks.launch;
  const std::vector<std::string>& rank_cpus = ranks.rank_cpus;  // per rank: the CPUs it may run on
  // One process: the default `run` and `profile` take (staged with one GPU, which has no pair for ce).
  if (backend.empty()) backend = bench::default_backend(bench::this_machine(launch.multi_process())).name;
  const bench::BackendCaps can = bench::resolve_backend(backend).info->can;
  if (!o.variant.empty() && bench::resolve_backend(backend).info->variants.empty())
    throw UsageError("--variant '" + o.variant + "': backend " + backend + " has no variants (sm and ce have); drop --variant");
  bench::BackendOptions bo;
  bo.variant = o.variant;
  bo.verify = !o.no_verify;
  if (ranks.boot) {
    bo.bootstrap = ranks.boot;
    bo.rank_device = launch.local_rank;
  }
  const bool reporter = launch.rank == 0;
  // Ctrl-C ends the sweep after the row in progress (or the buffer set-up, in 16 MiB
  // slices) and reports what was measured. Set before the backend starts, so a signal
  // during its start-up is seen too. Not under a launcher: ranks stopping at different
  // rows would leave NCCL calls unmatched.
  std::optional<InterruptFlag> interrupt;
  if (!launch.multi_process()) interrupt.emplace("p2pscope bench gpu");
  auto b = bench::make_backend(backend, bo);
  bench::SweepSpec spec;
  spec.mode = mode;
  const bool small = mode == bench::Mode::latency || mode == bench::Mode::blocking;
  spec.sizes = sizes_or(o.sizes, small ? "8" : std::string(bench::resolve_backend(backend).info->bandwidth_size));
  const int host_index = can.host_endpoint ? b->device_count() - 1 : -1;
  if (!o.pairs.empty() || (o.cmd && o.cmd->count("--pairs") > 0)) spec.pairs = bench::parse_pairs(o.pairs, host_index);
  spec.warmup = o.warmup;
  spec.iters = o.iters;
  spec.verify = !o.no_verify;
  BenchCommon mon_opts = o;
  mon_opts.monitor = o.monitor && reporter;  // one monitor.csv per run, not one per rank
  mon_opts.host_waits_on_gpu = can.gpu_memory;
  BenchMonitor mon(mon_opts);
  trace_phase("bench gpu: backend made, monitor started");
  wait_topology_discovery();  // the backend's start is shorter than the read: nothing beside a timed copy
  if (interrupt) spec.stop = interrupt->flag();
  if (reporter) {
    spec.on_setup = setup_printer("bench gpu");
    spec.setup_note_after_s = progress_after_s(1.0);
  }
  RowProgress progress("bench gpu", 2.0);
  if (reporter)
    spec.on_row = [&](std::size_t done, std::size_t planned, const bench::SweepRow& row) {
      std::string figure = "n/a";
      if (row.support.ok)
        figure = small ? fmt::format("{:.2f} us", row.time_ns.median / 1e3)
                       : fmt::format("{:.2f} GB/s", bench::gbps(static_cast<double>(row.bytes), row.time_ns.median));
      progress(done, planned, fmt::format("{}->{} {}: {}", row.src, row.dst, format_size(row.bytes), figure));
    };
  const bench::SweepResult r = bench::run_sweep(*b, spec);
  trace_phase("bench gpu: sweep done");
  if (!reporter) {  // rank 0 prints; the others only say what went wrong
    if (!r.stopped.empty()) throw Error(r.stopped);
    if (!r.data_ok()) throw Error(r.first_failure());
    return;
  }

  const std::string text = output.print(gpu_report(o, spec, r, [&] {
    nlohmann::json j = bench::to_json(r);
    j["launch"] = launch_json(launch, rank_cpus);
    mon.finish(&j);
    return bench_json(std::move(j), ctx);
  }));
  mon.finish(nullptr);
  emit(text, output, o, fmt::format("bench_gpu_{}_{}", r.backend, bench::to_string(mode)));
  if (r.interrupted) {
    std::cerr << "bench gpu: " << r.stopped << "; what was measured is reported\n";
    ctx.exit_code = 128 + interrupt->signal_number();
    return;
  }
  if (!r.stopped.empty()) throw Error(r.stopped);
  if (!r.data_ok()) throw Error(r.first_failure());
}

}  // namespace

void add_bench_commands(CLI::App& bench, Context& ctx) {
  auto g = std::make_shared<GpuOptions>();
  auto* c = bench.add_subcommand("gpu", "GPU point-to-point bandwidth and latency (ce, sm, staged, nccl; host without a GPU)");
  const std::string names = join(bench::backend_names());
  c->add_option("--backend", g->backend, "one of: " + names + " (default: ce with 2+ GPUs, staged with one, else host)");
  c->add_option("--variant", g->variant,
                "sm: push (source writes) or pull (destination reads); push@N = N blocks per SM. "
                "ce: push (the source's copy engine), pull (the destination's) or both, @N = each copy of 1 MiB or more "
                "cut in N slices on N streams, +host[P] = P % (default 8) of each peer copy of 64 MiB or more through "
                "pinned host memory at the same time (two paths: NVLink and PCIe)");
  c->add_option("--pattern", g->pattern, "uni, bidir, latency (GPU ping-pong, one-way = rtt/2) or blocking (host-observed)")
      ->capture_default_str();
  c->add_option("--pairs", g->pairs, "directed pairs SRC:DST,... (default: every pair); staged: 'host' or N = host memory");
  add_bench_common(*c, *g, "sizes, e.g. 1G, 4K,1M or 1:1G (powers of two); default 1G (host 64M), latency/blocking 8");
  c->add_flag("--no-verify", g->no_verify, "skip the on-GPU check of the received data");
  c->add_option("-t,--testcase", g->testcase, "an nvbandwidth testcase name, e.g. device_to_device_memcpy_read_ce: "
                                              "sets --backend, --variant, --pattern and --pairs as it measures");
  c->add_flag("-l,--list", g->list, "list the nvbandwidth testcases -t takes and what each runs");
  c->add_option("-b,--bufferSize", g->buffer_mib, "nvbandwidth's -b: buffer size in MiB (as --sizes NM)");
  g->cmd = c;
  c->footer(
      "Examples:\n"
      "  p2pscope bench gpu --backend ce --sizes 1G                  # matrix of every GPU pair\n"
      "  p2pscope bench gpu --backend sm --variant pull --pairs 0:1 --sizes 1K:1G\n"
      "  p2pscope bench gpu --backend ce-pull --pattern bidir --pairs 0:1  # destination engines, as nvbandwidth read_ce\n"
      "  p2pscope bench gpu --backend ce --pattern latency --pairs 0:1,1:0\n"
      "  p2pscope bench gpu --backend ce+host10 --pairs 0:1 --sizes 1G     # NVLink and PCIe at once\n"
      "  p2pscope bench gpu --backend staged --pairs host:0,0:host --sizes 1G\n"
      "  p2pscope bench gpu --backend host --pattern bidir --sizes 4M --format json --out results/\n"
      "  mpirun -np 2 p2pscope bench gpu --backend nccl --sizes 8:1G   # one process per GPU, like torchrun\n"
      "  p2pscope bench gpu -t device_to_device_memcpy_read_ce            # nvbandwidth's testcase names (--list)\n"
      "Under mpirun, srun or torchrun the ranks meet over TCP at P2PSCOPE_RENDEZVOUS=HOST:PORT (default: MASTER_ADDR,\n"
      "else 127.0.0.1 on one host, with a port derived from the job id); rank 0 reports.");
  c->callback([g, &ctx] { run_gpu(*g, ctx); });
  add_bench_nccl_command(bench, ctx);
}

}  // namespace p2pscope::app
