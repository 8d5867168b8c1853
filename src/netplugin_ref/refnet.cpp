// The reference plugin's data path: one TCP socket per comm, messages framed by an
// 8-byte length, test() moving the tested request's bytes straight between the socket
// and the caller's buffers (no copies, no threads). test() of an incomplete request
// sleeps in the kernel until its bytes are in or out (one recv of the header and one
// MSG_WAITALL recv of the payload; one sendmsg), each call bounded by
// P2PSCOPE_REFNET_WAIT_US (1 ms): a progress loop costs a few calls per message, not
// one nonblocking recv per kernel wake-up (55-74 per 1 MiB chunk on 64 cores, issue 34).
// A waiting read asks the kernel to wake it once its bytes are in (SO_RCVLOWAT and
// poll), not once per arriving segment (P2PSCOPE_REFNET_RCVLOWAT=0: MSG_WAITALL, as before).
// With P2PSCOPE_REFNET_WAIT_US=0 every call is nonblocking and test() polls.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "netplugin_ref/refnet_dmabuf.hpp"
#include "netplugin_ref/refnet_state.hpp"

namespace refnet {
using namespace detail;
namespace {

// Synchronous copies between a CUDA buffer and a (pageable) host one, in the
// buffer's context: the calling thread may never have touched CUDA.
bool cuda_to_host(const Mr* mr, void* host, const void* dev, std::size_t n) {
  if (n == 0) return true;
  if (cu.set_current(mr->ctx) != 0) return false;
  return cu.dtoh(host, reinterpret_cast<unsigned long long>(dev), n) == 0;
}
bool host_to_cuda(const Mr* mr, void* dev, const void* host, std::size_t n) {
  if (n == 0) return true;
  if (cu.set_current(mr->ctx) != 0) return false;
  return cu.htod(reinterpret_cast<unsigned long long>(dev), host, n) == 0;
}

Result fail(Comm* c, Result r) {
  c->err = r;
  return r;
}

// The page a message byte lands in, within its bounce slot: adjacent pages swapped,
// so that only a kernel that follows the scatter list gets the bytes right.
std::size_t page_slot(std::size_t page, std::size_t npages) {
  std::size_t q = page ^ 1u;
  return q < npages ? q : page;
}

std::size_t iov_bytes(const iovec* iov, int n) {
  std::size_t t = 0;
  for (int i = 0; i < n; ++i) t += iov[i].iov_len;
  return t;
}

ssize_t recv_iov(int fd, iovec* iov, int n, int flags) {
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = static_cast<std::size_t>(n);
  return ::recvmsg(fd, &mh, flags);
}

// A waiting read that the kernel wakes once, when all the bytes asked for are in. A
// reader asleep in recv() is woken at SO_RCVLOWAT bytes, 1 by default: once per arriving
// segment (5-6 times per 1 MiB on loopback), each wake-up and each small read's window
// update paid by the sender's thread (issue 34: a quarter of its CPU). SO_RCVLOWAT set to
// the bytes still missing does it, but only across calls: inside one MSG_WAITALL recv
// the kernel keeps comparing new bytes with the value set when it began, so a reader
// woken early (memory pressure) would sleep out its wait for bytes that already came.
// Hence: take what is there, set the mark to the rest, poll (woken at the mark), take it.
// Reads of at most kMarkedMinBytes (headers, small messages: one segment brings them)
// stay one MSG_WAITALL recv with the mark at 1: the three calls cost a ping 2 us more.
constexpr std::size_t kMarkedMinBytes = 4096;

void set_mark(Comm* c, std::size_t bytes) {
  // The kernel caps the mark (half of tcp_rmem's max) and grows the receive buffer to fit it.
  const int mark = static_cast<int>(std::min<std::size_t>(bytes, INT_MAX));
  if (mark != c->lowat && ::setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof mark) == 0) c->lowat = mark;
}

ssize_t pull_marked(Comm* c, iovec* iov, int n) {
  const std::size_t asked = iov_bytes(iov, n);
  ssize_t k = recv_iov(c->fd, iov, n, MSG_DONTWAIT);
  if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return k;
  std::size_t got = k > 0 ? static_cast<std::size_t>(k) : 0;
  if (got == asked) return k;
  set_mark(c, asked - got);
  pollfd pfd{c->fd, POLLIN, 0};
  const timespec limit{static_cast<time_t>(g.wait_us / 1000000), static_cast<long>(g.wait_us % 1000000) * 1000};
  if (::ppoll(&pfd, 1, &limit, nullptr) <= 0) {
    if (got > 0) return static_cast<ssize_t>(got);
    errno = EAGAIN;  // the wait ran out with nothing in
    return -1;
  }
  int i = 0;  // past the bytes already taken
  for (std::size_t skip = got; skip > 0 && i < n; ++i) {
    if (skip < iov[i].iov_len) {
      iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + skip;
      iov[i].iov_len -= skip;
      break;
    }
    skip -= iov[i].iov_len;
  }
  k = recv_iov(c->fd, iov + i, n - i, MSG_DONTWAIT);
  if (k > 0) return static_cast<ssize_t>(got + static_cast<std::size_t>(k));
  if (got > 0) return static_cast<ssize_t>(got);  // an error or EOF shows on the next call
  return k;
}

// recvmsg on the comm's socket, served first from the carry (one source per call).
// `wait`: sleep in the kernel until every byte asked for is in, at most g.wait_us
// (pull_marked; MSG_WAITALL with P2PSCOPE_REFNET_RCVLOWAT=0); else nonblocking.
ssize_t pull(Comm* c, iovec* iov, int n, bool wait) {
  if (c->carry_off < c->carry.size()) {
    std::size_t got = 0;
    for (int i = 0; i < n && c->carry_off < c->carry.size(); ++i) {
      const std::size_t m = std::min(c->carry.size() - c->carry_off, iov[i].iov_len);
      std::memcpy(iov[i].iov_base, c->carry.data() + c->carry_off, m);
      c->carry_off += m;
      got += m;
      if (m < iov[i].iov_len) break;
    }
    if (c->carry_off == c->carry.size()) {
      c->carry.clear();
      c->carry_off = 0;
    }
    return static_cast<ssize_t>(got);
  }
  if (wait && g.rcvlowat) {
    if (iov_bytes(iov, n) > kMarkedMinBytes) return pull_marked(c, iov, n);
    set_mark(c, 1);  // a mark a payload left would hold a small read past its bytes
  }
  return recv_iov(c->fd, iov, n, wait ? MSG_WAITALL : MSG_DONTWAIT);
}

// The steps of progress() below return whether it goes on with the next request; when
// one returns false, progress() returns c->err: kSuccess where the socket would block or
// a fault limit was reached, the error where fail() recorded one.

// Whether an injected fault (P2PSCOPE_REFNET_FAIL/DIE_AFTER_BYTES) fires now; else
// `limit` becomes the bytes this comm may still move before it does.
bool fault_fires(Comm* c, const Req& r, std::uint64_t& limit) {
  if (!c->faulty()) return false;
  const std::uint64_t stop = std::min(g.fail_after, g.die_after);
  if (stop == kOff) return false;
  if (c->moved < stop) {
    limit = stop - c->moved;
    return false;
  }
  if (g.die_after != kOff && c->moved >= g.die_after) {
    WARN("refnet: comm dies after %llu bytes (P2PSCOPE_REFNET_DIE_AFTER_BYTES): closing its socket",
         (unsigned long long)c->moved);
    ::shutdown(c->fd, SHUT_RDWR);
    ::close(c->fd);
    c->fd = -1;
    fail(c, abi::kSystemError);
    return true;
  }
  WARN("refnet: injected error after %llu bytes (P2PSCOPE_REFNET_FAIL_AFTER_BYTES), request #%llu",
       (unsigned long long)c->moved, (unsigned long long)r.seq);
  fail(c, abi::kSystemError);
  return true;
}

// Every posted send in one sendmsg (headers and payloads): small chunks cost one system
// call per window, not one per chunk. `wait`: only the requests up to the tested one
// (`upto`), in one sendmsg that sleeps until the socket took them (at most g.wait_us).
bool send_window(Comm* c, const Req& r, std::uint64_t limit, bool wait, std::uint64_t upto) {
  iovec iov[kMaxRequests * 2];
  int n = 0;
  std::uint64_t budget = limit;
  std::size_t asked = 0;
  for (std::uint64_t q = c->active; q < c->tail && (!wait || q <= upto); ++q) {
    Req& x = c->reqs[q % kMaxRequests];
    if (x.hdr_done < 8) {
      iov[n++] = {reinterpret_cast<char*>(&x.hdr) + x.hdr_done, 8 - x.hdr_done};
      asked += 8 - x.hdr_done;
    }
    const std::size_t want = std::min<std::uint64_t>(x.total - x.done, budget);
    if (want) {
      iov[n++] = {x.data + x.done, want};
      asked += want;
      budget -= want;
    }
    if (x.done + want < x.total) break;  // a fault limit ends the batch mid-request
  }
  if (asked == 0) return false;  // limited to zero: the fault fires on the next call
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = static_cast<std::size_t>(n);
  ssize_t k = ::sendmsg(c->fd, &mh, wait ? MSG_NOSIGNAL : MSG_DONTWAIT | MSG_NOSIGNAL);
  if (k < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
    if (g.send_stalls && (errno == EPIPE || errno == ECONNRESET)) return false;  // never done, never failed
    WARN("refnet: send on device %d failed after %llu bytes, request #%llu: %s (the peer closed?)", c->dev,
         (unsigned long long)c->moved, (unsigned long long)r.seq, std::strerror(errno));
    fail(c, abi::kRemoteError);
    return false;
  }
  std::size_t got = static_cast<std::size_t>(k);
  for (std::uint64_t q = c->active; got > 0 && q < c->tail; ++q) {
    Req& x = c->reqs[q % kMaxRequests];
    const std::size_t h = std::min(got, 8 - x.hdr_done);
    x.hdr_done += h;
    got -= h;
    const std::size_t b = std::min(got, x.total - x.done);
    x.done += b;
    got -= b;
    c->moved += b;
  }
  while (c->active < c->tail) {
    Req& x = c->reqs[c->active % kMaxRequests];
    if (x.hdr_done < 8 || x.done < x.total) break;
    x.complete = true;
    ++c->active;
  }
  return static_cast<std::size_t>(k) >= asked;  // fewer bytes taken: the socket is full
}

// Reads (the rest of) a message's 8-byte header, and its payload in the same call when
// the last message filled its receive (nonblocking only: a waiting read of a shorter
// message would wait for the next one). The recvmsg result; `asked` the bytes asked
// for; c->err set when the message is larger than the posted receive.
ssize_t recv_header(Comm* c, Req& r, bool wait, std::size_t& asked) {
  iovec iov[2];
  int n = 0;
  iov[n++] = {reinterpret_cast<char*>(&r.hdr) + r.hdr_done, 8 - r.hdr_done};
  const bool both = !wait && c->exact && !c->meta && !c->faulty() && r.hdr_done == 0 && r.posted > 0;
  if (both) iov[n++] = {r.data, r.posted};
  asked = iov_bytes(iov, n);
  const ssize_t k = pull(c, iov, n, wait);
  if (k <= 0) return k;
  std::size_t got = static_cast<std::size_t>(k);
  const std::size_t h = std::min(got, 8 - r.hdr_done);
  r.hdr_done += h;
  got -= h;
  if (r.hdr_done == 8) {
    r.total = r.hdr;
    if (r.total > r.posted) {
      WARN("refnet: message of %llu bytes is larger than the posted receive of %llu (request #%llu)",
           (unsigned long long)r.total, (unsigned long long)r.posted, (unsigned long long)r.seq);
      fail(c, abi::kInvalidUsage);
      return k;
    }
    if (got > r.total) {  // a shorter message: the rest is the next one's
      c->carry.insert(c->carry.begin() + static_cast<std::ptrdiff_t>(c->carry_off), r.data + r.total, r.data + got);
      got = r.total;
    }
    r.done = got;
    c->moved += got;
  }
  return k;
}

// Reads payload bytes, at most `limit`; nullopt when the fault limit stops the message.
std::optional<ssize_t> recv_payload(Comm* c, Req& r, std::uint64_t limit, bool wait, std::size_t& asked) {
  const std::size_t want = std::min<std::uint64_t>(r.total - r.done, limit);
  if (want == 0 && r.done < r.total) return std::nullopt;
  ssize_t k;
  asked = want;
  if (c->meta) {
    // UNPACK: pages of this message go to the slot's bounce area, out of order.
    const std::size_t slot = r.seq % abi::kUnpackQueueDepth;
    char* base = c->bounce + slot * kUnpackSliceBytes;
    const std::size_t npages = (r.total + kPageBytes - 1) / kPageBytes;
    iovec iov[IOV_MAX];
    int n = 0;
    std::size_t off = r.done, left = want;
    while (left && n < IOV_MAX) {
      std::size_t page = off / kPageBytes, in = off % kPageBytes;
      std::size_t len = std::min<std::size_t>(kPageBytes - in, left);
      iov[n++] = {base + page_slot(page, npages) * kPageBytes + in, len};
      off += len;
      left -= len;
    }
    asked = iov_bytes(iov, n);
    k = n ? pull(c, iov, n, wait) : 0;
  } else {
    iovec iov{r.data + r.done, want};
    k = want ? pull(c, &iov, 1, wait) : 0;
  }
  if (k > 0) {
    r.done += static_cast<std::size_t>(k);
    c->moved += static_cast<std::uint64_t>(k);
  }
  if (want == 0) k = 1, asked = 1;  // an empty message completes without a read
  return k;
}

// A whole message is in: copy it to CUDA memory, or describe its pages for the unpack
// kernel, and retire the request.
bool complete_receive(Comm* c, Req& r) {
  c->exact = r.total == r.posted;
  if (r.cuda_mr && !host_to_cuda(r.cuda_mr, r.user, r.data, r.total)) {
    WARN("refnet: copying %llu received bytes to CUDA memory %p failed", (unsigned long long)r.total,
         static_cast<void*>(r.user));
    fail(c, abi::kUnhandledCudaError);
    return false;
  }
  r.complete = true;
  if (c->meta) {
    const std::size_t slot = r.seq % abi::kUnpackQueueDepth;
    const std::size_t npages = (r.total + kPageBytes - 1) / kPageBytes;
    for (std::size_t p = 0; p < npages; ++p) {
      abi::UnpackMeta& m = c->meta->mem[slot][p];
      m.src_off = static_cast<std::uint32_t>(slot * kUnpackSliceBytes + page_slot(p, npages) * kPageBytes);
      m.len = static_cast<std::uint32_t>(std::min<std::size_t>(kPageBytes, r.total - p * kPageBytes));
      m.dst_off = p * kPageBytes;
    }
    c->meta->cnt[slot] = npages;
  }
  ++c->active;
  return true;
}

bool receive_step(Comm* c, Req& r, std::uint64_t limit, bool wait) {
  ssize_t k;
  std::size_t asked = 0;
  if (r.hdr_done < 8) {
    k = recv_header(c, r, wait, asked);
    if (c->err != abi::kSuccess) return false;
  } else {
    const std::optional<ssize_t> got = recv_payload(c, r, limit, wait, asked);
    if (!got) return false;
    k = *got;
  }
  if (k == 0) {
    WARN("refnet: connection closed by the peer after %llu bytes on device %d, request #%llu (%llu of %llu "
         "bytes received)", (unsigned long long)c->moved, c->dev, (unsigned long long)r.seq,
         (unsigned long long)r.done, (unsigned long long)r.total);
    fail(c, abi::kRemoteError);
    return false;
  }
  if (k < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
    WARN("refnet: recv on device %d failed after %llu bytes: %s", c->dev, (unsigned long long)c->moved,
         std::strerror(errno));
    fail(c, abi::kRemoteError);
    return false;
  }
  if (r.hdr_done == 8 && r.done == r.total) return complete_receive(c, r);
  return !wait || static_cast<std::size_t>(k) >= asked;  // a waiting read cut short: its time ran out
}

// Move bytes of the oldest incomplete request(s) until the socket would block; with
// `wait`, only until request #upto is complete, sleeping in each socket call (at most
// g.wait_us each; a call whose time ran out ends the pass).
Result progress(Comm* c, bool wait = false, std::uint64_t upto = 0) {
  if (c->err != abi::kSuccess) return c->err;
  while (c->active < c->tail && (!wait || c->active <= upto)) {
    Req& r = c->reqs[c->active % kMaxRequests];
    std::uint64_t limit = SIZE_MAX;  // bytes this comm may still move before a fault
    if (fault_fires(c, r, limit)) break;
    if (!(c->send ? send_window(c, r, limit, wait, upto) : receive_step(c, r, limit, wait))) break;
  }
  return c->err;  // kSuccess unless a step failed the comm
}

// P2PSCOPE_REFNET_MAX_REQUESTS: a post past that many outstanding fails, as plugins
// with a fixed request pool do (NCCL's socket transport, google/nccl-fastsocket).
bool out_of_requests(const Comm* c) {
  if (!g.max_requests || c->tail - c->head < g.max_requests) return false;
  WARN("refnet: unable to allocate requests: %llu outstanding on this comm (P2PSCOPE_REFNET_MAX_REQUESTS)",
       static_cast<unsigned long long>(c->tail - c->head));
  return true;
}

// Post a request: NULL when the window is full or a NULL fault is armed.
Req* post(Comm* c, char* data, std::size_t size) {
  long long left = g_null_left.load();
  while (left != 0) {
    if (left < 0) return nullptr;
    if (g_null_left.compare_exchange_weak(left, left - 1)) return nullptr;
  }
  const std::uint64_t window = c->meta ? abi::kUnpackQueueDepth : kMaxRequests;
  if (c->tail - c->head >= window) return nullptr;
  Req& r = c->reqs[c->tail % kMaxRequests];
  r = Req{};
  r.comm = c;
  r.seq = c->tail++;
  r.data = data;
  r.posted = size;
  r.retired = false;
  if (c->send) {
    r.total = size;
    r.hdr = size;
  }
  return &r;
}

void retire(Comm* c, Req* r) {
  r->retired = true;
  while (c->head < c->tail && c->reqs[c->head % kMaxRequests].retired) ++c->head;
}

}  // namespace

