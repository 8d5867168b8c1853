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

#include "p2pscope/phase_trace.hpp"
#include "p2pscope/backend.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/nvml.hpp"
#include "p2pscope/profile.hpp"
#include "p2pscope/units.hpp"
#include "profile/alignment.hpp"
#include "profile/batching.hpp"
#include "profile/clock_readings.hpp"
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

// The progress line's op in the user's words, "host 0->1 64M rep 2": the trace's event
// name (p2p_cfg0019_s0d1_sz67108864_r2) gave back a size of 64M as 67108864.
std::string campaign_progress_label(const Config& c, int rep) {
  return fmt::format("{} {}->{} {} rep {}", c.backend, c.src, c.dst, format_size_compact(c.size_bytes), rep);
}

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

// One campaign run as named phases, as nvbench's measure_cold: check (everything
// that can be wrong, before touching a device), initialize (resume, metadata, log),
// instruments (thermal warm-up, sampler, buffers, start drift), warmup, trials, and
// summaries (alignment, trace, metadata). The state the phases share is the members.
class CampaignRun {
 public:
  explicit CampaignRun(const Params& p) : p_(p) {}

  Result run() {
    check();
    initialize();
    trace_phase("campaign: initialized");
    try {
      start_instruments();
      trace_phase("campaign: instruments started (the start's drift window)");
      warmup();
      trace_phase("campaign: warmed up");
      trials();
      trace_phase("campaign: trials done");
      // An interrupted run still takes the quick end readings: cheap, and they anchor the trace.
      drift_end_ = measure_drift(*primary_, plan_.devices, stopped() ? 0 : p_.drift_s, p_.stop);
      trace_phase("campaign: end drift window done");
    } catch (const std::exception& e) {
      meta_["status"] = "failed";
      meta_["error"] = e.what();
      meta_["sessions"].back()["status"] = "failed";
      try { write_json_file(path(kMetadataFile), meta_); } catch (...) {}
      // Its rows stay in the log: the next session's alignment places them with these.
      if (gpu_backend_) {
        try { save_session_readings(dir_, session_index_, {drift_start_, sync_->window(), drift_end_}); } catch (...) {}
      }
      throw;
    }
    summaries();
    trace_phase("campaign: summaries written");
    return std::move(res_);
  }

 private:
  void note(const std::string& s) const { if (p_.on_note) p_.on_note(s); }
  bool stopped() const { return p_.stop && p_.stop->load(); }
  std::string path(const char* f) const { return (fs::path(dir_) / f).string(); }

  void check();
  void check_share() const;
  bool in_share(int rep) const {
    const auto [a, b] = share_repetitions(plan_.reps, p_.share.count, p_.share.index);
    return rep >= a && rep < b;
  }
  void point_latest_link();
  void read_resumed_log();
  void initialize();
  void warn_other_gpu_users();
  void start_instruments();
  bench::OpTiming run_op(const Config& c, const std::string& name, int count);
  void warmup();
  void trials();
  void rewarm_if_cold(std::size_t& since_check);
  void summaries();
  Alignment align_all_sessions();
  nlohmann::json clocks_and_hint();
  void finish_metadata(const Alignment& align, const nlohmann::json& clocks);

  const Params& p_;
  gpu::RuntimeInfo rt_;
  ResolvedOptions opt_;
  bool resuming_ = false;
  std::map<std::string, std::unique_ptr<bench::Backend>> backends_;
  bench::Backend* primary_ = nullptr;
  Plan plan_;
  bool gpu_backend_ = false;
  std::string nvml_why_;
  std::unique_ptr<nvml::Nvml> nvml_;
  std::string dir_;
  std::vector<LogRow> rows_;
  std::uint64_t keep_bytes_ = 0;
  std::set<std::pair<int, int>> done_;
  Result res_;
  std::map<int, int> to_nvml_;
  nlohmann::json meta_, session_;
  std::size_t session_index_ = 0;  // in meta_["sessions"]; names this session's clock_readings file
  std::unique_ptr<DirLock> lock_;
  std::unique_ptr<LogWriter> log_;
  std::unique_ptr<TemperatureSampler> sampler_;
  DriftWindow drift_start_, drift_end_;
  std::unique_ptr<SyncDuringRun> sync_;
  double single_stamp_error_ns_ = 0;
  std::int64_t warm_t0_ = 0, measure_t0_ = 0, measure_t1_ = 0;
  std::vector<int> batch_;  // per config: transfers per record (batch timing)
};

