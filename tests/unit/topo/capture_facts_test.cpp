// What a capture holds beyond sysfs (nvidia-smi output), what it cannot hold (NVLink
// without it: unknown, never PHB), and interrupt placement facts kept apart.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "p2pscope/topo.hpp"
#include "p2pscope/units.hpp"

using namespace p2pscope;
using namespace p2pscope::topo;
namespace fs = std::filesystem;

namespace {
const fs::path kH200 = fs::path(P2PSCOPE_FIXTURES_DIR) / "fsroot" / "h200x2";
Topology load(const fs::path& root) {
  DiscoverOptions o;
  o.use_nvml = false;
  return discover(FsRoot(root), o);
}
fs::path copy_without(const std::string& what) {
  const fs::path d = fs::temp_directory_path() / ("p2pscope-cap-" + std::to_string(::getpid()) + "-" + std::to_string(what.size()));
  fs::remove_all(d);
  fs::copy(kH200, d, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove_all(d / what);
  return d;
}
}  // namespace

TEST(CaptureFacts, NvidiaSmiInTheCaptureGivesLinksAndNames) {
  const auto t = load(kH200);
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.nvlinks[0][1], 18);
  EXPECT_EQ(t.nvlinks[1][0], 18);
  EXPECT_EQ(t.gpu_links_source, "capture (nvidia-smi topo -m)");
  EXPECT_EQ(t.gpus[1].name, "NVIDIA H200");
  EXPECT_EQ(t.gpus[1].uuid, "GPU-b29203e2-84bf-7f20-a60b-8c4ae3c11474");
  EXPECT_EQ(t.gpus[0].memory_bytes, 143771ull << 20);
  EXPECT_NE(to_text(t).find("NV18"), std::string::npos);
}

TEST(CaptureFacts, WithoutNvidiaSmiGpuLinksAreUnknownNotPhb) {
  const fs::path d = copy_without("p2pscope");
  const auto t = load(d);
  EXPECT_TRUE(t.gpu_links_source.empty());
  EXPECT_EQ(gpu_gpu_matrix(t)[0][1], "?");
  EXPECT_EQ(gpu_link_class(t, 0, 1), "?");
  const std::string text = to_text(t);
  EXPECT_NE(text.find("GPU-GPU links: unknown (not in capture)"), std::string::npos);
  EXPECT_EQ(text.find("GPU0  X     PHB"), std::string::npos) << text;
  bool warned = false;
  for (const auto& w : t.warnings) warned = warned || w.find("unknown (not in capture)") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_EQ(to_json(t)["gpu_links_source"], "unknown (not in capture)");
  EXPECT_EQ(t.gpus[0].name, "NVIDIA 0x2335");  // sysfs knows the device id only
  fs::remove_all(d);
}

TEST(CaptureFacts, InterruptPlacementFieldsApartAndUnknownsUnknown) {
  // h200x2: smp_affinity 0-31, no effective_affinity captured, counts on CPUs 7 and 8.
  const auto t = load(kH200);
  const Nic* eth0 = t.find_nic("eth0");
  ASSERT_NE(eth0, nullptr);
  const auto p = irq_placement(t, *eth0);
  EXPECT_EQ(format_cpulist(p.allowed), "0-31");
  EXPECT_TRUE(p.effective.empty());  // not captured: unknown, shown as "?"
  EXPECT_EQ(format_cpulist(p.counted), "7-8");
  const auto j = to_json(t);
  for (const auto& n : j["nics"])
    if (n["name"] == "eth0") {
      EXPECT_TRUE(n["irq_placement"]["effective_cpus"].is_null());
      EXPECT_EQ(n["irq_placement"]["counted_cpus"], nlohmann::json({7, 8}));
    }
  // Queue directories not captured: unknown, not 0/0.
  const fs::path d = copy_without("sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0/queues");
  const auto u = load(d);
  ASSERT_NE(u.find_nic("eth0"), nullptr);
  EXPECT_EQ(u.find_nic("eth0")->rx_queues, -1);
  EXPECT_TRUE(to_json(u)["nics"][0]["queues"].is_null() || to_json(u)["nics"][1]["queues"].is_null() ||
              to_json(u)["nics"][2]["queues"].is_null() || to_json(u)["nics"][3]["queues"].is_null());
  fs::remove_all(d);
}

TEST(CaptureFacts, RealH100CaptureWithTheNewScript) {
  const auto t = load(fs::path(P2PSCOPE_FIXTURES_DIR) / "fsroot" / "h100x1");
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.gpus[0].uuid, "GPU-ab3469fe-747c-0286-7777-5240770905f3");
  EXPECT_EQ(t.default_route_nic, "eth0");
  const Nic* eth0 = t.find_nic("eth0");
  ASSERT_NE(eth0, nullptr);
  const auto p = irq_placement(t, *eth0);
  // Three different answers, each in its own field.
  EXPECT_EQ(format_cpulist(p.allowed), "0-15");
  EXPECT_EQ(format_cpulist(p.effective), "6-8");
  EXPECT_EQ(format_cpulist(p.counted), "7-8");
  EXPECT_EQ(eth0->rx_queues, 1);
}