Result reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle) {
  auto* c = static_cast<Comm*>(comm);
  if (type == 0x2 && g.cuda) {
    void* ctx = nullptr;
    if (cu.ptr_attr(&ctx, kCuPointerAttributeContext, reinterpret_cast<unsigned long long>(data)) != 0 || !ctx) {
      WARN("refnet: regMr: %p is not CUDA device memory", data);
      return abi::kInvalidArgument;
    }
    c->mrs.push_back(new Mr{data, size, true, ctx});
    *mhandle = c->mrs.back();
    return abi::kSuccess;
  }
  if (type != 0x1) {
    WARN("refnet: regMr of memory type %d: this plugin registers host memory only (NCCL_PTR_HOST%s)", type,
         g.cuda ? "|NCCL_PTR_CUDA" : "; P2PSCOPE_REFNET_CUDA=1 adds CUDA");
    return abi::kInvalidArgument;
  }
  c->mrs.push_back(new Mr{data, size});
  *mhandle = c->mrs.back();
  return abi::kSuccess;
}

namespace {
std::atomic<unsigned long long> g_dmabuf_regs{0};
}  // namespace

unsigned long long dmabuf_registrations() { return g_dmabuf_regs.load(); }

// As a DMA-BUF plugin would (ibv_reg_dmabuf_mr takes the fd, offset and size): the fd
// must be a dma-buf covering [offset, offset + size). The bytes then move as regMr's
// would (CUDA memory staged through host buffers); the fd is not kept: NCCL closes it
// once this returns.
Result reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                     void** mhandle) {
  if (!g.dmabuf) {
    WARN("refnet: regMrDmaBuf called, but this plugin does not advertise NCCL_PTR_DMABUF (set "
         "P2PSCOPE_REFNET_DMABUF=1 with libcuda.so.1 present)");
    return abi::kInvalidUsage;
  }
  if (const std::string why = check_dmabuf_fd(fd, offset, size); !why.empty()) {
    WARN("refnet: regMrDmaBuf(%zu bytes at %p, offset %llu): fd %d %s", size, data, (unsigned long long)offset, fd,
         why.c_str());
    return abi::kInvalidArgument;
  }
  const Result r = reg_mr(comm, data, size, type, mhandle);
  if (r == abi::kSuccess) {
    g_dmabuf_regs.fetch_add(1);
    INFO("refnet: regMrDmaBuf of %zu bytes at %p through dma-buf fd %d (offset %llu)", size, data, fd,
         (unsigned long long)offset);
  }
  return r;
}