// ---- check: resolve everything that can be wrong before touching any device --------
void CampaignRun::check() {
  rt_ = gpu::runtime_info();
  opt_ = resolve_options(p_, rt_.device_count);
  resuming_ = !opt_.resumed_metadata.is_null();
  int device_count = 1 << 30;
  for (const auto& name : opt_.backends) {
    if (backends_.count(name)) throw UsageError("backend '" + name + "' is listed twice");
    auto b = p_.make_backend ? p_.make_backend(name) : bench::make_backend(name);
    device_count = std::min(device_count, b->device_count());
    backends_[name] = std::move(b);
  }
  primary_ = backends_.at(opt_.backends.front()).get();
  std::vector<int> devices;
  if (opt_.devices) {
    devices = *opt_.devices;
    for (int d : devices)
      if (d < 0 || d >= device_count)
        throw UsageError(fmt::format("device {} is out of range: backend {} has {} device(s), numbered 0-{}", d,
                                     opt_.backends.front(), device_count, device_count - 1));
  } else {
    for (int d = 0; d < device_count; ++d) devices.push_back(d);
  }
  for (const auto& [s, d] : opt_.pairs)
    for (int x : {s, d})
      if (x < 0 || x >= device_count)
        throw UsageError(fmt::format("--pairs {}:{}: device {} is out of range: backend {} has {} device(s), numbered 0-{}",
                                     s, d, x, opt_.backends.front(), device_count, device_count - 1));
  if (devices.size() < 2 && !opt_.devices && opt_.pairs.empty())
    throw UsageError(fmt::format("backend {} has {} device(s); a campaign needs 2 or more (or --pairs 0:0 for "
                                 "device-local copies, or --backend staged for host<->GPU)", opt_.backends.front(), device_count));
  plan_ = make_plan(opt_.backends, devices, opt_.sizes, opt_.seed, opt_.warmup, opt_.reps, opt_.pairs);
  check_share();
  for (const auto& [name, b] : backends_)
    for (const auto& c : plan_.configs) {
      if (c.backend != name || c.size_bytes != plan_.sizes.front()) continue;
      const auto sup = b->support(c.src, c.dst);
      if (!sup.ok)
        throw UsageError(fmt::format("backend {} cannot copy {} -> {}: {}; choose other --gpus, --pairs or --backend",
                                     name, c.src, c.dst, sup.reason));
    }
  gpu_backend_ = primary_->capabilities().gpu_memory;
  nvml_ = gpu_backend_ ? nvml::Nvml::load(&nvml_why_) : nullptr;
  if (!gpu_backend_) nvml_why_ = "host backend: no GPU to sample";
}

// --processes K: this process's share must exist and, on resume, K be the campaign's.
void CampaignRun::check_share() const {
  const auto& sh = p_.share;
  if (sh.count < 1 || sh.index < 0 || sh.index >= sh.count)
    throw UsageError(fmt::format("process share {} of {}: give 0 <= share < count", sh.index, sh.count));
  if (sh.count > plan_.reps)
    throw UsageError(fmt::format("--processes {}: more processes than repetitions ({}); each process measures at least one "
                                 "repetition: give --reps {} or more, or fewer processes", sh.count, plan_.reps, sh.count));
  if (resuming_) {
    const int saved = opt_.resumed_metadata.value("settings", nlohmann::json::object()).value("processes", 1);
    if (saved != sh.count)
      throw UsageError(fmt::format("--resume {}: the campaign splits its repetitions over {} process(es), not {}; resume it "
                                   "with --processes {} (or without --processes)", p_.resume_dir, saved, sh.count, saved));
  }
}

// <out_root>/latest -> the newest campaign made there, so `analyze p2pscope-out/latest`
// names one campaign where `p2pscope-out/profile-*/` names all of them. A real file or
// folder called latest is left alone.
void CampaignRun::point_latest_link() {
  const fs::path link = fs::path(p_.out_root) / "latest";
  std::error_code ec;
  const auto st = fs::symlink_status(link, ec);
  if (fs::exists(st) && !fs::is_symlink(st)) {
    note(link.string() + " exists and is not a link: not pointed at this campaign");
    return;
  }
  fs::remove(link, ec);
  fs::create_directory_symlink(fs::path(dir_).filename(), link, ec);
  if (ec) note("cannot point " + link.string() + " at this campaign: " + ec.message());
}

