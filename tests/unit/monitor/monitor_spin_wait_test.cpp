// The busy-CPU verdict on synthetic runs: a host thread spinning in
// cudaStreamSynchronize while the GPU works is not "CPU-bound", while softirq-heavy
// CPUs, system-heavy CPUs and CPUs busy with someone else's load still are.
#include <gtest/gtest.h>

#include <algorithm>

#include "monitor/collect.hpp"

using namespace p2pscope;
using namespace p2pscope::monitor;

namespace {
// A CPU's shares of one interval; what is not busy is idle.
CpuShare cpu(int id, double user, double sys = 0, double soft = 0, double irq = 0) {
  CpuShare c;
  c.cpu = id;
  c.user_pct = user, c.system_pct = sys, c.softirq_pct = soft, c.irq_pct = irq;
  c.busy_pct = user + sys + soft + irq;
  c.idle_pct = 100 - c.busy_pct;
  return c;
}
ThreadUse thread(int tid, const std::string& name, double pct, int last_cpu) {
  return ThreadUse{.tid = tid, .name = name, .cpu_pct = pct, .last_cpu = last_cpu};
}
nvml::GpuSample gpu(int index, int util_pct) {
  nvml::GpuSample g;
  g.index = index;
  g.utilization_gpu_pct = util_pct;
  return g;
}

// An 8-CPU machine, CPUs not named at 2% user; the monitor thread always on CPU 0.
Interval interval(std::vector<CpuShare> busy, std::vector<ThreadUse> threads, std::vector<nvml::GpuSample> gpus) {
  Interval iv;
  iv.seconds = 1;
  for (int id = 0; id < 8; ++id) {
    const auto it = std::find_if(busy.begin(), busy.end(), [&](const CpuShare& c) { return c.cpu == id; });
    iv.cpus.push_back(it != busy.end() ? *it : cpu(id, 2));
  }
  iv.threads = std::move(threads);
  iv.threads.push_back(thread(999, kMonitorThread, 1, 0));
  iv.gpus = std::move(gpus);
  return iv;
}

// Five one-second intervals of the same picture, as the Sampler would build them.
Summary run(const Interval& iv, bool declared = false) {
  SummaryBuilder sb;
  sb.add_gpus(iv.gpus);
  for (int i = 0; i < 5; ++i) sb.add(iv);
  Summary s = sb.finish(1.0, 0);
  s.host_waits_on_gpu = declared;
  return s;
}

bool any_contains(const std::vector<std::string>& v, const std::string& part) {
  return std::any_of(v.begin(), v.end(), [&](const auto& l) { return l.find(part) != std::string::npos; });
}
bool has(const std::vector<std::string>& v, const std::string& line) { return std::find(v.begin(), v.end(), line) != v.end(); }

// The symptom seen on the H200: the bench thread spinning on CPU 4 at user 77%.
const Interval kSpin = interval({cpu(4, 77, 20)}, {thread(100, "p2pscope", 97, 4)}, {gpu(0, 97)});
}  // namespace

TEST(MonitorSpinWait, WaiterOnBusyGpuIsNotCpuBound) {
  const auto v = verdict_lines(run(kSpin));
  EXPECT_TRUE(has(v, "host thread p2pscope spin-waits on the GPU on CPU 4 (user 77%, system 20%): not a CPU bottleneck"))
      << ::testing::PrintToString(v);
  EXPECT_FALSE(any_contains(v, "CPU-bound")) << ::testing::PrintToString(v);
  // Its ~100% of a CPU is the wait, already said: no "thread p2pscope used 97%" line.
  EXPECT_EQ(v.size(), 1u) << ::testing::PrintToString(v);

  // One CPU ~90% user, nothing else.
  const auto v90 = verdict_lines(run(interval({cpu(4, 91, 1)}, {thread(100, "p2pscope", 92, 4)}, {gpu(0, 80)})));
  EXPECT_TRUE(has(v90, "host thread p2pscope spin-waits on the GPU on CPU 4 (user 91%): not a CPU bottleneck"))
      << ::testing::PrintToString(v90);
  EXPECT_FALSE(any_contains(v90, "CPU-bound")) << ::testing::PrintToString(v90);
}

