// A machine with no NVIDIA driver at all (this build machine): CUDA's own text for that
// case is "CUDA driver version is insufficient for CUDA runtime version", which sends a
// user after a driver upgrade. p2pscope says there is no driver, in --version and when
// a GPU backend is asked for.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>

#include "support/run_binary.hpp"

namespace fs = std::filesystem;
using p2pscope::test::run_binary;

namespace {
bool driver_library_loads() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}
}  // namespace

TEST(NoDriver, SaidAsSuchNotAsAnInsufficientVersion) {
  if (!fs::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built: " << P2PSCOPE_BINARY;
  if (driver_library_loads()) GTEST_SKIP() << "an NVIDIA driver (libcuda.so.1) is installed here";
  const auto v = run_binary("--version");
  ASSERT_EQ(v.code, 0) << v.out;
  if (v.out.find("built without CUDA") != std::string::npos) GTEST_SKIP() << "built without CUDA: " << v.out;
  EXPECT_NE(v.out.find("no NVIDIA driver"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("insufficient"), std::string::npos) << v.out;
  const auto b = run_binary("bench gpu --backend ce --sizes 4K");
  EXPECT_NE(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("no NVIDIA driver"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("insufficient"), std::string::npos) << b.out;
}