// The log of the campaign being resumed: rows that do not belong to the saved plan,
// damaged or duplicated are set aside (execution_log.cpp); the rest are kept.
void CampaignRun::read_resumed_log() {
  const auto fits = [this](const LogRow& r) {
    if (r.config_id < 0 || static_cast<std::size_t>(r.config_id) >= plan_.configs.size()) return false;
    const Config& c = plan_.configs[static_cast<std::size_t>(r.config_id)];
    // Every field the plan fixes must agree, the backend's name too: a row whose backend
    // text took a damaged byte was once kept as a measurement of the right config.
    return c.src == r.src && c.dst == r.dst && c.size_bytes == r.size_bytes && c.backend == r.backend &&
           r.repetition >= 0 && r.repetition < plan_.reps;
  };
  // The header metadata.json records is what a damaged one is rebuilt to ("" for a
  // campaign older than the record: the rows tell which it is).
  const auto& rec = opt_.resumed_metadata.value("execution_log", nlohmann::json::object());
  const std::string header = rec.is_object() && rec.value("header", nlohmann::json()).is_string() ? rec["header"].get<std::string>() : "";
  ResumeLog log;
  try {
    log = prepare_log_for_resume(path(kLogFile), path(kLogAsideFile), fits, header);
  } catch (const Error& e) {
    throw UsageError(std::string("--resume ") + dir_ + ": " + e.what());
  }
  for (const auto& n : log.notes) note(n);
  rows_ = std::move(log.rows);
  keep_bytes_ = log.keep_bytes;
}

// ---- initialize: output folder, resumed rows, metadata before measuring (a killed
// campaign can still be resumed), the log ------------------------------------------------
void CampaignRun::initialize() {
  dir_ = resuming_ ? p_.resume_dir : (p_.out_dir.empty() ? default_out_dir(p_.out_root, primary_->name(), nvml_.get()) : p_.out_dir);
  if (!resuming_) prepare_new_out_dir(dir_);
  // One writer per campaign: two resumes at once measured every row twice.
  lock_ = std::make_unique<DirLock>(dir_, "campaign directory");
  if (!resuming_ && p_.out_dir.empty()) point_latest_link();
  // metadata.json is written before the log exists: a campaign killed in between resumes with no rows.
  // symlink_status: a link planted at the log's name is refused by read_log, not taken for no log.
  if (resuming_ && fs::exists(fs::symlink_status(path(kLogFile)))) read_resumed_log();
  for (const auto& r : rows_) done_.insert({r.config_id, r.repetition});

  res_.out_dir = dir_;
  res_.resumed = resuming_;
  res_.ops_planned = plan_.measured_ops();
  nlohmann::json topology = nlohmann::json::object();
  if (nvml_) {
    auto m = map_devices_to_nvml(*nvml_, plan_.devices, &topology, [&](int d) { return primary_->device_location(d); });
    to_nvml_ = std::move(m.to_nvml);
    for (const auto& n : m.notes) note(n);
  }
  meta_ = resuming_ ? opt_.resumed_metadata : run_metadata(p_.argv);
  session_ = {{"start_time", iso8601_utc(realtime_ns())}, {"argv", p_.argv}, {"ops_logged_before", rows_.size()}};
  if (p_.share.count > 1) {
    const auto [a, b] = share_repetitions(plan_.reps, p_.share.count, p_.share.index);
    session_["process"] = {{"pid", getpid()}, {"share", p_.share.index}, {"of", p_.share.count}, {"repetitions", {a, b}}};
  }
  if (!resuming_) {
    meta_["kind"] = "profile_campaign";
    meta_["plan"] = plan_to_json(plan_);
    nlohmann::json versions = gpu::to_json(rt_);
    if (nvml_) versions["nvidia_driver"] = nvml_->driver_version();
    meta_["versions"] = versions;
    meta_["topology"] = topology;
    meta_["nvml"] = nvml_ ? "loaded" : nvml_why_;
    meta_["gpus"] = nvml_ ? gpu_facts(*nvml_, to_nvml_) : nlohmann::json::array();
    meta_["devices"] = nlohmann::json::array();
    for (int d : plan_.devices) meta_["devices"].push_back({{"device", d}, {"name", primary_->device_name(d)}});
    const auto& tw = p_.thermal_warmup;
    meta_["settings"] = {{"temp_interval_s", p_.temp_interval_s}, {"drift_s", p_.drift_s},
                         {"thermal_warmup", tw ? nlohmann::json{{"celsius", tw->celsius}, {"max_s", tw->max_s}} : nlohmann::json(nullptr)},
                         {"rewarm_below_c", p_.rewarm_below_c}, {"rewarm_every", p_.rewarm_every},
                         {"processes", p_.share.count}};
    meta_["sessions"] = nlohmann::json::array();
    meta_["warmup_logged"] = false;  // warmup ops are run but not written to the log
    meta_["timing"] = timing_json(p_);
  }
  // What the log holds, so that a damaged header is rebuilt from here (the log is in this
  // form from now on, a resumed older one included: prepare_log_for_resume rewrote it).
  meta_["execution_log"] = {{"header", kLogHeader},
                            {"row_check", "crc32: CRC-32 (IEEE) of the row's text before its last comma, 8 hex digits"}};
  meta_["status"] = "running";
  meta_["sessions"].push_back(session_);
  session_index_ = meta_["sessions"].size() - 1;
  write_json_file(path(kMetadataFile), meta_);
  log_ = std::make_unique<LogWriter>(path(kLogFile), keep_bytes_);
  warn_other_gpu_users();
  sync_ = std::make_unique<SyncDuringRun>(*primary_, plan_.devices);
}