TEST(MonitorSpinWait, SameCpuPictureWithoutGpuWorkIsCpuBound) {
  // An idle GPU, or none sampled, and no declaration: the thread computes.
  for (const auto& gpus : {std::vector<nvml::GpuSample>{gpu(0, 0)}, std::vector<nvml::GpuSample>{}}) {
    const auto v = verdict_lines(run(interval({cpu(4, 77, 20)}, {thread(100, "p2pscope", 97, 4)}, gpus)));
    EXPECT_TRUE(has(v, "CPU-bound on CPU 4 (user 77%, system 20%)")) << ::testing::PrintToString(v);
    EXPECT_TRUE(has(v, "thread p2pscope (tid 100) used 97% of a CPU (last ran on CPU 4)")) << ::testing::PrintToString(v);
    EXPECT_FALSE(any_contains(v, "spin-wait")) << ::testing::PrintToString(v);
  }
}

TEST(MonitorSpinWait, DeclaredGpuDrivenRunNeedsNoUtilization) {
  // Copy-engine copies leave utilization.gpu at 0, and NVML may be absent.
  for (const auto& gpus : {std::vector<nvml::GpuSample>{gpu(0, 0)}, std::vector<nvml::GpuSample>{}}) {
    const auto v = verdict_lines(run(interval({cpu(4, 77, 20)}, {thread(100, "p2pscope", 97, 4)}, gpus), true));
    EXPECT_TRUE(any_contains(v, "spin-waits on the GPU on CPU 4")) << ::testing::PrintToString(v);
    EXPECT_FALSE(any_contains(v, "CPU-bound")) << ::testing::PrintToString(v);
  }
}

TEST(MonitorSpinWait, SoftirqHeavyCpusStayCpuBound) {
  // The TCP engine's pinned workers on CPUs 2-3, the kernel's network work in softirq;
  // a busy GPU and the declaration change nothing.
  const Interval iv = interval({cpu(2, 10, 20, 70), cpu(3, 10, 20, 70)},
                               {thread(100, "p2pscope", 40, 5), thread(101, "p2ps-tcp-0", 95, 2), thread(102, "p2ps-tcp-1", 95, 3)},
                               {gpu(0, 95)});
  for (const bool declared : {false, true}) {
    const auto v = verdict_lines(run(iv, declared));
    EXPECT_TRUE(has(v, "CPU-bound on CPUs 2-3 (softirq 70%, system 20%)")) << ::testing::PrintToString(v);
    EXPECT_FALSE(any_contains(v, "spin-wait")) << ::testing::PrintToString(v);
  }
}

TEST(MonitorSpinWait, UserHeavyCpuWithSoftirqShareStaysCpuBound) {
  // Mostly user time, but a third softirq: the CPU also serves a NIC, no pure spin.
  const auto v = verdict_lines(run(interval({cpu(4, 62, 3, 33)}, {thread(100, "p2pscope", 95, 4)}, {gpu(0, 97)}), true));
  EXPECT_TRUE(has(v, "CPU-bound on CPU 4 (user 62%, softirq 33%)")) << ::testing::PrintToString(v);
  EXPECT_FALSE(any_contains(v, "spin-wait")) << ::testing::PrintToString(v);
}

TEST(MonitorSpinWait, SystemHeavyCpusStayCpuBound) {
  const Interval iv = interval({cpu(2, 30, 65), cpu(3, 30, 65)},
                               {thread(101, "p2ps-tcp-0", 95, 2), thread(102, "p2ps-tcp-1", 95, 3)}, {gpu(0, 95), gpu(1, 95)});
  const auto v = verdict_lines(run(iv, true));
  EXPECT_TRUE(has(v, "CPU-bound on CPUs 2-3 (system 65%, user 30%)")) << ::testing::PrintToString(v);
  EXPECT_FALSE(any_contains(v, "spin-wait")) << ::testing::PrintToString(v);
}

