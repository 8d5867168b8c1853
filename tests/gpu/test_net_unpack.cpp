// The UNPACK scatter kernel (src/transport/net/unpack.cu) checked byte for byte and
// timed on 4 KiB pieces against the device-local copy (cudaMemcpy D2D) in the same
// process; and the reference plugin with CUDA memory and in UNPACK mode feeding the
// kernel. Skips with the reason where there is no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/netplugin.hpp"
#include "unit/net/net_test_util.hpp"

#if P2PSCOPE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace p2pscope;
using net::UnpackPiece;

#define NET_REQUIRE_GPU()                                                                 \
  do {                                                                                    \
    const auto& rt = gpu::runtime_info();                                                 \
    if (!rt.cuda_built) GTEST_SKIP() << "built without CUDA";                             \
    if (rt.device_count < 1) GTEST_SKIP() << "no GPU: " << rt.why_no_gpu;                 \
  } while (0)

#if P2PSCOPE_HAVE_CUDA
namespace {

#define CK(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(cudaGetLastError())

// Pages of `bytes` in a shuffled order, as a plugin's bounce buffer hands them out.
std::vector<UnpackPiece> shuffled_pages(std::size_t bytes, std::uint32_t page, unsigned seed) {
  std::vector<std::size_t> order(bytes / page);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  std::vector<UnpackPiece> v;
  for (std::size_t i = 0; i < order.size(); ++i)
    v.push_back({static_cast<std::uint32_t>(order[i] * page), page, i * page});
  return v;
}

}  // namespace

