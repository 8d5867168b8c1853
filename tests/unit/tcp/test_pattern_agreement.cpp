// One data pattern across engines: what the TCP engine sends is, byte for byte, the
// stream the host backend and the GPU verify kernel check (p2pscope/pattern.hpp).
// Before, TCP wrote splitmix64(seed ^ k * c) and the backends splitmix64(seed(d) + k):
// a TCP verifier and a GPU verifier disagreed on the same bytes.
#include <gtest/gtest.h>

#include "p2pscope/pattern.hpp"
#include "transport/tcp/memory.hpp"

using namespace p2pscope;

TEST(TcpPattern, SendsTheBytesTheBackendVerifiersCheck) {
  for (int device : {0, 3}) {
    auto b = tcp::Buffer::host(1005, -1);
    tcp::fill_pattern(b, pattern_seed(device));
    for (std::size_t i = 0; i < b.size(); ++i)
      ASSERT_EQ(static_cast<unsigned char>(b.data()[i]), pattern_byte(pattern_seed(device), i)) << "byte " << i;
    EXPECT_EQ(tcp::check_buffer(b, pattern_seed(device)), b.size());
    b.data()[1004] ^= 1;  // the final partial word
    EXPECT_EQ(tcp::check_buffer(b, pattern_seed(device)), 1004u);
  }
}
