// The campaign: set up, warm up, measure in the shuffled order, save everything.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#if P2PSCOPE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include "p2pscope/backend.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/nvml.hpp"
#include "p2pscope/profile.hpp"
#include "profile/alignment.hpp"
#include "profile/batching.hpp"
#include "profile/execution_log.hpp"
#include "profile/setup.hpp"
#include "profile/temperature.hpp"
#include "profile/thermal.hpp"
#include "profile/trace.hpp"

namespace fs = std::filesystem;

namespace p2pscope::profile {
namespace {

// NVTX range of the op's name, so Nsight Systems shows the same names as trace.json.
struct NvtxRange {
#if P2PSCOPE_HAVE_NVTX
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
#else
  explicit NvtxRange(const std::string&) {}
#endif
};

// Calls on_progress at most 10 times a second (and always for the last op).
class Ticker {
 public:
  Ticker(const Params& p, std::string phase, std::size_t done, std::size_t total)
      : p_(p), phase_(std::move(phase)), first_done_(done), total_(total), t0_(monotonic_ns()) {}
  void tick(std::size_t done, const std::string& current) {
    if (!p_.on_progress) return;
    const std::int64_t now = monotonic_ns();
    if (done < total_ && now - last_ < 100'000'000) return;
    last_ = now;
    Progress pr;
    pr.phase = phase_;
    pr.done = done;
    pr.total = total_;
    const double secs = static_cast<double>(now - t0_) * 1e-9;
    pr.ops_per_s = secs > 0 ? static_cast<double>(done - first_done_) / secs : 0;
    pr.eta_s = pr.ops_per_s > 0 ? static_cast<double>(total_ - done) / pr.ops_per_s : -1;
    pr.current = current;
    p_.on_progress(pr);
  }