TEST(MonitorSpinWait, BusyCpuNoOwnThreadRanOnIsCpuBound) {
  // Someone else's job on CPU 7; our thread sat on CPU 4 at 30%.
  const auto v = verdict_lines(run(interval({cpu(7, 95)}, {thread(100, "p2pscope", 30, 4)}, {gpu(0, 97)}), true));
  EXPECT_TRUE(has(v, "CPU-bound on CPU 7 (user 95%)")) << ::testing::PrintToString(v);
  EXPECT_FALSE(any_contains(v, "spin-wait")) << ::testing::PrintToString(v);

  // Our waiter shares CPU 4 with a foreign load that does most of it.
  const auto shared = verdict_lines(run(interval({cpu(4, 95)}, {thread(100, "p2pscope", 40, 4)}, {gpu(0, 97)}), true));
  EXPECT_TRUE(has(shared, "CPU-bound on CPU 4 (user 95%)")) << ::testing::PrintToString(shared);

  // Both at once: each CPU gets its own verdict.
  const auto both = verdict_lines(run(interval({cpu(4, 77, 20), cpu(7, 95)}, {thread(100, "p2pscope", 97, 4)}, {gpu(0, 97)})));
  EXPECT_TRUE(has(both, "CPU-bound on CPU 7 (user 95%)")) << ::testing::PrintToString(both);
  EXPECT_TRUE(any_contains(both, "spin-waits on the GPU on CPU 4 (")) << ::testing::PrintToString(both);
}

TEST(MonitorSpinWait, MoreWaitersThanBusyGpusIsCpuWork) {
  const std::vector<ThreadUse> threads = {thread(100, "p2pscope", 95, 1), thread(101, "gpu1", 95, 2), thread(102, "gpu2", 95, 3)};
  const std::vector<CpuShare> cpus = {cpu(1, 95), cpu(2, 95), cpu(3, 95)};
  const auto one_gpu = verdict_lines(run(interval(cpus, threads, {gpu(0, 90), gpu(1, 0)})));
  EXPECT_TRUE(has(one_gpu, "CPU-bound on CPUs 1-3 (user 95%)")) << ::testing::PrintToString(one_gpu);
  EXPECT_FALSE(any_contains(one_gpu, "spin-wait")) << ::testing::PrintToString(one_gpu);

  const auto three_gpus = verdict_lines(run(interval(cpus, threads, {gpu(0, 90), gpu(1, 90), gpu(2, 90)})));
  EXPECT_TRUE(has(three_gpus, "host threads p2pscope, gpu1, gpu2 spin-wait on the GPU on CPUs 1-3 (user 95%): not a CPU bottleneck"))
      << ::testing::PrintToString(three_gpus);
  EXPECT_FALSE(any_contains(three_gpus, "CPU-bound")) << ::testing::PrintToString(three_gpus);
}

TEST(MonitorSpinWait, SummaryCreditsThreadTimeToItsCpuAndAveragesUtilization) {
  SummaryBuilder sb;
  Interval iv = interval({}, {thread(100, "p2pscope", 50, 4)}, {gpu(0, 90)});
  sb.add(iv);
  sb.add(iv);
  iv.threads[0].last_cpu = 5;
  iv.gpus = {gpu(0, 60), gpu(1, -1)};  // GPU 1 without a utilization reading
  sb.add(iv);
  const Summary s = sb.finish(1.0, 0);
  const auto t = std::find_if(s.threads.begin(), s.threads.end(), [](const auto& x) { return x.tid == 100; });
  ASSERT_NE(t, s.threads.end());
  EXPECT_DOUBLE_EQ(t->cpu_s_by_cpu.at(4), 1.0);
  EXPECT_DOUBLE_EQ(t->cpu_s_by_cpu.at(5), 0.5);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(s.gpus[0].mean_utilization_pct, 80);
  EXPECT_EQ(s.gpus[0].max_utilization_pct, 90);
  EXPECT_EQ(s.gpus[1].mean_utilization_pct, -1);
  const auto j = summary_to_json(s);
  EXPECT_DOUBLE_EQ(j["gpus"][0]["mean_utilization_pct"].get<double>(), 80);
  EXPECT_FALSE(j["host_waits_on_gpu"].get<bool>());
}

TEST(MonitorSpinWait, SamplerCarriesTheDeclarationIntoTheSummary) {
  Options o;
  o.gpus = false;
  o.ethtool = false;
  o.interval_s = 10;  // only the first and last samples
  o.host_waits_on_gpu = true;
  Sampler sampler(FsRoot(std::string(P2PSCOPE_FIXTURES_DIR) + "/monitor/basic/t0"), o);
  sampler.start();
  const Summary s = sampler.stop();
  EXPECT_TRUE(s.host_waits_on_gpu);
  EXPECT_TRUE(summary_to_json(s)["host_waits_on_gpu"].get<bool>());
}