Result dereg_mr(void* comm, void* mhandle) {
  auto* c = static_cast<Comm*>(comm);
  auto it = std::find(c->mrs.begin(), c->mrs.end(), static_cast<Mr*>(mhandle));
  if (it == c->mrs.end()) {
    WARN("refnet: deregMr of a handle this comm did not register");
    return abi::kInvalidArgument;
  }
  c->mrs.erase(it);
  delete static_cast<Mr*>(mhandle);
  return abi::kSuccess;
}

Result isend(void* send_comm, void* data, std::size_t size, int, void* mhandle, void** request) {
  auto* c = static_cast<Comm*>(send_comm);
  if (c->err != abi::kSuccess) return c->err;
  const Mr* mr = static_cast<const Mr*>(mhandle);
  if (out_of_requests(c)) return abi::kInternalError;
  *request = post(c, static_cast<char*>(data), size);
  if (*request && mr && mr->cuda) {
    // Stage the GPU bytes now: the send then runs from host memory like any other.
    Req* r = static_cast<Req*>(*request);
    std::vector<char>& st = c->stage[r->seq % kMaxRequests];
    if (st.size() < size) st.resize(size);
    if (!cuda_to_host(mr, st.data(), data, size)) {
      WARN("refnet: copying %zu bytes from CUDA memory %p failed", size, data);
      return fail(c, abi::kUnhandledCudaError);
    }
    r->data = st.data();
  }
  // Start moving bytes now (latency); an error stays on the comm for test() to report.
  if (*request && c->active + 1 == c->tail) progress(c);
  return abi::kSuccess;
}

