// bench net --dmabuf on a GPU (issue 20): a dma-buf exported from cudaMalloc memory as
// NCCL exports one (cuMemGetHandleForAddressRange over the page-aligned range) is seen
// as a dma-buf by the kernel; the engine over the reference plugin with
// P2PSCOPE_REFNET_DMABUF=1 registers every link through regMrDmaBuf (the plugin counts
// them) and moves CUDA memory byte for byte; --dmabuf off takes regMr; a bad fd is a
// clear error. Skips with the reason where there is no GPU or it cannot export dma-bufs.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "netplugin_ref/refnet_dmabuf.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/netplugin.hpp"
#include "p2pscope/tcp.hpp"
#include "transport/session/datapath.hpp"
#include "support/tcp_session.hpp"
#include "transport/tcp/memory.hpp"
#include "unit/net/net_test_util.hpp"

using namespace p2pscope;
using namespace p2pscope::tcp;
using namespace p2pscope::session;
using p2pscope::test::over;

#define DMABUF_REQUIRE_GPU()                                                              \
  do {                                                                                    \
    const auto& rt = gpu::runtime_info();                                                 \
    if (!rt.cuda_built) GTEST_SKIP() << "built without CUDA";                             \
    if (rt.device_count < 1) GTEST_SKIP() << "no GPU: " << rt.why_no_gpu;                 \
    if (const std::string why = dmabuf_unsupported(0); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string fdinfo(int fd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(fd));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Successful regMrDmaBuf calls of the loaded reference plugin (its own counter).
unsigned long long refnet_dmabuf_registrations() {
  void* h = dlopen(nettest::kRefnet.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!h) return ~0ull;
  auto f = reinterpret_cast<unsigned long long (*)()>(dlsym(h, "p2pscope_refnet_dmabuf_registrations"));
  const unsigned long long n = f ? f() : ~0ull;
  dlclose(h);
  return n;
}

std::shared_ptr<net::Plugin> refnet_with_dmabuf() { return nettest::load_refnet({{"P2PSCOPE_REFNET_DMABUF", "1"}}); }

Params gpu_params() {
  // Not whole pages: the exported range is widened.
  return {.mem = MemKind::gpu, .channels = 2, .window = 4, .size_bytes = (64u << 20) + 4099,
          .chunk_bytes = 1u << 20, .iters = 2, .warmup = 1, .verify = true, .timeout_s = 30};
}

}  // namespace

TEST(NetDmabufGpu, ExportedRangeIsADmabufTheKernelKnows) {
  DMABUF_REQUIRE_GPU();
  Buffer b = Buffer::device((66u << 20) + 12345, 0);
  DmabufFd fd = export_dmabuf(b);
  ASSERT_GE(fd.fd(), 0);
  const std::string text = fdinfo(fd.fd());
  std::printf("fdinfo of the dma-buf of a %zu-byte cudaMalloc buffer (offset %llu, range %llu):\n%s", b.size(),
              static_cast<unsigned long long>(fd.offset()), static_cast<unsigned long long>(fd.range_bytes()),
              text.c_str());
  const auto info = refnet::parse_dmabuf_fdinfo(text);
  EXPECT_TRUE(info.is_dmabuf) << text;
  EXPECT_EQ(info.size, fd.range_bytes()) << text;
  EXPECT_EQ(fd.range_bytes() % 4096, 0u);
  EXPECT_GE(fd.range_bytes(), fd.offset() + b.size());
  EXPECT_EQ(refnet::check_dmabuf_fd(fd.fd(), fd.offset(), b.size()), "");
  EXPECT_NE(refnet::check_dmabuf_fd(fd.fd(), fd.offset(), fd.range_bytes() + 1), "");
}

TEST(NetDmabufGpu, LoopbackCudaMemoryThroughRegMrDmaBufVerified) {
  DMABUF_REQUIRE_GPU();
  auto plugin = refnet_with_dmabuf();
  ASSERT_TRUE(plugin->device(0).dmabuf()) << net::gpu_memory_verdict(*plugin);
  const unsigned long long before = refnet_dmabuf_registrations();
  const Params p = gpu_params();
  const Results r = run_loopback(p, over(plugin, DmabufMode::on), over(plugin, DmabufMode::on));
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters));  // byte for byte, every round
  for (const auto* s : {&r.client, &r.server}) {
    ASSERT_EQ(s->channels.size(), p.channels) << s->side;
    for (const auto& c : s->channels) EXPECT_EQ(c.registration, "dmabuf") << s->side << " channel " << c.channel;
  }
  // One regMrDmaBuf per link and side, each one checked by the plugin against its fd.
  EXPECT_EQ(refnet_dmabuf_registrations() - before, 2u * p.channels);
  const std::string text = format_text(r);
  EXPECT_TRUE(has(text, "client registration: regMrDmaBuf (dma-buf fd of the CUDA buffer) on all 2 channel(s)")) << text;
  std::printf("bench net, CUDA memory, --dmabuf on, 2 channels, 64 MiB: %.3f GB/s received\n", r.server.rx_bytes_per_s / 1e9);
}