// Other users of the GPUs skew every number: say so before starting.
void CampaignRun::warn_other_gpu_users() {
  if (nvml_)
    for (const auto& [dev, idx] : to_nvml_) {
      std::vector<std::int64_t> own = p_.own_pids;
      own.push_back(static_cast<std::int64_t>(getpid()));
      if (std::string w = other_gpu_users_warning(dev, nvml_->compute_processes(idx), own); !w.empty())
        res_.warnings.push_back(std::move(w));
    }
  for (const auto& w : res_.warnings) note("warning: " + w);
}

// ---- instruments: thermal warm-up, sampler, buffers, drift at the start ------------------
void CampaignRun::start_instruments() {
  if (p_.thermal_warmup && gpu_backend_ && !stopped()) {
    if (p_.on_progress) p_.on_progress({"thermal-warmup", 0, 0, 0, p_.thermal_warmup->max_s, ""});
    const auto w = heat_until(*primary_, nvml_.get(), to_nvml_, plan_.devices, p_.thermal_warmup->celsius,
                              p_.thermal_warmup->max_s, p_.stop);
    session_["thermal_warmup_s"] = w.seconds;
    session_["temperature_after_warmup_c"] = w.final_temperature_c;
    if (!nvml_) note("thermal warm-up ran its full time: no NVML to read temperatures (" + nvml_why_ + ")");
  }
  if (nvml_ && p_.temp_interval_s > 0) {
    std::vector<TemperatureSampler::Target> targets;
    for (const auto& [dev, idx] : to_nvml_) targets.push_back({dev, idx});
    sampler_ = std::make_unique<TemperatureSampler>(*nvml_, targets, p_.temp_interval_s, path(kTemperatureFile), resuming_);
  } else {
    res_.temperatures_note = !nvml_ ? "no temperatures: " + nvml_why_ : "no temperatures: --temp-interval 0";
    write_temperature_note(path(kTemperatureFile), res_.temperatures_note, resuming_);
  }
  // Each backend gets buffers for its own copies only, set up in slices that a signal
  // ends (1 GiB host buffers take seconds each); stopped, nothing is measured.
  for (const auto& [name, b] : backends_) {
    bench::PrepareSpec prep;
    prep.devices = plan_.devices;
    prep.max_bytes = plan_.sizes.back();
    for (const auto& c : plan_.configs)
      if (c.backend == name && std::find(prep.copies.begin(), prep.copies.end(), std::make_pair(c.src, c.dst)) == prep.copies.end())
        prep.copies.emplace_back(c.src, c.dst);
    prep.stop = p_.stop;
    prep.announce = [this](const std::string& s) { note(s); };
    prep.announce_after_s = p_.setup_note_after_s;
    if (!b->prepare_for(prep)) return;
  }
  if (p_.on_progress && p_.drift_s > 0 && gpu_backend_) p_.on_progress({"drift-start", 0, 0, 0, p_.drift_s, ""});
  drift_start_ = measure_drift(*primary_, plan_.devices, stopped() ? 0 : p_.drift_s, p_.stop);
}

