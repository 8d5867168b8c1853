// The Sampler: a Collector, a SummaryBuilder and monitor.csv driven by one thread.
// Everything that can fail on the sampler thread is caught and noted, so the run
// being monitored never sees a monitor failure.
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "monitor/collect.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::monitor {
namespace {
std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

struct Sampler::Impl {
  FsRoot fs;
  Options opts;
  std::unique_ptr<Collector> collector;
  SummaryBuilder builder;
  Snapshot last;
  std::FILE* csv = nullptr;
  std::string rows;
  std::int64_t start_real_ns = 0;
  std::int64_t cpu_ns = 0;  // sampler CPU time spent in sample()
  int samples = 0;
  long ticks = sysconf(_SC_CLK_TCK);
  bool started = false, stopped = false;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread thread;
  Summary summary;

  Impl(FsRoot f, Options o) : fs(std::move(f)), opts(std::move(o)) {}

  void note(const std::string& n) {
    builder.note(n);
    if (!csv) return;
    std::string text = n;
    for (auto& ch : text)
      if (ch == ',' || ch == '\n' || ch == '"') ch = '_';
    std::fprintf(csv, "%lld,note,%s,1\n", static_cast<long long>(realtime_ns()), text.c_str());
  }

  // One sample, its interval against the previous one, CSV rows, summary.
  void sample(bool first) {
    const std::int64_t cpu0 = thread_cpu_ns();
    try {
      Snapshot s = collector->collect(fs, monotonic_ns(), realtime_ns());
      if (first) {
        for (const auto& n : s.notes) note(n);
        builder.add_gpus(s.gpus);
      } else {
        Interval iv = diff(last, s, *collector, ticks);
        builder.add(iv);
        rows.clear();
        append_csv_rows(iv, rows);
        if (csv && !rows.empty()) {
          std::fwrite(rows.data(), 1, rows.size(), csv);
          std::fflush(csv);
        }
        if (opts.on_interval) {
          try {
            opts.on_interval(iv);
          } catch (const std::exception& e) {
            builder.note(std::string("live display failed: ") + e.what());
          }
        }
      }
      last = std::move(s);
    } catch (const std::exception& e) {
      builder.note(std::string("sample failed: ") + e.what());
    }
    ++samples;
    cpu_ns += thread_cpu_ns() - cpu0;
  }

  void loop() {
    pthread_setname_np(pthread_self(), "p2ps-monitor");
    const auto period = std::chrono::duration<double>(opts.interval_s);
    auto next = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
      // A sample slower than the interval (a loaded machine): skip ahead, don't burst.
      if (const auto now = std::chrono::steady_clock::now(); next < now) next = now;
      if (cv.wait_until(lock, next, [this] { return stopping; })) break;
      lock.unlock();
      sample(false);
      lock.lock();
    }
  }
};

Sampler::Sampler(FsRoot fs, Options opts) : impl_(std::make_unique<Impl>(std::move(fs), std::move(opts))) {
  // Bounded both ways: the wait below converts it to integer nanoseconds.
  if (!(impl_->opts.interval_s > 0.0009 && impl_->opts.interval_s <= 3600))
    throw UsageError("monitor interval must be between 1 ms and 1 h");
}

Sampler::~Sampler() {
  try {
    stop();
  } catch (...) {  // destructors never throw
  }
}

void Sampler::start() {
  Impl& m = *impl_;
  if (m.started) return;
  if (!m.opts.out_csv.empty()) {
    m.csv = std::fopen(m.opts.out_csv.c_str(), "w");
    if (!m.csv) throw Error("cannot write " + m.opts.out_csv + ": " + errno_text(errno));
    std::fprintf(m.csv, "%s\n", kCsvHeader);
  }
  m.started = true;
  m.start_real_ns = realtime_ns();
  try {
    m.collector = std::make_unique<Collector>(m.fs, m.opts);
    for (const auto& n : m.collector->setup_notes()) m.note(n);
    if (m.opts.gpus && m.fs.is_live()) {
      std::string why;
      if (auto nv = nvml::Nvml::load(&why)) m.collector->set_nvml(std::move(nv));
      else m.note("no GPU sampling: " + why);
    }
    m.sample(true);
    m.thread = std::thread([&m] { m.loop(); });
  } catch (const std::exception& e) {
    m.note(std::string("monitor not started: ") + e.what());
    m.collector.reset();
  }
}

Summary Sampler::stop() {
  Impl& m = *impl_;
  if (!m.started || m.stopped) return m.summary;
  m.stopped = true;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.stopping = true;
  }
  m.cv.notify_all();
  if (m.thread.joinable()) {
    m.thread.join();
    m.sample(false);  // the sample at the end
  }
  try {
    m.summary = m.builder.finish(m.opts.interval_s, m.start_real_ns);
  } catch (const std::exception& e) {
    m.summary.notes.push_back(std::string("summary failed: ") + e.what());
  }
  m.summary.host_waits_on_gpu = m.opts.host_waits_on_gpu;
  m.summary.monitor_cpu_s = static_cast<double>(m.cpu_ns) / 1e9;
  m.summary.monitor_cpu_ns_per_sample = m.samples ? static_cast<double>(m.cpu_ns) / m.samples : 0;
  if (m.csv) {
    std::fclose(m.csv);
    m.csv = nullptr;
  }
  m.collector.reset();  // its kept-open /proc and sysfs files and NVML go now, not at destruction
  return m.summary;
}

}  // namespace p2pscope::monitor
