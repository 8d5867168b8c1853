// `p2pscope bench gpu`: point-to-point bandwidth and latency through one backend
// (host, ce, sm, sm-pull, staged, nccl), and `p2pscope bench nccl`: NCCL collectives
// with nccl-tests' algbw/busbw. Text (matrix for one size, rows for a sweep), CSV or
// JSON with run metadata and topology; --out FILE or DIR.
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "bench/formulas.hpp"
#include "bench/nccl_collective.hpp"
#include "bench/sweep.hpp"
#include "commands.hpp"
#include "p2pscope/affinity.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/bootstrap.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/fsroot.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/monitor.hpp"
#include "p2pscope/topo.hpp"
#include "p2pscope/units.hpp"

namespace p2pscope::app {
namespace {

struct Common {
  std::string sizes, format = "text", out, monitor_interval = "1s";
  int warmup = 5, iters = 20;
  bool monitor = false;
  bool host_waits_on_gpu = false;  // set once the backend is known: not for `host`
};

// --monitor: the system monitor samples while the benchmark runs; monitor.csv goes
// next to the output (--out DIR, or FILE's directory), else into ./p2pscope-out.
class Monitor {
 public:
  explicit Monitor(const Common& c) {
    if (!c.monitor) return;
    const double interval = monitor::parse_monitor_interval(c.monitor_interval);
    namespace fs = std::filesystem;
    std::error_code ec;
    std::string dir = "p2pscope-out";
    if (!c.out.empty() && c.out != "-") {
      if (c.out.back() == '/' || fs::is_directory(c.out, ec)) dir = c.out;
      else dir = fs::path(c.out).parent_path().empty() ? "." : fs::path(c.out).parent_path().string();
    }
    monitor::Options mo;
    mo.host_waits_on_gpu = c.host_waits_on_gpu;  // the bench thread waits in cudaStreamSynchronize / NCCL
    session_.emplace(dir, interval, mo);
  }
  // Adds "monitor" to the JSON and prints the verdict lines to stderr.
  void finish(nlohmann::json* j) {
    if (!session_ || done_) return;
    done_ = true;
    const auto res = session_->stop();
    if (j) (*j)["monitor"] = res.json;
    for (const auto& l : res.lines()) std::cerr << l << "\n";
  }
 private:
  std::optional<monitor::MonitorSession> session_;
  bool done_ = false;
};

struct GpuOptions : Common {
  std::string backend, variant, pattern = "uni", pairs;
  bool no_verify = false;
};

struct NcclOptions : Common {
  std::string op = "allreduce", gpus;
};

void check_common(const Common& c) {
  if (c.format != "text" && c.format != "csv" && c.format != "json")
    throw UsageError("--format '" + c.format + "': use text, csv or json");
  if (c.iters < 1) throw UsageError("--iters must be at least 1");
  if (c.warmup < 0) throw UsageError("--warmup must be 0 or more");
}

// run_metadata (with CUDA/NCCL versions) and the topology this ran on.
void add_metadata(nlohmann::json& j, const Context& ctx) {
  nlohmann::json meta = run_metadata(ctx.argv);
  meta["versions"] = gpu::to_json(gpu::runtime_info());
  nlohmann::json topology;
  try {
    topo::Topology t = topo::discover(FsRoot("/"));
    gpu::enrich_with_cuda(t);
    topology = topo::to_json(t);
  } catch (const std::exception& e) {  // the measurement stands without it
    topology = {{"error", e.what()}};
  }
  j["run_metadata"] = std::move(meta);
  j["topology"] = std::move(topology);
}

// --out FILE, or DIR (an existing directory or a path ending in '/'): a named file in it.
void emit(const std::string& text, const Common& c, const std::string& stem) {
  if (c.out.empty() || c.out == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  namespace fs = std::filesystem;
  fs::path p(c.out);
  std::error_code ec;
  if (c.out.back() == '/' || fs::is_directory(p, ec)) {
    fs::create_directories(p, ec);
    if (ec) throw Error("cannot create directory '" + c.out + "': " + ec.message());
    const std::string ext = c.format == "text" ? "txt" : c.format;
    p /= fmt::format("{}_{}.{}", stem, compact_timestamp(realtime_ns()), ext);
  }
  std::ofstream f(p);
  if (!f) throw Error("cannot write '" + p.string() + "': " + errno_text(errno));
  f << text;
  if (!f.flush()) throw Error("write '" + p.string() + "' failed: " + errno_text(errno));
  std::cerr << "wrote " << p.string() << "\n";
}

std::vector<std::uint64_t> sizes_or(const std::string& text, const std::string& fallback) {
  auto v = parse_size_list(text.empty() ? fallback : text);
  if (v.empty()) throw UsageError("--sizes gave no sizes");
  return v;
}

void run_gpu(const GpuOptions& o, Context& ctx) {
  check_common(o);
  const auto mode = bench::parse_mode(o.pattern);
  const auto rt = gpu::runtime_info();
  // Under mpirun/srun/torchrun: one process per GPU, meeting through the bootstrap;
  // every rank measures, rank 0 alone reports.
  const LaunchInfo launch = detect_launch();
  std::vector<std::string> rank_cpus;  // per rank: the CPUs it may run on
  std::string backend = o.backend;
  if (backend.empty()) backend = launch.multi_process() ? "nccl" : rt.device_count > 0 ? "ce" : "host";
  bench::BackendOptions bo;
  bo.variant = o.variant;
  bo.verify = !o.no_verify;
  if (launch.multi_process()) {
    if (backend != "nccl")
      throw UsageError(fmt::format("this is rank {} of {} processes ({}), and only --backend nccl runs as one process "
                                   "per GPU; backend {} drives every GPU from one process: run it without the launcher",
                                   launch.rank, launch.size, launch.launcher, backend));
    bo.bootstrap = make_bootstrap(launch);
    bo.rank_device = launch.local_rank;
    rank_cpus = bo.bootstrap->allgather(format_cpulist(allowed_cpus()));
    if (launch.rank == 0)
      for (std::size_t r = 0; r < rank_cpus.size(); ++r)
        if (parse_cpulist(rank_cpus[r]).size() < 2)
          std::cerr << fmt::format(
              "warning: rank {} may run only on CPU {} (mpirun binds each rank to one core by default): NCCL's proxy "
              "and network threads then share it with the thread waiting on the GPU; over NCCL's socket transport that "
              "measured 12x slower. Use mpirun --bind-to none (or numa).\n",
              r, rank_cpus[r]);
  }
  const bool reporter = launch.rank == 0;
  auto b = bench::make_backend(backend, bo);
  bench::SweepSpec spec;
  spec.mode = mode;
  const bool small = mode == bench::Mode::latency || mode == bench::Mode::blocking;
  spec.sizes = sizes_or(o.sizes, small ? "8" : (backend == "host" ? "64M" : "1G"));
  const int host_index = backend == "staged" ? b->device_count() - 1 : -1;
  if (!o.pairs.empty()) spec.pairs = bench::parse_pairs(o.pairs, host_index);
  spec.warmup = o.warmup;
  spec.iters = o.iters;
  spec.verify = !o.no_verify;
  Common mon_opts = o;
  mon_opts.monitor = o.monitor && reporter;  // one monitor.csv per run, not one per rank
  mon_opts.host_waits_on_gpu = backend != "host";
  Monitor mon(mon_opts);
  const bench::SweepResult r = bench::run_sweep(*b, spec);
  if (!reporter) {  // rank 0 prints; the others only say if their data check failed
    if (!r.data_ok()) throw Error(r.first_failure());
    return;
  }

  std::string text;
  if (o.format == "json") {
    nlohmann::json j = bench::to_json(r);
    add_metadata(j, ctx);
    j["schema_version"] = kSchemaVersion;
    j["launch"] = {{"launcher", launch.launcher}, {"ranks", launch.size}, {"one_process_per_gpu", launch.multi_process()},
                   {"rendezvous", launch.multi_process() ? fmt::format("{}:{}", launch.rendezvous_host, launch.rendezvous_port) : ""},
                   {"cpus_per_rank", rank_cpus}};
    mon.finish(&j);
    text = j.dump(2) + "\n";
  } else if (o.format == "csv") {
    text = bench::rows_table(r).to_csv();
  } else {
    std::ostringstream s;
    s << "# p2pscope bench gpu: " << bench::describe(r) << "\n";
    for (std::size_t d = 0; d < r.device_names.size(); ++d) s << "# device " << d << ": " << r.device_names[d] << "\n";
    if (spec.sizes.size() == 1) {
      const bool t = mode == bench::Mode::latency || mode == bench::Mode::blocking;
      s << "\n" << bench::to_string(mode) << (t ? " (us, median)" : mode == bench::Mode::bidirectional ? " total (GB/s, median)" : " (GB/s, median)")
        << " at " << format_size(spec.sizes[0]) << "; row = source, column = destination\n"
        << bench::matrix_table(r, spec.sizes[0]).to_text() << "\n";
    }
    s << bench::rows_table(r).to_text();
    std::string last_note;
    for (const auto& row : r.rows)
      if (!row.note.empty() && row.note != last_note) s << "# " << (last_note = row.note) << "\n";
    text = s.str();
  }
  mon.finish(nullptr);
  emit(text, o, fmt::format("bench_gpu_{}_{}", r.backend, bench::to_string(mode)));
  if (!r.data_ok()) throw Error(r.first_failure());
}

void run_nccl(const NcclOptions& o, Context& ctx) {
  check_common(o);
  bench::CollectiveSpec spec;
  spec.op = bench::parse_nccl_op(o.op);
  if (const LaunchInfo launch = detect_launch(); launch.multi_process())
    throw UsageError(fmt::format("bench nccl runs its collectives in one process that drives every GPU, but this is "
                                 "rank {} of {} ({}): run it without the launcher (`bench gpu --backend nccl` is the "
                                 "one-process-per-GPU benchmark)",
                                 launch.rank, launch.size, launch.launcher));
  if (!bench::nccl_collectives_built()) bench::run_collective(spec);  // throws "not built in"
  const auto rt = gpu::runtime_info();
  if (rt.device_count < 1) throw Error("bench nccl: no GPU: " + rt.why_no_gpu);
  if (o.gpus.empty()) {
    for (int d = 0; d < rt.device_count; ++d) spec.gpus.push_back(d);
  } else {
    spec.gpus = parse_cpulist(o.gpus);
    for (int d : spec.gpus)
      if (d >= rt.device_count)
        throw UsageError(fmt::format("--gpus names GPU {}, which does not exist: there are {} (0-{})", d, rt.device_count,
                                     rt.device_count - 1));
  }
  spec.warmup = o.warmup;
  spec.iters = o.iters;
  const int n = static_cast<int>(spec.gpus.size());
  Table t({"size", "size_bytes", "count", "type", "time_us", "algbw_GBps", "busbw_GBps", "p5_us", "p50_us", "p95_us", "cv_pct", "check"});
  nlohmann::json rows = nlohmann::json::array();
  std::string failure;
  Common mon_opts = o;
  mon_opts.host_waits_on_gpu = true;
  Monitor mon(mon_opts);
  for (std::uint64_t bytes : sizes_or(o.sizes, "8:1G")) {
    spec.bytes = bytes;
    const auto res = bench::run_collective(spec);
    const Stats s = compute_stats(res.elapsed_ns);
    const double sec = s.median * 1e-9, S = static_cast<double>(res.bytes);
    const std::string check = res.first_bad < 0 ? "ok" : fmt::format("BAD rank {} @{}", res.bad_rank, res.first_bad);
    if (res.first_bad >= 0 && failure.empty())
      failure = fmt::format("{} at {}: rank {} (GPU {}) holds a wrong value at element {}", bench::to_string(spec.op),
                            format_size(res.bytes), res.bad_rank, spec.gpus[static_cast<std::size_t>(res.bad_rank)], res.first_bad);
    t.add_row({format_size_compact(res.bytes), std::to_string(res.bytes), std::to_string(res.bytes / 4), "float",
               fixed(s.median / 1e3, 2), fixed(bench::algbw_gbps(S, sec), 2), fixed(bench::busbw_gbps(spec.op, n, S, sec), 2),
               fixed(s.p5 / 1e3, 2), fixed(s.median / 1e3, 2), fixed(s.p95 / 1e3, 2), fixed(s.cv * 100, 1), check});
    rows.push_back({{"size_bytes", res.bytes}, {"time_ns", {{"median", s.median}, {"p5", s.p5}, {"p95", s.p95}, {"cv", s.cv}, {"n", s.n}}},
                    {"samples_ns", res.elapsed_ns}, {"algbw_GBps", bench::algbw_gbps(S, sec)},
                    {"busbw_GBps", bench::busbw_gbps(spec.op, n, S, sec)}, {"check", check}});
  }
  const std::string what = fmt::format("{} over GPUs {} ({} ranks, one process), {} iterations after {} warmup, median first; {}",
                                       bench::to_string(spec.op), format_cpulist(spec.gpus), n, o.iters, o.warmup,
                                       bench::busbw_formula_text(spec.op));
  std::string text;
  if (o.format == "json") {
    nlohmann::json j = {{"schema_version", kSchemaVersion}, {"op", bench::to_string(spec.op)}, {"gpus", spec.gpus},
                        {"ranks", n}, {"formula", bench::busbw_formula_text(spec.op)}, {"description", what},
                        {"data_ok", failure.empty()}, {"rows", rows}};
    add_metadata(j, ctx);
    mon.finish(&j);
    text = j.dump(2) + "\n";
  } else if (o.format == "csv") {
    text = t.to_csv();
  } else {
    text = "# p2pscope bench nccl: " + what + "\n" + t.to_text();
  }
  mon.finish(nullptr);
  emit(text, o, "bench_nccl_" + bench::to_string(spec.op));
  if (!failure.empty()) throw Error("data check failed: " + failure);
}

void add_common(CLI::App& c, Common& o, const char* sizes_help) {
  c.add_option("--sizes", o.sizes, sizes_help);
  c.add_option("--warmup", o.warmup, "untimed iterations first")->capture_default_str();
  c.add_option("--iters", o.iters, "timed iterations, each one sample")->capture_default_str();
  c.add_option("--format", o.format, "text, csv or json (json embeds run metadata and topology)")->capture_default_str();
  c.add_option("--out", o.out, "write to FILE, or into DIR (existing, or ending in /) under a dated name");
  c.add_flag("--monitor", o.monitor, "sample CPUs, IRQs, NICs, threads and GPUs (NVML) during the run: monitor.csv "
                                     "beside --out (else ./p2pscope-out), a summary in the JSON, verdicts on stderr");
  c.add_option("--monitor-interval", o.monitor_interval, "--monitor's sampling interval")->capture_default_str();
}

}  // namespace

void add_bench_commands(CLI::App& bench, Context& ctx) {
  auto g = std::make_shared<GpuOptions>();
  auto* c = bench.add_subcommand("gpu", "GPU point-to-point bandwidth and latency (ce, sm, staged, nccl; host without a GPU)");
  std::string names;
  for (const auto& n : bench::backend_names()) names += (names.empty() ? "" : ", ") + n;
  c->add_option("--backend", g->backend, "one of: " + names + " (default: ce with a GPU, else host)");
  c->add_option("--variant", g->variant, "sm: push (source writes) or pull (destination reads); push@N = N blocks per SM");
  c->add_option("--pattern", g->pattern, "uni, bidir, latency (GPU ping-pong, one-way = rtt/2) or blocking (host-observed)")
      ->capture_default_str();
  c->add_option("--pairs", g->pairs, "directed pairs SRC:DST,... (default: every pair); staged: 'host' or N = host memory");
  add_common(*c, *g, "sizes, e.g. 1G, 4K,1M or 1:1G (powers of two); default 1G (host 64M), latency/blocking 8");
  c->add_flag("--no-verify", g->no_verify, "skip the on-GPU check of the received data");
  c->footer(
      "Examples:\n"
      "  p2pscope bench gpu --backend ce --sizes 1G                  # matrix of every GPU pair\n"
      "  p2pscope bench gpu --backend sm --variant pull --pairs 0:1 --sizes 1K:1G\n"
      "  p2pscope bench gpu --backend ce --pattern latency --pairs 0:1,1:0\n"
      "  p2pscope bench gpu --backend staged --pairs host:0,0:host --sizes 1G\n"
      "  p2pscope bench gpu --backend host --pattern bidir --sizes 4M --format json --out results/\n"
      "  mpirun -np 2 p2pscope bench gpu --backend nccl --sizes 8:1G   # one process per GPU, like torchrun\n"
      "Under mpirun, srun or torchrun the ranks meet over TCP at P2PSCOPE_RENDEZVOUS=HOST:PORT (default: MASTER_ADDR,\n"
      "else 127.0.0.1 on one host, with a port derived from the job id); rank 0 reports.");
  c->callback([g, &ctx] { run_gpu(*g, ctx); });

  auto n = std::make_shared<NcclOptions>();
  auto* cn = bench.add_subcommand("nccl", "NCCL collectives in one process over the GPUs, nccl-tests' algbw and busbw");
  cn->add_option("--op", n->op, "allreduce, allgather, reducescatter, alltoall or sendrecv")->capture_default_str();
  cn->add_option("--gpus", n->gpus, "GPU list, e.g. 0-3 (default: all)");
  add_common(*cn, *n, "sizes S as nccl-tests counts them (float32), e.g. 8:1G; default 8:1G");
  cn->footer("Example:\n  p2pscope bench nccl --op allreduce --sizes 1M:1G --format json --out results/");
  cn->callback([n, &ctx] { run_nccl(*n, ctx); });
}

}  // namespace p2pscope::app