bench::OpTiming CampaignRun::run_op(const Config& c, const std::string& name, int count) {
  NvtxRange range(name);
  auto& b = *backends_.at(c.backend);
  return p_.timing == Timing::batch ? b.run_blocking_batch(c.src, c.dst, c.size_bytes, count)
                                    : b.run_blocking(c.src, c.dst, c.size_bytes);
}

// ---- warmup: every config, in the shuffled order ---------------------------------------
// Batch timing: each config's warmup sizes its batch, first from a single transfer, then
// from the batch itself (a lone transfer carries overhead a batch amortises, so sizing
// from singles alone leaves samples short of the minimum), and its last warmup op runs
// the final batch.
void CampaignRun::warmup() {
  const bool batched = p_.timing == Timing::batch;
  batch_.assign(plan_.configs.size(), 1);
  const auto sample_ns = [](const bench::OpTiming& t) {
    return std::isnan(t.device_duration_ns) ? static_cast<double>(t.host_end_ns - t.host_start_ns) : t.device_duration_ns;
  };
  warm_t0_ = monotonic_ns();
  const int per_config = batched ? std::max(plan_.warmup, 3) : plan_.warmup;
  Ticker t(p_, "warmup", 0, plan_.configs.size() * static_cast<std::size_t>(per_config));
  std::size_t n = 0;
  for (int id : plan_.order) {
    if (stopped()) break;
    const Config& c = plan_.configs[static_cast<std::size_t>(id)];
    int& k = batch_[static_cast<std::size_t>(id)];
    for (int w = 0; w < per_config && !stopped(); ++w, ++n) {
      const bool last = batched && w + 1 == per_config;
      const int used = batched ? k : 1;
      const bench::OpTiming op = run_op(c, "warmup_" + event_name(c, w), used);
      if (batched && !last) k = batch_size_for(sample_ns(op) / used, p_.min_sample_ns);
      t.tick(n + 1, campaign_progress_label(c, w));
    }
  }
  if (batched) {
    nlohmann::json per = nlohmann::json::object();
    for (const auto& c : plan_.configs) per[std::to_string(c.id)] = batch_[static_cast<std::size_t>(c.id)];
    session_["batch_per_config"] = per;
  }
}

// ---- trials: the measured repetitions, each op logged as it ends -----------------------
void CampaignRun::trials() {
  const bool batched = p_.timing == Timing::batch;
  measure_t0_ = monotonic_ns();
  if (gpu_backend_) sync_->maybe_sync();
  Ticker t(p_, "measure", rows_.size(), plan_.measured_ops());
  std::size_t since_check = 0;
  for (int rep = 0; rep < plan_.reps && !stopped(); ++rep)
    for (int id : plan_.order) {
      if (stopped()) break;
      if (done_.count({id, rep}) || !in_share(rep)) continue;
      const Config& c = plan_.configs[static_cast<std::size_t>(id)];
      const std::string name = event_name(c, rep);
      const int k = batch_[static_cast<std::size_t>(id)];
      // A batched record follows an unlogged batch of its own config: a small transfer
      // runs faster right after a large one (on an H100, host-to-GPU 16 B took 2.21 us
      // after a big copy, 2.33 us after small ones), so without it the shuffled order
      // decided which state each size was timed in, and medians crossed.
      if (batched && k > 1) run_op(c, "prewarm_" + name, k);
      const bench::OpTiming op = run_op(c, name, k);
      if (!batched) single_stamp_error_ns_ = std::max(single_stamp_error_ns_, op.device_stamp_error_ns);
      LogRow r{c.id, c.src, c.dst, c.size_bytes, rep, c.backend, op.host_start_ns, op.host_end_ns,
               op.host_end_ns - op.host_start_ns, op.device_duration_ns, op.device_start_ns, op.device_end_ns,
               k, to_string(p_.timing)};
      log_->append(r);
      rows_.push_back(std::move(r));
      done_.insert({id, rep});
      ++res_.ops_this_session;
      t.tick(rows_.size(), campaign_progress_label(c, rep));
      if (gpu_backend_) sync_->maybe_sync();  // between ops, never inside one
      rewarm_if_cold(since_check);
    }
  measure_t1_ = monotonic_ns();
}