Result irecv(void* recv_comm, int n, void** data, const std::size_t* sizes, int*, void** mhandles, void** request) {
  auto* c = static_cast<Comm*>(recv_comm);
  if (c->err != abi::kSuccess) return c->err;
  if (n != 1) {
    WARN("refnet: irecv with n=%d: this plugin takes one buffer per receive (maxRecvs 1)", n);
    return abi::kInvalidUsage;
  }
  if (c->meta && sizes[0] > kUnpackSliceBytes) {
    WARN("refnet: UNPACK receive of %zu bytes exceeds the %zu-byte slice", sizes[0], kUnpackSliceBytes);
    return abi::kInvalidUsage;
  }
  if (out_of_requests(c)) return abi::kInternalError;
  *request = post(c, static_cast<char*>(data[0]), sizes[0]);
  const Mr* mr = mhandles ? static_cast<const Mr*>(mhandles[0]) : nullptr;
  if (*request && mr && mr->cuda && !c->meta) {
    Req* r = static_cast<Req*>(*request);
    std::vector<char>& st = c->stage[r->seq % kMaxRequests];
    if (st.size() < sizes[0]) st.resize(sizes[0]);
    r->user = r->data;
    r->data = st.data();
    r->cuda_mr = mr;
  }
  return abi::kSuccess;
}

