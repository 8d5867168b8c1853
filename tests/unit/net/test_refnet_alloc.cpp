// Allocations per request on a comm's data path (issue 34: bench net's sender spent more
// CPU per byte than bench tcp's; the engine formatted each isend's and test()'s error
// context, a heap string per call, whether or not the call failed). This file replaces
// the global operator new of test_net with one that counts, per thread, while asked to.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "net_test_util.hpp"

// GCC pairs the replaced new with free() through inlining and warns; they do match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
thread_local bool t_counting = false;
thread_local std::size_t t_allocs = 0;
}  // namespace

// Every unaligned form, so that each new pairs with its delete through malloc / free: the
// plugin allocates with new (std::nothrow), and under ASan a nothrow new left to the
// runtime freed by this delete is an alloc-dealloc mismatch.
void* operator new(std::size_t n) {
  if (t_counting) ++t_allocs;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (t_counting) ++t_allocs;
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

using namespace nettest;

// One thread, a window of 4 chunks each way: the calls of 256 messages allocate a
// little for the engine's request queues (a deque block per dozen requests), not one
// string or more per call.
TEST(NetRefPluginAlloc, RequestsAndTestsAllocateNothingPerCall) {
  Pair p = connect_pair();
  const std::size_t chunk = 64u << 10, window = 4, n = 256;
  std::vector<unsigned char> sbuf(chunk * window, 7), rbuf(chunk * window);
  MemRegion ms = p.send.reg_mr(sbuf.data(), sbuf.size(), MemType::host);
  MemRegion mr = p.recv.reg_mr(rbuf.data(), rbuf.size(), MemType::host);
  std::size_t calls = 0;
  t_allocs = 0;
  t_counting = true;
  for (std::size_t sent = 0, sdone = 0, recvd = 0, rdone = 0; sdone < n || rdone < n;) {
    if (sent < n && sent - sdone < window && p.send.isend(sbuf.data() + (sent % window) * chunk, chunk, ms)) ++sent;
    if (recvd < n && recvd - rdone < window && p.recv.irecv(rbuf.data() + (recvd % window) * chunk, chunk, mr)) ++recvd;
    if (sdone < sent && p.send.test_oldest()) ++sdone;
    if (rdone < recvd && p.recv.test_oldest()) ++rdone;
    calls += 4;
  }
  t_counting = false;
  std::printf("%zu allocations in about %zu calls for %zu messages\n", t_allocs, calls, n);
  EXPECT_LE(t_allocs, n / 4) << "about one per call would be " << calls;
}