// Every `rewarm_every` ops: GPUs that cooled below the threshold are heated again.
void CampaignRun::rewarm_if_cold(std::size_t& since_check) {
  if (p_.rewarm_below_c < 0 || !nvml_ || !gpu_backend_ || p_.rewarm_every <= 0) return;
  if (++since_check < static_cast<std::size_t>(p_.rewarm_every)) return;
  since_check = 0;
  const auto cold = devices_below(*nvml_, to_nvml_, plan_.devices, p_.rewarm_below_c);
  if (cold.empty()) return;
  const auto w = heat_until(*primary_, nvml_.get(), to_nvml_, cold, p_.rewarm_below_c + 3, 10, p_.stop);
  session_["rewarms"] = session_.value("rewarms", 0) + 1;
  session_["rewarm_s"] = session_.value("rewarm_s", 0.0) + w.seconds;
}

// ---- summaries: drift, trace, temperatures, metadata ------------------------------------
void CampaignRun::summaries() {
  if (measure_t1_ == 0) measure_t1_ = monotonic_ns();
  if (measure_t0_ == 0) measure_t0_ = measure_t1_;
  if (warm_t0_ == 0) warm_t0_ = measure_t0_;
  if (sampler_) sampler_->stop();
  res_.interrupted = stopped();
  res_.ops_logged = rows_.size();
  res_.complete = done_.size() == plan_.measured_ops();
  res_.warmup_s = static_cast<double>(measure_t0_ - warm_t0_) * 1e-9;
  res_.measure_s = static_cast<double>(measure_t1_ - measure_t0_) * 1e-9;
  const auto clock_device = [this](int src, int dst) { return primary_->clock_device(src, dst); };
  trace_phase("campaign: sampler stopped");
  Alignment align = align_all_sessions();
  trace_phase("campaign: clocks aligned");
  for (const auto& w : align.warnings) {
    res_.warnings.push_back(w);
    note("warning: " + w);
  }
  res_.alignment = align.report["alignment"];
  write_json_file(path(kDriftFile), align.report);
  write_trace(path(kTraceFile), make_trace(plan_, rows_, align.to_host, clock_device, align.unaligned, single_stamp_error_ns_));
  trace_phase("campaign: trace written");
  res_.sizes = summarize(plan_, rows_);
  const nlohmann::json clocks = clocks_and_hint();
  trace_phase("campaign: sizes summarized, clocks read");
  finish_metadata(align, clocks);
  write_json_file(path(kMetadataFile), meta_);
}

// The log holds the rows of every session (--processes K runs K of them one after the
// other; --resume adds one), so the clocks are fitted to every session's readings: this
// session's alone extrapolated the earlier rows from its own first piece (+-8.5 us on
// an H100 at K = 3 against +-0.7 us at K = 1).
Alignment CampaignRun::align_all_sessions() {
  const SessionReadings mine{drift_start_, sync_->window(), drift_end_};
  std::vector<std::string> notes;
  std::map<std::size_t, SessionReadings> others;
  if (gpu_backend_) {
    save_session_readings(dir_, session_index_, mine);
    others = load_other_session_readings(dir_, session_index_, notes);
  }
  const MergedReadings m = merge_session_readings(others, mine);
  const auto clock_device = [this](int src, int dst) { return primary_->clock_device(src, dst); };
  Alignment align = align_clocks(primary_->name(), m.start, m.during, m.end, plan_, rows_, clock_device,
                                 single_stamp_error_ns_);
  align.report["sessions_with_readings"] = m.sessions;
  align.report["sessions_in_log"] = meta_["sessions"].size();
  align.report["sessions_note"] =
      "readings of every session (clock_readings-NNN.json) are fitted together: the earliest start window, every "
      "burst and window between, this session's end window";
  for (const auto& n : notes) align.warnings.push_back(n);
  for (const auto& n : m.notes) align.warnings.push_back(n);
  return align;
}