TEST(NetDmabufGpu, OffRegistersWithRegMrAndTheBytesStillMatch) {
  DMABUF_REQUIRE_GPU();
  auto plugin = refnet_with_dmabuf();
  const unsigned long long before = refnet_dmabuf_registrations();
  Params p = gpu_params();
  p.size_bytes = (8u << 20) + 1;
  const Results r = run_loopback(p, over(plugin, DmabufMode::off), over(plugin, DmabufMode::off));
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_EQ(r.server.verified_bytes, p.size_bytes * (p.warmup + p.iters));
  for (const auto& c : r.server.channels) EXPECT_EQ(c.registration, "cuda");
  EXPECT_EQ(refnet_dmabuf_registrations(), before);
}

TEST(NetDmabufGpu, AutoTakesDmabufWhereOfferedAndRegMrWhereNot) {
  DMABUF_REQUIRE_GPU();
  Params p = gpu_params();
  p.size_bytes = (4u << 20) + 3;
  auto with = refnet_with_dmabuf();
  Results r = run_loopback(p, over(with, DmabufMode::auto_), over(with, DmabufMode::auto_));
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  for (const auto& c : r.client.channels) EXPECT_EQ(c.registration, "dmabuf");
  nettest::Env env({{"P2PSCOPE_REFNET_CUDA", "1"}});  // CUDA without DMA-BUF
  net::LoadOptions o;
  o.plugin = nettest::kRefnet;
  auto without = net::Plugin::load(o);
  r = run_loopback(p, over(without, DmabufMode::auto_), over(without, DmabufMode::auto_));
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  for (const auto& c : r.client.channels) EXPECT_EQ(c.registration, "cuda");
}

// An fd that is not a dma-buf, or one too small for the region: the plugin refuses and
// the library's error names the call and carries the plugin's reason.
TEST(NetDmabufGpu, BadFdsAreClearErrors) {
  DMABUF_REQUIRE_GPU();
  nettest::Env env({{"P2PSCOPE_REFNET_DMABUF", "1"}});
  nettest::Pair pair = nettest::connect_pair();
  Buffer b = Buffer::device(1u << 20, 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  try {
    pair.recv.reg_mr_dmabuf(b.data(), b.size(), net::MemType::cuda, 0, fds[0]);
    ADD_FAILURE() << "a pipe accepted as a dma-buf";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "regMrDmaBuf") && has(e.what(), "is a pipe, not a dma-buf")) << e.what();
  }
  close(fds[0]);
  close(fds[1]);
  DmabufFd fd = export_dmabuf(b);
  try {
    pair.recv.reg_mr_dmabuf(b.data(), fd.range_bytes() + 4096, net::MemType::cuda, fd.offset(), fd.fd());
    ADD_FAILURE() << "a region larger than its dma-buf accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "too small for offset")) << e.what();
  }
}
