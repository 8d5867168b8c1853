// Fast Socket's listen handle carries its socket and thread counts, which its connect
// copies into the comm and uses as bounds of arrays of 32 sockets and 16 threads, unchecked
// (google/nccl-fastsocket, net_fastsocket.cc): a peer's handle with num_socks 100 made a
// server write past its comm and segfault (issue 43 item 3). bench net range-checks them
// before the plugin sees the handle; other layouts' bytes there are not read as counts.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "transport/net/handle_check.hpp"

using namespace p2pscope::net;

namespace {

NetHandle fastsocket_handle(const char* ip, std::int32_t socks, std::int32_t threads) {
  NetHandle h{};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(5000);
  inet_pton(AF_INET, ip, &a.sin_addr);
  std::memcpy(h.data(), &a, sizeof a);
  std::memcpy(h.data() + 28, &socks, 4);  // after union socketAddress (a sockaddr_in6's 28 bytes)
  std::memcpy(h.data() + 32, &threads, 4);
  return h;
}

HandlePolicy fastsocket_policy() { return {.peer_ip = "10.1.1.2", .vouched = {}, .plugin = "FastSocket"}; }

}  // namespace

TEST(FastSocketHandles, CountsOutsideItsArraysAreRefusedBeforeThePluginSeesThem) {
  const HandlePolicy p = fastsocket_policy();
  EXPECT_EQ(check_peer_handle(fastsocket_handle("10.1.1.2", 8, 2), p), "");
  EXPECT_EQ(check_peer_handle(fastsocket_handle("10.1.1.2", kFastSocketMaxSockets, kFastSocketMaxThreads), p), "");
  struct Case {
    std::int32_t socks, threads;
    const char* said;
  };
  const Case cases[] = {
      {33, 1, "socket count (num_socks) is 33, outside 1-32"},
      {100, 1, "num_socks) is 100"},
      {0, 1, "num_socks) is 0"},
      {-1, 1, "num_socks) is -1"},
      {1 << 30, 1, "num_socks)"},
      {8, 17, "thread count (num_threads) is 17, outside 1-16"},
      {8, 0, "num_threads) is 0"},
      {8, -5, "num_threads) is -5"},
  };
  for (const Case& c : cases) {
    const std::string why = check_peer_handle(fastsocket_handle("10.1.1.2", c.socks, c.threads), p);
    EXPECT_NE(why.find(c.said), std::string::npos) << c.socks << "/" << c.threads << ": " << why;
  }
  // Its address is checked as every handle's is, first.
  EXPECT_NE(check_peer_handle(fastsocket_handle("10.9.9.9", 8, 2), p).find("it names 10.9.9.9:5000"), std::string::npos);
}

TEST(FastSocketHandles, OtherPluginsBytesThereAreNotReadAsCounts) {
  HandlePolicy p = fastsocket_policy();
  p.plugin = "Socket";
  EXPECT_EQ(check_peer_handle(fastsocket_handle("10.1.1.2", 100, 99), p), "");
}
