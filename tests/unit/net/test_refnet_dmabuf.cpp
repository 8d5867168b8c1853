// The reference plugin's DMA-BUF switch (P2PSCOPE_REFNET_DMABUF=1) on a machine without a
// GPU: how it reads /proc/self/fdinfo (captured fixtures), which fds it refuses and why,
// and what the library says when a plugin without DMA-BUF is asked for a dma-buf
// registration. The registration itself, with a dma-buf of CUDA memory, is in
// tests/gpu/test_net_dmabuf.cpp.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "netplugin_ref/refnet_dmabuf.hpp"
#include "p2pscope/error.hpp"
#include "unit/net/net_test_util.hpp"

using namespace p2pscope;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(P2PSCOPE_FIXTURES_DIR) + "/dmabuf/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << "missing fixture dmabuf/" << name;
  return ss.str();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A /proc/self/fdinfo stand-in: the file named after fd holds `text`.
class FakeProc {
 public:
  FakeProc() : dir_(fs::temp_directory_path() / ("p2pscope-fdinfo-" + std::to_string(getpid()))) {
    fs::create_directories(dir_);
  }
  ~FakeProc() { fs::remove_all(dir_); }
  std::string with(int fd, const std::string& text) {
    std::ofstream(dir_ / std::to_string(fd)) << text;
    return dir_.string() + "/";
  }

 private:
  fs::path dir_;
};

}  // namespace

TEST(RefnetDmabufFdinfo, ParsesTheExporterAndSizeOfANvidiaDmabuf) {
  const auto info = refnet::parse_dmabuf_fdinfo(fixture("fdinfo-nvidia-h100.txt"));
  EXPECT_TRUE(info.is_dmabuf);
  EXPECT_EQ(info.exporter, "nv_dmabuf");  // NVIDIA's open kernel module, 580 driver
  EXPECT_EQ(info.size, 69222400u);        // the 69218361-byte buffer widened to whole pages
}

TEST(RefnetDmabufFdinfo, OtherFilesHaveNoExporter) {
  for (const char* name : {"fdinfo-regular-file.txt", "fdinfo-pipe.txt"}) {
    SCOPED_TRACE(name);
    const auto info = refnet::parse_dmabuf_fdinfo(fixture(name));
    EXPECT_FALSE(info.is_dmabuf);
    EXPECT_EQ(info.size, 0u);  // "pos:" and "ino:" are no size
  }
  EXPECT_FALSE(refnet::parse_dmabuf_fdinfo("").is_dmabuf);
  // Keys match whole, not by prefix: "exp_names" or "sizes" are not the kernel's lines.
  const auto odd = refnet::parse_dmabuf_fdinfo("sizes:\t5\nexp_names:\tx\nsize:\tnot-a-number\n");
  EXPECT_FALSE(odd.is_dmabuf);
  EXPECT_EQ(odd.size, 0u);
}

// The checks regMrDmaBuf runs, against fdinfo text of a real dma-buf (the fixture) put
// where the plugin reads it: offset + size must fit; an fd that is not a dma-buf, or is
// not open, is refused with what it is.
TEST(RefnetDmabufFdinfo, CoverageOfOffsetPlusSize) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  FakeProc proc;
  const std::string dir = proc.with(p[0], fixture("fdinfo-nvidia-h100.txt"));
  const std::uint64_t total = 69222400;
  EXPECT_EQ(refnet::check_dmabuf_fd(p[0], 0, total, dir), "");
  EXPECT_EQ(refnet::check_dmabuf_fd(p[0], 4096, total - 4096, dir), "");
  const std::string over = refnet::check_dmabuf_fd(p[0], 4096, total - 4095, dir);
  EXPECT_TRUE(has(over, "dma-buf of 69222400 bytes") && has(over, "exporter nv_dmabuf") && has(over, "too small for offset 4096"))
      << over;
  EXPECT_NE(refnet::check_dmabuf_fd(p[0], ~std::uint64_t{0}, 2, dir), "") << "offset + size wrapping past 2^64";
  close(p[0]);
  close(p[1]);
}

TEST(RefnetDmabufFd, RealFdsThatAreNotDmabufsAreRefusedSayingWhatTheyAre) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const std::string pipe_why = refnet::check_dmabuf_fd(p[0], 0, 1);
  EXPECT_TRUE(has(pipe_why, "is a pipe, not a dma-buf") && has(pipe_why, "no exp_name line")) << pipe_why;
  close(p[0]);
  close(p[1]);
  const int f = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(f, 0);
  EXPECT_TRUE(has(refnet::check_dmabuf_fd(f, 0, 1), "is a regular file, not a dma-buf"));
  close(f);
  EXPECT_EQ(refnet::check_dmabuf_fd(p[0], 0, 1), "is not an open file descriptor");  // closed above
  EXPECT_EQ(refnet::check_dmabuf_fd(-1, 0, 1), "is not an open file descriptor");
}

// Without libcuda (this machine), the switch cannot offer DMA-BUF: the plugin says why in
// its log and advertises host memory only, and the library refuses a dma-buf
// registration naming what the device offers.
TEST(RefnetDmabuf, WithoutCudaTheSwitchOffersHostOnlyAndSaysWhy) {
  if (void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(cu);
    GTEST_SKIP() << "libcuda.so.1 is present: tests/gpu/test_net_dmabuf.cpp covers this machine";
  }
  nettest::Env env({{"P2PSCOPE_REFNET_DMABUF", "1"}});
  nettest::Pair p = nettest::connect_pair();
  EXPECT_FALSE(p.plugin->device(0).dmabuf());
  EXPECT_EQ(p.plugin->device(0).ptr_support, net::kPtrHost);
  std::string log;
  for (const auto& l : p.plugin->log()) log += l + "\n";
  EXPECT_TRUE(has(log, "P2PSCOPE_REFNET_DMABUF=1 but libcuda.so.1 could not be loaded")) << log;
  std::vector<char> buf(4096);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  try {
    p.send.reg_mr_dmabuf(buf.data(), buf.size(), net::MemType::cuda, 0, fds[0]);
    ADD_FAILURE() << "a dma-buf registration accepted by a device without NCCL_PTR_DMABUF";
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "does not take DMA-BUF registrations") && has(e.what(), "it offers host")) << e.what();
  }
  close(fds[0]);
  close(fds[1]);
}

// The counter tests read to see that regMrDmaBuf was taken: exported, and zero while
// nothing registered through it.
TEST(RefnetDmabuf, RegistrationCounterIsExported) {
  nettest::Pair p = nettest::connect_pair();
  void* h = dlopen(nettest::kRefnet.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr) << "the plugin is loaded by the test";
  auto count = reinterpret_cast<unsigned long long (*)()>(dlsym(h, "p2pscope_refnet_dmabuf_registrations"));
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count(), 0u);
  dlclose(h);
}
