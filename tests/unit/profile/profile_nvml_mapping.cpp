// Which NVML GPU a campaign device's temperatures and clocks are read from. A wrong
// answer puts another GPU's samples under a device's name, so every way of knowing
// (the backend's bus id, the topology's CUDA index, the plain number) is checked,
// and devices on another host or unknown to NVML must get no samples at all.
#include <gtest/gtest.h>

#include "profile/setup.hpp"

using namespace p2pscope;
using namespace p2pscope::profile;
using Loc = bench::Backend::DeviceLocation;

namespace {
// NVML's order differs from CUDA's here, as it does on machines where CUDA orders
// by speed (CUDA_DEVICE_ORDER=FASTEST_FIRST) and NVML by bus.
const std::vector<std::string> kNvmlBus = {"00000000:19:00.0", "00000000:3B:00.0", "00000000:4C:00.0"};
}  // namespace

TEST(NvmlMapping, TheTopologysCudaIndexFindsTheGpuByBus) {
  const std::map<int, std::string> cuda_bus = {{0, "0000:4c:00.0"}, {1, "0000:19:00.0"}};
  const auto m = resolve_nvml_indices({0, 1}, kNvmlBus, cuda_bus, nullptr);
  EXPECT_EQ(m.to_nvml, (std::map<int, int>{{0, 2}, {1, 0}}));
  EXPECT_TRUE(m.notes.empty());
}

TEST(NvmlMapping, TheBackendsBusIdWinsOverTheCudaIndex) {
  // One process per GPU: device 1 is rank 1, whose GPU is the one at 3b:00.0, whatever
  // CUDA index 1 is in rank 0's process.
  const std::map<int, std::string> cuda_bus = {{0, "0000:19:00.0"}, {1, "0000:4c:00.0"}};
  const auto m = resolve_nvml_indices({0, 1}, kNvmlBus, cuda_bus, [](int d) {
    return Loc{true, true, "h", d == 0 ? "0000:19:00.0" : "0000:3B:00.0"};
  });
  EXPECT_EQ(m.to_nvml, (std::map<int, int>{{0, 0}, {1, 1}}));
}

TEST(NvmlMapping, DevicesOnAnotherHostGetNoSamplesAndANote) {
  const auto m = resolve_nvml_indices({0, 1}, kNvmlBus, {}, [](int d) {
    return d == 0 ? Loc{true, true, "a", "0000:19:00.0"} : Loc{true, false, "node-b", "0000:19:00.0"};
  });
  EXPECT_EQ(m.to_nvml, (std::map<int, int>{{0, 0}})) << "node-b's GPU has this host's bus id, but it is not this GPU";
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("device 1 is on host node-b"), std::string::npos) << m.notes[0];
}

TEST(NvmlMapping, HostMemoryIsSkippedAndUnknownGpusAreSaidSo) {
  const auto m = resolve_nvml_indices({0, 3, 5}, kNvmlBus, {}, [](int d) {
    Loc l;
    if (d == 5) l.gpu = false;                 // staged's host pinned memory
    if (d == 3) l.pci_bus = "0000:99:00.0";    // a bus NVML does not have
    return l;
  });
  EXPECT_EQ(m.to_nvml, (std::map<int, int>{{0, 0}})) << "device 0: nothing known, the same number";
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("device 3 (0000:99:00.0) is not among NVML's GPUs"), std::string::npos) << m.notes[0];
}

TEST(NvmlMapping, ANumberBeyondNvmlsGpusIsNotSampled) {
  const auto m = resolve_nvml_indices({0, 4}, kNvmlBus, {}, nullptr);
  EXPECT_EQ(m.to_nvml, (std::map<int, int>{{0, 0}}));
  EXPECT_EQ(m.notes.size(), 1u);
}
