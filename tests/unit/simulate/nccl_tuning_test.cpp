// NCCL's TUNING lines read back: the named form (2.19+), the numbered form of older
// versions, the version banner, the most frequent choice per size, and garbage counted,
// never thrown.
#include <gtest/gtest.h>

#include "simulate/nccl_tuning.hpp"

namespace p2pscope::simulate {
namespace {

TEST(NcclTuning, NamedLinesGiveAlgorithmProtocolAndChannels) {
  const std::string log =
      "h:1:1 [0] NCCL INFO NCCL version 2.28.3+cuda13.0\n"
      "h:1:1 [0] NCCL INFO AllReduce: 8388608 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15}\n"
      "h:1:1 [0] NCCL INFO AllReduce: 8388608 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15}\n"
      "h:1:1 [0] NCCL INFO AllReduce: 8388608 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}\n"
      "h:1:1 [0] NCCL INFO AllGather: 1024 Bytes -> Algo RING proto LL channel{Lo..Hi}={2..3}\n";
  const auto t = parse_nccl_tuning(log);
  EXPECT_EQ(t.version, "2.28.3");
  EXPECT_EQ(t.lines, 4u);
  EXPECT_EQ(t.unparsed, 0u);
  const NcclChoice* ar = find_choice(t, "allreduce", 8388608, 4);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->algo, "RING");
  EXPECT_EQ(ar->proto, "LL128");  // two calls of three: the most frequent wins
  EXPECT_EQ(ar->channels, 16);
  EXPECT_EQ(ar->calls, 3);
  // allgather's byte count is one rank's share: S = 4 KiB over 4 ranks is 1 KiB per call.
  const NcclChoice* ag = find_choice(t, "allgather", 4096, 4);
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->proto, "LL");
  EXPECT_EQ(ag->channels, 2);
  EXPECT_EQ(find_choice(t, "allgather", 8192, 4), nullptr);
}

TEST(NcclTuning, NumberedLinesOfOlderVersionsMapToNames) {
  const auto t = parse_nccl_tuning("n:2:2 [0] NCCL INFO AllGather: 37756928 Bytes -> Algo 1 proto 2 time 2860.208008\n");
  const NcclChoice* c = find_choice(t, "allgather", 37756928ull * 4, 4);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->algo, "RING");
  EXPECT_EQ(c->proto, "SIMPLE");
  EXPECT_EQ(c->channels, 0);
}

TEST(NcclTuning, GarbageIsCountedNotThrown) {
  const std::string log = std::string("AllReduce: 99999999999999999999999 Bytes -> Algo RING proto LL\n") +
                          "Bytes -> Algo\n" + std::string(10000, 'x') + " Bytes -> Algo RING\n" + "\x01\xff random\n";
  const auto t = parse_nccl_tuning(log);
  EXPECT_EQ(t.lines, 3u);
  EXPECT_EQ(t.unparsed, 3u);
  EXPECT_TRUE(t.choices.empty());
}

}  // namespace
}  // namespace p2pscope::simulate