Result iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;  // host memory: nothing to flush
  return abi::kSuccess;
}

Result test(void* request, int* done, int* size) {
  auto* r = static_cast<Req*>(request);
  Comm* c = r->comm;
  *done = 0;
  if (g.test_delay_us && !c->send) ::usleep(static_cast<useconds_t>(g.test_delay_us));
  // Waiting sockets: only an incomplete request moves bytes, and its test() sleeps in
  // the kernel for them; polling sockets: every test() moves what the socket has.
  Result res = g.wait_us ? (r->complete ? c->err : progress(c, true, r->seq)) : progress(c);
  if (res != abi::kSuccess) return res;
  // P2PSCOPE_REFNET_EOF_FAILS: as plugins that read their socket until EAGAIN (NCCL's
  // socket transport, google/nccl-fastsocket), the peer's close is an error even when
  // every posted receive has its bytes.
  char b = 0;
  if (g.eof_fails && !c->send && c->active == c->tail && c->carry.empty() &&
      ::recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
    WARN("refnet: connection closed by the peer (P2PSCOPE_REFNET_EOF_FAILS), request #%llu",
         static_cast<unsigned long long>(r->seq));
    return fail(c, abi::kRemoteError);
  }
  if (!r->complete) return abi::kSuccess;
  *done = 1;
  if (size && !(g.size_unset && !c->send)) *size = static_cast<int>(std::min<std::size_t>(r->total, INT_MAX)) - (g.size_short && !c->send && r->total > 0);
  if (!(c->meta && !c->send)) retire(c, r);  // UNPACK receives retire at irecvConsumed
  return abi::kSuccess;
}

