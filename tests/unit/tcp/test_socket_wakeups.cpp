// issue 34: bench tcp's receiver, asleep in a 1 MiB read, was woken once per arriving
// segment (3.9-4.1 times per chunk at 16-32 channels on a 64-core host, against 0.6-0.7
// for the plugin path); each wake-up and each small read's window update costs the
// sender's thread on loopback. Socket::recv_all now asks the kernel to wake it once its
// bytes are in (SO_RCVLOWAT and poll). The peer here sends each 64 KiB piece only once the
// receiver sleeps, so the count does not depend on which thread ran ahead. With
// P2PSCOPE_TCP_RCVLOWAT=0 (the old single MSG_WAITALL recv) this test fails: 16 wake-ups
// per message.
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/thread_state.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/tcp/socket.hpp"

namespace p2pscope::tcp {
namespace {

using p2pscope::test::thread_asleep;

// A connected pair over loopback: tx writes, rx reads with a 10 s deadline (a lost
// wake-up costs a slice, 0.25 s, of every read).
struct Pair {
  Listener l{{"127.0.0.1"}, 0};
  Socket tx = Socket::connect_to("127.0.0.1", l.port(), "", 5);
  Socket rx = l.accept(5);
  Pair() { rx.set_timeout(10); }
};

TEST(SocketWakeups, AReadOfAMegabyteWakesOnceNotPerPiece) {
  Pair pair;
  auto& [l, tx, rx] = pair;
  tx.set_nodelay(true);
  const std::size_t msg = 1u << 20, piece = 64u << 10, n = 16;
  std::vector<char> in(msg), out(msg, 7);
  long wakeups = 0;
  double total_ms = 0;
  std::atomic<pid_t> rx_tid{0};
  std::exception_ptr err;
  std::thread reader([&] {
    try {
      rusage r0{}, r1{};
      getrusage(RUSAGE_THREAD, &r0);
      rx_tid = static_cast<pid_t>(::syscall(SYS_gettid));
      const auto t0 = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i < n; ++i) rx.recv_all(in.data(), msg);
      total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      getrusage(RUSAGE_THREAD, &r1);
      wakeups = r1.ru_nvcsw - r0.ru_nvcsw;  // voluntary: the thread slept and was woken
    } catch (...) {
      err = std::current_exception();
    }
  });
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t off = 0; off < msg; off += piece) {
      while (rx_tid == 0 || !thread_asleep(rx_tid)) std::this_thread::yield();
      tx.send_all(out.data() + off, piece);
    }
  reader.join();
  if (err) std::rethrow_exception(err);
  EXPECT_EQ(std::memcmp(in.data(), out.data(), msg), 0);
  EXPECT_LE(static_cast<double>(wakeups), 3.0 * n) << "a wake-up per piece would be " << n * (msg / piece);
  EXPECT_LT(total_ms, 2000.0) << "messages waited out their slices: wake-ups were lost";
}

// The mark goes back to the kernel's 1 byte after the read: a small read after it (a
// chunk header, an ack) must not wait for a megabyte that never comes.
TEST(SocketWakeups, ASmallReadAfterALargeOneIsNotHeldByItsMark) {
  Pair pair;
  auto& [l, tx, rx] = pair;
  std::vector<char> big(1u << 20, 3), got(1u << 20);
  std::thread writer([&] {
    tx.send_all(big.data(), 100u << 10);  // the first part, then the rest later
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    tx.send_all(big.data() + (100u << 10), big.size() - (100u << 10));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const char small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tx.send_all(small, sizeof small);
  });
  rx.recv_all(got.data(), got.size());
  char small[8] = {};
  rx.recv_all(small, sizeof small);  // under a stale mark: a slice late, then read in pieces
  writer.join();
  EXPECT_EQ(small[7], 8);
  int lowat = 0;
  socklen_t len = sizeof lowat;
  ASSERT_EQ(::getsockopt(rx.fd(), SOL_SOCKET, SO_RCVLOWAT, &lowat, &len), 0);
  EXPECT_EQ(lowat, 1);
}

// A read that fails half-way (here: the peer closes after part of a megabyte) puts the
// mark back too: the socket's owner may still read an error frame from it, and a stale
// mark of a megabyte would hold that read until its timeout.
TEST(SocketWakeups, AReadCutShortByThePeerStillPutsTheMarkBack) {
  Pair pair;
  auto& [l, tx, rx] = pair;
  std::vector<char> part(300u << 10, 5), got(1u << 20);
  std::thread writer([&] {
    tx.send_all(part.data(), part.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the reader sleeps under its mark first
    tx.close();
  });
  try {
    rx.recv_all(got.data(), got.size());
    ADD_FAILURE() << "a read of 1 MiB from a peer that sent 300 KiB and closed returned";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("peer closed"), std::string::npos) << e.what();
  }
  writer.join();
  int lowat = 0;
  socklen_t len = sizeof lowat;
  ASSERT_EQ(::getsockopt(rx.fd(), SOL_SOCKET, SO_RCVLOWAT, &lowat, &len), 0);
  EXPECT_EQ(lowat, 1) << "the mark set for the missing bytes stayed after the throw";
}

}  // namespace
}  // namespace p2pscope::tcp