// Per device: were the SM clocks constant; and the nvidia-smi line that would lock them.
nlohmann::json CampaignRun::clocks_and_hint() {
  nlohmann::json clocks = nlohmann::json::object();
  if (!sampler_) return clocks;
  res_.temperatures = sampler_->summaries();
  std::set<int> idx;  // NVML indices, once each (ranks may share a GPU)
  int max_sm = -1, max_mem = -1;
  for (const auto& [dev, i] : to_nvml_) {
    clocks[std::to_string(dev)] = {{"sm_clock_constant_during_run", sampler_->sm_clock_constant(dev)}};
    idx.insert(i);
    const auto s = nvml_->sample(i);
    max_sm = std::max(max_sm, s.max_sm_clock_mhz);
    max_mem = std::max(max_mem, s.max_mem_clock_mhz);
  }
  std::string list;
  for (int i : idx) list += (list.empty() ? "" : ",") + std::to_string(i);
  if (max_sm > 0)
    res_.lock_clocks_hint = fmt::format(
        "sudo nvidia-smi -i {0} --lock-gpu-clocks={1},{1} && sudo nvidia-smi -i {0} --lock-memory-clocks={2},{2}"
        "   (undo: sudo nvidia-smi -i {0} --reset-gpu-clocks --reset-memory-clocks)", list, max_sm, max_mem);
  return clocks;
}

void CampaignRun::finish_metadata(const Alignment& align, const nlohmann::json& clocks) {
  nlohmann::json temps = nlohmann::json::array();
  for (const auto& t : res_.temperatures)
    temps.push_back({{"device", t.device}, {"samples", t.samples},
                     {"temperature_c", {{"mean", t.temperature_c.mean}, {"sd", t.temperature_c.stddev}, {"min", t.temperature_c.min}, {"max", t.temperature_c.max}}},
                     {"power_w", {{"mean", t.power_w.mean}, {"sd", t.power_w.stddev}}},
                     {"sm_clock_mhz", {{"mean", t.sm_clock_mhz.mean}, {"min", t.sm_clock_mhz.min}, {"max", t.sm_clock_mhz.max}}}});
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& s : res_.sizes) sizes.push_back(to_json(s));
  auto& sess = meta_["sessions"].back();
  for (auto it = session_.begin(); it != session_.end(); ++it) sess[it.key()] = it.value();
  sess["status"] = res_.interrupted ? "interrupted" : (res_.complete ? "complete" : "incomplete");
  sess["end_time"] = iso8601_utc(realtime_ns());
  sess["ops_this_session"] = res_.ops_this_session;
  sess["warmup_phase_s"] = res_.warmup_s;
  sess["measure_phase_s"] = res_.measure_s;
  meta_["status"] = sess["status"];
  meta_["ops_logged"] = res_.ops_logged;
  meta_["ops_planned"] = res_.ops_planned;
  meta_["summary"] = sizes;
  meta_["temperatures"] = temps;
  meta_["clocks"] = {{"per_device", clocks}, {"lock_hint", res_.lock_clocks_hint},
                     {"note", "p2pscope never changes GPU settings; constant SM clocks over the run suggest locked clocks"}};
  if (nvml_) meta_["gpus_at_end"] = gpu_facts(*nvml_, to_nvml_);
  meta_["warnings"] = res_.warnings;
  // Each GPU's (under a launcher: each rank's) clock bound, beside the campaign's
  // summary; clock_drift.json has the detail.
  meta_["clock_alignment"] = res_.alignment;
  meta_["clock_alignment"]["per_device"] = nlohmann::json::array();
  for (const auto& d : align.report["devices"])
    meta_["clock_alignment"]["per_device"].push_back(
        {{"device", d["device"]}, {"offset_uncertainty_ns", d["causality"]["offset_uncertainty_ns"]},
         {"ops_checked", d["causality"]["ops_checked"]}, {"causality_violations", d["causality"]["violations"]}});
}

}  // namespace

Result run_campaign(const Params& p) { return CampaignRun(p).run(); }

}  // namespace p2pscope::profile