Result irecv_consumed(void* recv_comm, int, void* request) {
  auto* c = static_cast<Comm*>(recv_comm);
  auto* r = static_cast<Req*>(request);
  if (!c->meta) return abi::kSuccess;
  if (!r->complete || r->seq != c->consumed) {
    WARN("refnet: irecvConsumed(request #%llu) out of order (next is #%llu)", (unsigned long long)r->seq,
         (unsigned long long)c->consumed);
    return abi::kInvalidUsage;
  }
  ++c->consumed;
  c->udh->head = c->consumed;
  retire(c, r);
  return abi::kSuccess;
}

Result get_device_mr(void*, void*, void** dptr) {
  *dptr = nullptr;
  return abi::kSuccess;
}

namespace {
void close_comm(Comm* c) {
  if (c->fd >= 0) ::close(c->fd);
  if (c->bounce) ::munmap(c->bounce, kUnpackSliceBytes * abi::kUnpackQueueDepth);
  delete c->meta;
  delete c->udh;
  for (Mr* m : c->mrs) delete m;
  delete c;
}
}  // namespace

Result close_send(void* send_comm) {
  close_comm(static_cast<Comm*>(send_comm));
  return abi::kSuccess;
}

Result close_recv(void* recv_comm) {
  close_comm(static_cast<Comm*>(recv_comm));
  return abi::kSuccess;
}

Result close_listen(void* listen_comm) {
  auto* l = static_cast<Listen*>(listen_comm);
  if (l->pending_fd >= 0) ::close(l->pending_fd);
  ::close(l->fd);
  delete l;
  return abi::kSuccess;
}

}  // namespace refnet