 private:
  const Params& p_;
  std::string phase_;
  std::size_t first_done_, total_;
  std::int64_t t0_, last_ = 0;
};

nlohmann::json timing_json(const Params& p) {
  if (p.timing == Timing::single)
    return {{"method", "single"},
            {"description", "seed 004's method: one blocking transfer per record; the host time includes launch and "
                            "synchronisation, the GPU time is two events around the transfer"}};
  return {{"method", "batch"}, {"min_sample_ns", p.min_sample_ns}, {"max_batch", kMaxBatch},
          {"prewarm", "each record with batch > 1 follows an unlogged batch of its own config, so the path's state "
                      "(a small copy is faster right after a large one) does not depend on the shuffled order"},
          {"description", "each record times `batch` transfers back to back behind a blocking start (sized during warmup "
                          "so a record spans min_sample_ns); per_transfer_ns = GPU time / batch: the time a transfer "
                          "occupies the path when issued back to back, as nccl-tests and nvbandwidth time loops"}};
}

}  // namespace

Result run_campaign(const Params& p) {
  const auto note = [&p](const std::string& s) { if (p.on_note) p.on_note(s); };
  const auto stopped = [&p] { return p.stop && p.stop->load(); };

  // ---- resolve everything that can be wrong before touching any device --------
  const auto rt = gpu::runtime_info();
  ResolvedOptions opt = resolve_options(p, rt.device_count);
  const bool resuming = !opt.resumed_metadata.is_null();
  std::map<std::string, std::unique_ptr<bench::Backend>> backends;
  int device_count = 1 << 30;
  for (const auto& name : opt.backends) {
    if (backends.count(name)) throw UsageError("backend '" + name + "' is listed twice");
    auto b = p.make_backend ? p.make_backend(name) : bench::make_backend(name);
    device_count = std::min(device_count, b->device_count());
    backends[name] = std::move(b);
  }
  bench::Backend& primary = *backends.at(opt.backends.front());
  std::vector<int> devices;
  if (opt.devices) {
    devices = *opt.devices;
    for (int d : devices)
      if (d < 0 || d >= device_count)
        throw UsageError(fmt::format("device {} is out of range: backend {} has {} device(s), numbered 0-{}", d,
                                     opt.backends.front(), device_count, device_count - 1));
  } else {
    for (int d = 0; d < device_count; ++d) devices.push_back(d);
  }
  for (const auto& [s, d] : opt.pairs)
    for (int x : {s, d})
      if (x < 0 || x >= device_count)
        throw UsageError(fmt::format("--pairs {}:{}: device {} is out of range: backend {} has {} device(s), numbered 0-{}",
                                     s, d, x, opt.backends.front(), device_count, device_count - 1));
  if (devices.size() < 2 && !opt.devices && opt.pairs.empty())
    throw UsageError(fmt::format("backend {} has {} device(s); a campaign needs 2 or more (or --pairs 0:0 for "
                                 "device-local copies, or --backend staged for host<->GPU)", opt.backends.front(), device_count));
  Plan plan = make_plan(opt.backends, devices, opt.sizes, opt.seed, opt.warmup, opt.reps, opt.pairs);
  for (const auto& [name, b] : backends)
    for (const auto& c : plan.configs) {
      if (c.backend != name || c.size_bytes != plan.sizes.front()) continue;
      const auto sup = b->support(c.src, c.dst);
      if (!sup.ok)
        throw UsageError(fmt::format("backend {} cannot copy {} -> {}: {}; choose other --gpus, --pairs or --backend",
                                     name, c.src, c.dst, sup.reason));
    }
  const bool gpu_backend = primary.name() != "host";
  std::string nvml_why;
  std::unique_ptr<nvml::Nvml> nvml = gpu_backend ? nvml::Nvml::load(&nvml_why) : nullptr;
  if (!gpu_backend) nvml_why = "host backend: no GPU to sample";

  std::string dir = resuming ? p.resume_dir : (p.out_dir.empty() ? default_out_dir(p.out_root, primary.name(), nvml.get()) : p.out_dir);
  if (!resuming) prepare_new_out_dir(dir);
  const auto path = [&dir](const char* f) { return (fs::path(dir) / f).string(); };
  // One writer per campaign: two resumes at once measured every row twice.
  const DirLock lock(dir, "campaign directory");

  std::vector<LogRow> rows;
  std::uint64_t keep_bytes = 0;
  // metadata.json is written before the log exists: a campaign killed in between resumes with no rows.
  if (resuming && fs::exists(path(kLogFile))) {
    const auto fits = [&plan](const LogRow& r) {
      if (r.config_id < 0 || static_cast<std::size_t>(r.config_id) >= plan.configs.size()) return false;
      const Config& c = plan.configs[static_cast<std::size_t>(r.config_id)];
      return c.src == r.src && c.dst == r.dst && c.size_bytes == r.size_bytes && r.repetition >= 0 && r.repetition < plan.reps;
    };
    ResumeLog log;
    try {
      log = prepare_log_for_resume(path(kLogFile), path(kLogAsideFile), fits);
    } catch (const Error& e) {
      throw UsageError(std::string("--resume ") + dir + ": " + e.what());
    }
    for (const auto& n : log.notes) note(n);
    rows = std::move(log.rows);
    keep_bytes = log.keep_bytes;
  }
  std::set<std::pair<int, int>> done;
  for (const auto& r : rows) done.insert({r.config_id, r.repetition});

  // ---- metadata before measuring: a killed campaign can still be resumed --------
  Result res;
  res.out_dir = dir;
  res.resumed = resuming;
  res.ops_planned = plan.measured_ops();
  std::map<int, int> to_nvml;
  nlohmann::json topology = nlohmann::json::object();
  if (nvml) {
    auto m = map_devices_to_nvml(*nvml, plan.devices, &topology, [&](int d) { return primary.device_location(d); });
    to_nvml = std::move(m.to_nvml);
    for (const auto& n : m.notes) note(n);
  }
  nlohmann::json meta = resuming ? opt.resumed_metadata : run_metadata(p.argv);
  nlohmann::json session = {{"start_time", iso8601_utc(realtime_ns())}, {"argv", p.argv}, {"ops_logged_before", rows.size()}};
  if (!resuming) {
    meta["kind"] = "profile_campaign";
    meta["plan"] = plan_to_json(plan);
    nlohmann::json versions = gpu::to_json(rt);
    if (nvml) versions["nvidia_driver"] = nvml->driver_version();
    meta["versions"] = versions;
    meta["topology"] = topology;
    meta["nvml"] = nvml ? "loaded" : nvml_why;
    meta["gpus"] = nvml ? gpu_facts(*nvml, to_nvml) : nlohmann::json::array();
    meta["devices"] = nlohmann::json::array();
    for (int d : plan.devices) meta["devices"].push_back({{"device", d}, {"name", primary.device_name(d)}});
    meta["settings"] = {{"temp_interval_s", p.temp_interval_s}, {"drift_s", p.drift_s},
                        {"thermal_warmup", p.thermal_warmup ? nlohmann::json{{"celsius", p.thermal_warmup->celsius}, {"max_s", p.thermal_warmup->max_s}} : nlohmann::json(nullptr)},
                        {"rewarm_below_c", p.rewarm_below_c}, {"rewarm_every", p.rewarm_every}};
    meta["sessions"] = nlohmann::json::array();
    meta["warmup_logged"] = false;  // warmup ops are run but not written to the log
    meta["timing"] = timing_json(p);
  }
  meta["status"] = "running";
  meta["sessions"].push_back(session);
  write_json_file(path(kMetadataFile), meta);
  LogWriter log(path(kLogFile), keep_bytes);

  // Other users of the GPUs skew every number: say so before starting.
  if (nvml)
    for (const auto& [dev, idx] : to_nvml) {
      std::vector<unsigned> others;
      for (unsigned pid : nvml->compute_processes(idx))
        if (pid != static_cast<unsigned>(getpid())) others.push_back(pid);
      if (!others.empty())
        res.warnings.push_back(fmt::format("GPU {} is used by {} other process(es) (pid {}): results may be disturbed",
                                           dev, others.size(), others.front()));
    }
  for (const auto& w : res.warnings) note("warning: " + w);

  std::unique_ptr<TemperatureSampler> sampler;
  DriftWindow drift_start, drift_end;
  SyncDuringRun sync(primary, plan.devices);
  double single_stamp_error_ns = 0;
  std::int64_t warm_t0 = 0, measure_t0 = 0, measure_t1 = 0;
  try {
    // ---- thermal warm-up, sampler, buffers, drift ------------------------------
    if (p.thermal_warmup && gpu_backend && !stopped()) {
      if (p.on_progress) p.on_progress({"thermal-warmup", 0, 0, 0, p.thermal_warmup->max_s, ""});
      const auto w = heat_until(primary, nvml.get(), to_nvml, plan.devices, p.thermal_warmup->celsius,
                                p.thermal_warmup->max_s, p.stop);
      session["thermal_warmup_s"] = w.seconds;
      session["temperature_after_warmup_c"] = w.final_temperature_c;
      if (!nvml) note("thermal warm-up ran its full time: no NVML to read temperatures (" + nvml_why + ")");
    }
    if (nvml && p.temp_interval_s > 0) {
      std::vector<TemperatureSampler::Target> targets;
      for (const auto& [dev, idx] : to_nvml) targets.push_back({dev, idx});
      sampler = std::make_unique<TemperatureSampler>(*nvml, targets, p.temp_interval_s, path(kTemperatureFile), resuming);
    } else {
      res.temperatures_note = !nvml ? "no temperatures: " + nvml_why : "no temperatures: --temp-interval 0";
      write_temperature_note(path(kTemperatureFile), res.temperatures_note, resuming);
    }
    for (const auto& [name, b] : backends) b->prepare(plan.devices, plan.sizes.back());
    if (p.on_progress && p.drift_s > 0 && gpu_backend) p.on_progress({"drift-start", 0, 0, 0, p.drift_s, ""});
    drift_start = measure_drift(primary, plan.devices, stopped() ? 0 : p.drift_s, p.stop);

    // Batch timing: each config's warmup sizes its batch, first from a single transfer,
    // then from the batch itself (a lone transfer carries overhead a batch amortises,
    // so sizing from singles alone leaves samples short of the minimum), and its last
    // warmup op runs the final batch.
    const bool batched = p.timing == Timing::batch;
    std::vector<int> batch(plan.configs.size(), 1);
    const auto run_op = [&](const Config& c, const std::string& name, int count) {
      NvtxRange range(name);
      auto& b = *backends.at(c.backend);
      return batched ? b.run_blocking_batch(c.src, c.dst, c.size_bytes, count) : b.run_blocking(c.src, c.dst, c.size_bytes);
    };
    const auto sample_ns = [](const bench::OpTiming& t) {
      return std::isnan(t.device_duration_ns) ? static_cast<double>(t.host_end_ns - t.host_start_ns) : t.device_duration_ns;
    };
    // ---- warmup pass: every config, in the shuffled order ------------------------
    warm_t0 = monotonic_ns();
    {
      const int per_config = batched ? std::max(plan.warmup, 3) : plan.warmup;
      Ticker t(p, "warmup", 0, plan.configs.size() * static_cast<std::size_t>(per_config));
      std::size_t n = 0;
      for (int id : plan.order) {
        if (stopped()) break;
        const Config& c = plan.configs[static_cast<std::size_t>(id)];
        int& k = batch[static_cast<std::size_t>(id)];
        for (int w = 0; w < per_config && !stopped(); ++w, ++n) {
          const bool last = batched && w + 1 == per_config;
          const int used = batched ? k : 1;
          const bench::OpTiming op = run_op(c, "warmup_" + event_name(c, w), used);
          if (batched && !last) k = batch_size_for(sample_ns(op) / used, p.min_sample_ns);
          t.tick(n + 1, event_name(c, w));
        }
      }
    }
    if (batched) {
      nlohmann::json per = nlohmann::json::object();
      for (const auto& c : plan.configs) per[std::to_string(c.id)] = batch[static_cast<std::size_t>(c.id)];
      session["batch_per_config"] = per;
    }
    // ---- measured repetitions ----------------------------------------------------
    measure_t0 = monotonic_ns();
    if (gpu_backend) sync.maybe_sync();
    Ticker t(p, "measure", rows.size(), plan.measured_ops());
    std::size_t since_check = 0;
    for (int rep = 0; rep < plan.reps && !stopped(); ++rep)
      for (int id : plan.order) {
        if (stopped()) break;
        if (done.count({id, rep})) continue;
        const Config& c = plan.configs[static_cast<std::size_t>(id)];
        const std::string name = event_name(c, rep);
        const int k = batch[static_cast<std::size_t>(id)];
        // A batched record follows an unlogged batch of its own config: a small transfer
        // runs faster right after a large one (on an H100, host-to-GPU 16 B took 2.21 us
        // after a big copy, 2.33 us after small ones), so without it the shuffled order
        // decided which state each size was timed in, and medians crossed.
        if (batched && k > 1) run_op(c, "prewarm_" + name, k);
        const bench::OpTiming op = run_op(c, name, k);
        if (!batched) single_stamp_error_ns = std::max(single_stamp_error_ns, op.device_stamp_error_ns);
        LogRow r{c.id, c.src, c.dst, c.size_bytes, rep, c.backend, op.host_start_ns, op.host_end_ns,
                 op.host_end_ns - op.host_start_ns, op.device_duration_ns, op.device_start_ns, op.device_end_ns,
                 k, to_string(p.timing)};
        log.append(r);
        rows.push_back(std::move(r));
        done.insert({id, rep});
        ++res.ops_this_session;
        t.tick(rows.size(), name);
        if (gpu_backend) sync.maybe_sync();  // between ops, never inside one
        if (p.rewarm_below_c >= 0 && nvml && gpu_backend && p.rewarm_every > 0 && ++since_check >= static_cast<std::size_t>(p.rewarm_every)) {
          since_check = 0;
          const auto cold = devices_below(*nvml, to_nvml, plan.devices, p.rewarm_below_c);
          if (!cold.empty()) {
            const auto w = heat_until(primary, nvml.get(), to_nvml, cold, p.rewarm_below_c + 3, 10, p.stop);
            session["rewarms"] = session.value("rewarms", 0) + 1;
            session["rewarm_s"] = session.value("rewarm_s", 0.0) + w.seconds;
          }
        }
      }
    measure_t1 = monotonic_ns();
    // An interrupted run still takes the quick end readings: cheap, and they anchor the trace.
    drift_end = measure_drift(primary, plan.devices, stopped() ? 0 : p.drift_s, p.stop);
  } catch (const std::exception& e) {
    meta["status"] = "failed";
    meta["error"] = e.what();
    meta["sessions"].back()["status"] = "failed";
    try { write_json_file(path(kMetadataFile), meta); } catch (...) {}
    throw;
  }
  if (measure_t1 == 0) measure_t1 = monotonic_ns();
  if (measure_t0 == 0) measure_t0 = measure_t1;
  if (warm_t0 == 0) warm_t0 = measure_t0;

  // ---- save: drift, trace, temperatures, metadata -------------------------------
  if (sampler) sampler->stop();
  res.interrupted = stopped();
  res.ops_logged = rows.size();
  res.complete = done.size() == plan.measured_ops();
  res.warmup_s = static_cast<double>(measure_t0 - warm_t0) * 1e-9;
  res.measure_s = static_cast<double>(measure_t1 - measure_t0) * 1e-9;
  const auto clock_device = [&](int src, int dst) { return primary.clock_device(src, dst); };
  Alignment align = align_clocks(primary.name(), drift_start, sync.window(), drift_end, plan, rows, clock_device, single_stamp_error_ns);
  for (const auto& w : align.warnings) {
    res.warnings.push_back(w);
    note("warning: " + w);
  }
  res.alignment = align.report["alignment"];
  write_json_file(path(kDriftFile), align.report);
  write_trace(path(kTraceFile), make_trace(plan, rows, align.to_host, clock_device, align.unaligned, single_stamp_error_ns));
  res.sizes = summarize(plan, rows);

  nlohmann::json clocks = nlohmann::json::object();
  if (sampler) {
    res.temperatures = sampler->summaries();
    std::set<int> idx;  // NVML indices, once each (ranks may share a GPU)
    int max_sm = -1, max_mem = -1;
    for (const auto& [dev, i] : to_nvml) {
      clocks[std::to_string(dev)] = {{"sm_clock_constant_during_run", sampler->sm_clock_constant(dev)}};
      idx.insert(i);
      const auto s = nvml->sample(i);
      max_sm = std::max(max_sm, s.max_sm_clock_mhz);
      max_mem = std::max(max_mem, s.max_mem_clock_mhz);
    }
    std::string list;
    for (int i : idx) list += (list.empty() ? "" : ",") + std::to_string(i);
    if (max_sm > 0)
      res.lock_clocks_hint = fmt::format(
          "sudo nvidia-smi -i {0} --lock-gpu-clocks={1},{1} && sudo nvidia-smi -i {0} --lock-memory-clocks={2},{2}"
          "   (undo: sudo nvidia-smi -i {0} --reset-gpu-clocks --reset-memory-clocks)", list, max_sm, max_mem);
  }
  nlohmann::json temps = nlohmann::json::array();
  for (const auto& t : res.temperatures)
    temps.push_back({{"device", t.device}, {"samples", t.samples},
                     {"temperature_c", {{"mean", t.temperature_c.mean}, {"sd", t.temperature_c.stddev}, {"min", t.temperature_c.min}, {"max", t.temperature_c.max}}},
                     {"power_w", {{"mean", t.power_w.mean}, {"sd", t.power_w.stddev}}},
                     {"sm_clock_mhz", {{"mean", t.sm_clock_mhz.mean}, {"min", t.sm_clock_mhz.min}, {"max", t.sm_clock_mhz.max}}}});
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& s : res.sizes) sizes.push_back(to_json(s));
  auto& sess = meta["sessions"].back();
  for (auto it = session.begin(); it != session.end(); ++it) sess[it.key()] = it.value();
  sess["status"] = res.interrupted ? "interrupted" : (res.complete ? "complete" : "incomplete");
  sess["end_time"] = iso8601_utc(realtime_ns());
  sess["ops_this_session"] = res.ops_this_session;
  sess["warmup_phase_s"] = res.warmup_s;
  sess["measure_phase_s"] = res.measure_s;
  meta["status"] = sess["status"];
  meta["ops_logged"] = res.ops_logged;
  meta["ops_planned"] = res.ops_planned;
  meta["summary"] = sizes;
  meta["temperatures"] = temps;
  meta["clocks"] = {{"per_device", clocks}, {"lock_hint", res.lock_clocks_hint},
                    {"note", "p2pscope never changes GPU settings; constant SM clocks over the run suggest locked clocks"}};
  if (nvml) meta["gpus_at_end"] = gpu_facts(*nvml, to_nvml);
  meta["warnings"] = res.warnings;
  // Each GPU's (under a launcher: each rank's) clock bound, beside the campaign's
  // summary; clock_drift.json has the detail.
  meta["clock_alignment"] = res.alignment;
  meta["clock_alignment"]["per_device"] = nlohmann::json::array();
  for (const auto& d : align.report["devices"])
    meta["clock_alignment"]["per_device"].push_back(
        {{"device", d["device"]}, {"offset_uncertainty_ns", d["causality"]["offset_uncertainty_ns"]},
         {"ops_checked", d["causality"]["ops_checked"]}, {"causality_violations", d["causality"]["violations"]}});
  write_json_file(path(kMetadataFile), meta);
  return res;
}

}  // namespace p2pscope::profile