TEST(NetUnpackGpu, ScattersEveryPieceByteForByte) {
  NET_REQUIRE_GPU();
  const std::size_t bytes = 8u << 20;
  auto pieces = shuffled_pages(bytes, 4096, 1);
  // Odd pieces too: unaligned offsets and lengths take the byte path.
  pieces.push_back({3, 1, bytes + 5});
  pieces.push_back({4099, 17, bytes + 64});
  pieces.push_back({8191, 4095, bytes + 4096 + 7});
  const std::size_t dst_bytes = bytes + 3 * 4096;
  auto src = nettest::pattern(bytes, 11);
  std::vector<unsigned char> want(dst_bytes, 0xAB);
  for (const auto& p : pieces) std::memcpy(want.data() + p.dst_off, src.data() + p.src_off, p.len);
  void *d_src, *d_dst, *d_pieces;
  CK(cudaMalloc(&d_src, bytes));
  CK(cudaMalloc(&d_dst, dst_bytes));
  CK(cudaMalloc(&d_pieces, pieces.size() * sizeof(UnpackPiece)));
  CK(cudaMemcpy(d_src, src.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemset(d_dst, 0xAB, dst_bytes));
  CK(cudaMemcpy(d_pieces, pieces.data(), pieces.size() * sizeof(UnpackPiece), cudaMemcpyHostToDevice));
  net::launch_unpack(static_cast<UnpackPiece*>(d_pieces), pieces.size(), d_src, d_dst, nullptr);
  CK(cudaDeviceSynchronize());
  std::vector<unsigned char> got(dst_bytes);
  CK(cudaMemcpy(got.data(), d_dst, dst_bytes, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(got == want) << "the scatter differs from the CPU reference";
  cudaFree(d_src);
  cudaFree(d_dst);
  cudaFree(d_pieces);
}

TEST(NetUnpackGpu, FourKiBPiecesAgainstDeviceLocalCopy) {
  NET_REQUIRE_GPU();
  const std::size_t bytes = 512u << 20;
  auto pieces = shuffled_pages(bytes, 4096, 2);
  void *d_src, *d_dst, *d_pieces;
  CK(cudaMalloc(&d_src, bytes));
  CK(cudaMalloc(&d_dst, bytes));
  CK(cudaMalloc(&d_pieces, pieces.size() * sizeof(UnpackPiece)));
  CK(cudaMemcpy(d_pieces, pieces.data(), pieces.size() * sizeof(UnpackPiece), cudaMemcpyHostToDevice));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  const int reps = 20;
  auto time_it = [&](auto&& body) {
    body();  // warm
    cudaEventRecord(a);
    for (int i = 0; i < reps; ++i) body();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return static_cast<double>(bytes) * reps / (ms / 1e3) / 1e9;
  };
  const double kernel = time_it([&] {
    net::launch_unpack(static_cast<UnpackPiece*>(d_pieces), pieces.size(), d_src, d_dst, nullptr);
  });
  const double copy = time_it([&] { cudaMemcpyAsync(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice); });
  CK(cudaDeviceSynchronize());
  std::printf("unpack kernel, 4 KiB pieces, 512 MiB: %.1f GB/s; device-local copy (cudaMemcpy D2D): %.1f GB/s; "
              "ratio %.2f\n", kernel, copy, kernel / copy);
  RecordProperty("unpack_GBps", std::to_string(kernel));
  RecordProperty("d2d_copy_GBps", std::to_string(copy));
  EXPECT_GE(kernel / copy, 0.5) << "issue 20: the scatter should reach half the device-local copy bandwidth";
  cudaFree(d_src);
  cudaFree(d_dst);
  cudaFree(d_pieces);
}

TEST(NetUnpackGpu, ReferencePluginMovesCudaMemoryByteForByte) {
  NET_REQUIRE_GPU();
  nettest::Env env({{"P2PSCOPE_REFNET_CUDA", "1"}});
  nettest::Pair p = nettest::connect_pair();
  ASSERT_TRUE(p.plugin->device(0).cuda_memory()) << net::gpu_memory_verdict(*p.plugin);
  const std::size_t bytes = (16u << 20) + 123;
  auto src = nettest::pattern(bytes, 5);
  void *d_src, *d_dst;
  CK(cudaMalloc(&d_src, bytes));
  CK(cudaMalloc(&d_dst, bytes));
  CK(cudaMemcpy(d_src, src.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemset(d_dst, 0, bytes));
  {
    net::MemRegion ms = p.send.reg_mr(d_src, bytes, net::MemType::cuda);
    net::MemRegion mr = p.recv.reg_mr(d_dst, bytes, net::MemType::cuda);
    const std::size_t chunk = 1u << 20;
    std::size_t sent = 0, recvd = 0, sdone = 0, rdone = 0;
    const std::size_t n = (bytes + chunk - 1) / chunk;
    const auto end = nettest::in_s(20);
    while (sdone < n || rdone < n) {
      ASSERT_LT(net::Clock::now(), end);
      auto len = [&](std::size_t i) { return std::min(chunk, bytes - i * chunk); };
      if (sent < n && sent - sdone < 4 && p.send.isend(static_cast<char*>(d_src) + sent * chunk, len(sent), ms)) ++sent;
      if (recvd < n && recvd - rdone < 4 && p.recv.irecv(static_cast<char*>(d_dst) + recvd * chunk, len(recvd), mr))
        ++recvd;
      if (sdone < sent && p.send.test_oldest()) ++sdone;
      if (rdone < recvd && p.recv.test_oldest()) ++rdone;
    }
  }
  std::vector<unsigned char> got(bytes);
  CK(cudaMemcpy(got.data(), d_dst, bytes, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(got == src) << "CUDA receive differs from what was sent";
  cudaFree(d_src);
  cudaFree(d_dst);
}

TEST(NetUnpackGpu, ReferencePluginUnpackModeThroughTheKernel) {
  NET_REQUIRE_GPU();
  nettest::Env env({{"P2PSCOPE_REFNET_UNPACK", "1"}});
  nettest::Pair p = nettest::connect_pair();
  const std::size_t bytes = (1u << 20) + 100;
  auto src = nettest::pattern(bytes, 8);
  std::vector<unsigned char> host_dst(bytes);
  net::MemRegion ms = p.send.reg_mr(src.data(), bytes, net::MemType::host);
  net::MemRegion mr = p.recv.reg_mr(host_dst.data(), bytes, net::MemType::host);
  ASSERT_TRUE(p.send.isend(src.data(), bytes, ms));
  ASSERT_TRUE(p.recv.irecv(host_dst.data(), bytes, mr));
  const auto end = nettest::in_s(10);
  while (!p.send.test_oldest()) ASSERT_LT(net::Clock::now(), end);
  while (!p.recv.test_oldest()) ASSERT_LT(net::Clock::now(), end);
  net::UnpackView v = p.recv.unpack_view();
  // As TCPX: the list and the bounce area are the plugin's; the kernel reads them
  // where they are (here host memory mapped into the GPU's address space).
  const std::size_t bounce_bytes = 16u * (4u << 20);
  CK(cudaHostRegister(const_cast<void*>(v.bounce), bounce_bytes, cudaHostRegisterMapped));
  CK(cudaHostRegister(const_cast<UnpackPiece*>(v.pieces), v.count * sizeof(UnpackPiece), cudaHostRegisterMapped));
  void *d_bounce, *d_pieces, *d_dst;
  CK(cudaHostGetDevicePointer(&d_bounce, const_cast<void*>(v.bounce), 0));
  CK(cudaHostGetDevicePointer(&d_pieces, const_cast<UnpackPiece*>(v.pieces), 0));
  CK(cudaMalloc(&d_dst, bytes));
  net::launch_unpack(static_cast<UnpackPiece*>(d_pieces), v.count, d_bounce, d_dst, nullptr);
  CK(cudaDeviceSynchronize());
  std::vector<unsigned char> got(bytes);
  CK(cudaMemcpy(got.data(), d_dst, bytes, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(got == src);
  cudaHostUnregister(const_cast<void*>(v.bounce));
  cudaHostUnregister(const_cast<UnpackPiece*>(v.pieces));
  cudaFree(d_dst);
  p.recv.irecv_consumed();
}

#else
TEST(NetUnpackGpu, ScattersEveryPieceByteForByte) { GTEST_SKIP() << "built without CUDA"; }
#endif
