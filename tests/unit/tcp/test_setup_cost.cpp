// Host-memory runs hold a ring of chunks per socket (one on sockets, which copy in
// send(); the window on a plugin, whose isend reads until done), not the whole message
// on each side (that cost 10 ms per MiB in page faults and memset before the first
// byte moved); --verify keeps a whole source and the output says what set-up cost.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>

#include "p2pscope/tcp.hpp"
#include "support/child.hpp"

using namespace p2pscope::tcp;

namespace {

Params host_run(std::uint64_t size) {
  Params p;
  p.size_bytes = size;
  p.chunk_bytes = 1u << 20;
  p.window = 4;
  p.channels = 2;
  p.iters = 1;
  p.warmup = 0;
  p.timeout_s = 20;
  p.slot_memory_bytes = 0;  // a whole chunk of memory per slot (the fold: test_slot_memory.cpp)
  return p;
}

}  // namespace

TEST(TcpSetup, WithoutVerifyBothSidesHoldARingNotTheMessage) {
  const Params p = host_run(64u << 20);
  const Results r = run_loopback(p);
  const std::uint64_t ring = 2 * 1 * (1u << 20);  // channels x one slot x chunk (one socket each)
  EXPECT_EQ(r.client.buffer_bytes, ring);         // the client only sends: a source ring
  EXPECT_EQ(r.server.buffer_bytes, ring);         // the server only receives: a destination ring
  EXPECT_NE(r.client.buffer_layout.find("source ring of 1 x 1 MiB per socket"), std::string::npos) << r.client.buffer_layout;
  EXPECT_NE(r.server.buffer_layout.find("destination ring"), std::string::npos) << r.server.buffer_layout;
  std::uint64_t moved = 0;
  for (const auto& c : r.server.channels) moved += c.bytes;
  EXPECT_EQ(moved, p.size_bytes);
  EXPECT_GT(r.client.rounds_s, 0);
  EXPECT_GE(r.client.setup_s, 0);
}

TEST(TcpSetup, RingsKeepEveryByteInPlaceWithManySocketsBothWays) {
  // Received chunks are checked one by one: the destination is a ring even with --verify.
  Params p = host_run(24u << 20);
  p.mode = Mode::bidir;
  p.sockets_per_channel = 3;
  p.window = 2;
  p.chunk_bytes = 512u << 10;
  p.verify = true;
  p.iters = 2;
  p.warmup = 1;
  const Results r = run_loopback(p);
  EXPECT_EQ(r.server.verified_bytes, 3 * p.size_bytes);
  EXPECT_EQ(r.client.verified_bytes, 3 * p.size_bytes);
  const std::uint64_t ring = 2ull * 3 * 1 * (512u << 10);  // channels x sockets x one slot x chunk
  EXPECT_EQ(r.client.buffer_bytes, p.size_bytes + ring);  // whole --verify source, destination ring
}

TEST(TcpSetup, VerifyKeepsAWholeSourceAndTheTextSaysTheSetupCost) {
  Params p = host_run(8u << 20);
  p.verify = true;
  const Results r = run_loopback(p);
  EXPECT_EQ(r.client.buffer_bytes, p.size_bytes);
  EXPECT_NE(r.client.buffer_layout.find("source whole message (--verify"), std::string::npos) << r.client.buffer_layout;
  const std::string text = format_text(r);
  EXPECT_NE(text.find("client setup: "), std::string::npos) << text;
  EXPECT_NE(text.find("8 MiB of data buffers"), std::string::npos) << text;
  const Results back{r.params, side_from_json(to_json(r.client)), side_from_json(to_json(r.server))};
  EXPECT_EQ(back.client.buffer_bytes, r.client.buffer_bytes);
  EXPECT_DOUBLE_EQ(back.client.setup_s, r.client.setup_s);
  EXPECT_EQ(back.server.buffer_layout, r.server.buffer_layout);
}

// The fact the issue measured, in a child process: peak memory of a 256 MiB loopback
// run. Whole-message buffers on both sides were 4 x 256 MiB resident.
TEST(TcpSetup, PeakMemoryOfA256MiBLoopbackRunIsFarBelowTheMessage) {
  if (!std::filesystem::exists(P2PSCOPE_BINARY)) GTEST_SKIP() << "p2pscope binary not built (make build)";
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory and quarantine inflate RSS: checked in the normal build";
#endif
  const pid_t pid = p2pscope::test::spawn(
      {"bench", "tcp", "--loopback", "--size", "256M", "--channels", "2", "--iters", "1", "--warmup", "0"});
  int status = 0;
  rusage ru{};
  ASSERT_EQ(wait4(pid, &status, 0, &ru), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  const double peak_mib = static_cast<double>(ru.ru_maxrss) / 1024;  // ru_maxrss is in KiB
  EXPECT_LT(peak_mib, 128) << "peak RSS " << peak_mib << " MiB for a 256 MiB message";
}
