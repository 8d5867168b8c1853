// The reference plugin's data path: one nonblocking TCP socket per comm, messages
// framed by an 8-byte length, every test() progressing its comm with large
// send/recv calls straight into the caller's buffers (no copies, no threads).
#include "netplugin_ref/refnet.hpp"

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

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <vector>

namespace refnet {
namespace {

constexpr std::uint64_t kMagic = 0x5032505352454631ull;  // "P2PSREF1"
constexpr std::uint64_t kOff = UINT64_MAX;

struct Dev {
  std::string name;
  std::string pci_path;
  sockaddr_in addr{};
  int speed_mbps = 10000;
};

struct Config {
  std::vector<Dev> devs;
  bool unpack = false;
  std::uint64_t fail_after = kOff, die_after = kOff;
  bool fault_send = true, fault_recv = false;
  bool zero_devices = false, init_fail = false;
  bool cuda = false;  // P2PSCOPE_REFNET_CUDA=1 and libcuda.so.1 loaded
  abi::Logger log = nullptr;
};
Config g;  // set by init; read-only while comms exist
std::atomic<long long> g_null_left{0};  // NULL answers left; <0: forever

#define REF_LOG(level, ...) \
  do {                      \
    if (g.log) g.log(level, 16 /*NCCL_NET*/, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define WARN(...) REF_LOG(abi::kLogWarn, __VA_ARGS__)
#define INFO(...) REF_LOG(abi::kLogInfo, __VA_ARGS__)

std::uint64_t env_u64(const char* name, std::uint64_t dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  return std::strtoull(v, nullptr, 0);
}

// The handle NCCL carries between ranks; `pending` is connect()'s progress.
struct Handle {
  std::uint64_t magic;
  sockaddr_in addr;
  int stage;  // 0: not started, 1: connecting
  int fd;
};
static_assert(sizeof(Handle) <= abi::kHandleMaxBytes);

struct Listen {
  int fd = -1;
  int dev = 0;
  int pending_fd = -1;     // accepted, hello not complete
  std::uint64_t hello = 0;
  std::size_t hello_got = 0;
};

// CUDA memory (P2PSCOPE_REFNET_CUDA=1): staged through host buffers with the driver
// API, loaded at run time so that the plugin needs no CUDA to build or for host memory.
struct Cuda {
  void* lib = nullptr;
  int (*ptr_attr)(void* data, int attribute, unsigned long long ptr) = nullptr;  // cuPointerGetAttribute
  int (*set_current)(void* ctx) = nullptr;                                         // cuCtxSetCurrent
  int (*dtoh)(void* dst, unsigned long long src, std::size_t n) = nullptr;        // cuMemcpyDtoH_v2
  int (*htod)(unsigned long long dst, const void* src, std::size_t n) = nullptr;  // cuMemcpyHtoD_v2
} cu;
constexpr int kCuPointerAttributeContext = 1;

bool load_cuda() {
  if (cu.lib) return true;
  cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cu.lib) return false;
  cu.ptr_attr = reinterpret_cast<decltype(cu.ptr_attr)>(dlsym(cu.lib, "cuPointerGetAttribute"));
  cu.set_current = reinterpret_cast<decltype(cu.set_current)>(dlsym(cu.lib, "cuCtxSetCurrent"));
  cu.dtoh = reinterpret_cast<decltype(cu.dtoh)>(dlsym(cu.lib, "cuMemcpyDtoH_v2"));
  cu.htod = reinterpret_cast<decltype(cu.htod)>(dlsym(cu.lib, "cuMemcpyHtoD_v2"));
  return cu.ptr_attr && cu.set_current && cu.dtoh && cu.htod;
}

struct Mr {
  void* data;
  std::size_t size;
  bool cuda = false;
  void* ctx = nullptr;  // the CUDA context that owns the memory
};

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

struct Comm;
struct Req {
  Comm* comm = nullptr;
  std::uint64_t seq = 0;
  char* data = nullptr;
  std::size_t posted = 0;  // bytes posted (send: the message size)
  std::size_t total = 0;   // message size (recv: known once the header arrived)
  std::size_t done = 0;    // payload bytes moved
  std::uint64_t hdr = 0;
  std::size_t hdr_done = 0;
  bool complete = false;
  bool retired = true;
  const Mr* cuda_mr = nullptr;  // CUDA receive: copy staging -> user at completion
  char* user = nullptr;
};

struct Comm {
  int fd = -1;
  bool send = false;
  int dev = 0;
  Req reqs[kMaxRequests];
  std::uint64_t head = 0, tail = 0;  // oldest not retired, next to post
  std::uint64_t active = 0;          // oldest not complete
  std::uint64_t moved = 0;           // payload bytes moved on this comm
  Result err = abi::kSuccess;
  // UNPACK receive side.
  abi::UnpackQueue* meta = nullptr;
  char* bounce = nullptr;
  abi::UnpackDevHandle* udh = nullptr;
  std::uint64_t consumed = 0;
  std::vector<char> stage[kMaxRequests];  // CUDA staging, one per request slot
  bool faulty() const { return send ? g.fault_send : g.fault_recv; }
};

std::string pci_of(const std::string& ifname) {
  char buf[PATH_MAX];
  std::string link = "/sys/class/net/" + ifname + "/device";
  if (!realpath(link.c_str(), buf)) return "";
  return buf;
}

int speed_of(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/speed");
  int s = 0;
  if (in >> s && s > 0) return s;
  return 10000;  // loopback and virtual NICs report none
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

// Move bytes of the oldest incomplete request(s) until the socket would block.
Result progress(Comm* c) {
  if (c->err != abi::kSuccess) return c->err;
  while (c->active < c->tail) {
    Req& r = c->reqs[c->active % kMaxRequests];
    std::uint64_t limit = SIZE_MAX;  // bytes this comm may still move before a fault
    if (c->faulty()) {
      std::uint64_t stop = std::min(g.fail_after, g.die_after);
      if (stop != kOff) {
        if (c->moved >= stop) {
          if (g.die_after != kOff && c->moved >= g.die_after) {
            WARN("refnet: comm dies after %llu bytes (P2PSCOPE_REFNET_DIE_AFTER_BYTES): closing its socket",
                 (unsigned long long)c->moved);
            ::shutdown(c->fd, SHUT_RDWR);
            ::close(c->fd);
            c->fd = -1;
            return fail(c, abi::kSystemError);
          }
          WARN("refnet: injected error after %llu bytes (P2PSCOPE_REFNET_FAIL_AFTER_BYTES), request #%llu",
               (unsigned long long)c->moved, (unsigned long long)r.seq);
          return fail(c, abi::kSystemError);
        }
        limit = stop - c->moved;
      }
    }
    if (c->send) {
      iovec iov[2];
      int n = 0;
      if (r.hdr_done < 8) iov[n++] = {reinterpret_cast<char*>(&r.hdr) + r.hdr_done, 8 - r.hdr_done};
      std::size_t want = std::min<std::uint64_t>(r.total - r.done, limit);
      if (want) iov[n++] = {r.data + r.done, want};
      if (n == 0) break;  // limited to zero: the fault fires on the next call
      msghdr mh{};
      mh.msg_iov = iov;
      mh.msg_iovlen = n;
      ssize_t k = ::sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return abi::kSuccess;
        WARN("refnet: send on device %d failed after %llu bytes, request #%llu: %s (the peer closed?)", c->dev,
             (unsigned long long)c->moved, (unsigned long long)r.seq, std::strerror(errno));
        return fail(c, abi::kRemoteError);
      }
      std::size_t got = static_cast<std::size_t>(k);
      std::size_t h = std::min(got, 8 - r.hdr_done);
      r.hdr_done += h;
      r.done += got - h;
      c->moved += got - h;
    } else {
      ssize_t k;
      if (r.hdr_done < 8) {
        k = ::recv(c->fd, reinterpret_cast<char*>(&r.hdr) + r.hdr_done, 8 - r.hdr_done, MSG_DONTWAIT);
        if (k > 0) {
          r.hdr_done += static_cast<std::size_t>(k);
          if (r.hdr_done == 8) {
            r.total = r.hdr;
            if (r.total > r.posted) {
              WARN("refnet: message of %llu bytes is larger than the posted receive of %llu (request #%llu)",
                   (unsigned long long)r.total, (unsigned long long)r.posted, (unsigned long long)r.seq);
              return fail(c, abi::kInvalidUsage);
            }
          }
          continue;
        }
      } else {
        std::size_t want = std::min<std::uint64_t>(r.total - r.done, limit);
        if (want == 0 && r.done < r.total) break;
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
          k = n ? ::readv(c->fd, iov, n) : 0;
          if (n == 0) k = 0;
        } else {
          k = want ? ::recv(c->fd, r.data + r.done, want, MSG_DONTWAIT) : 0;
        }
        if (k > 0) {
          r.done += static_cast<std::size_t>(k);
          c->moved += static_cast<std::uint64_t>(k);
        }
        if (want == 0) k = 1;  // an empty message completes without a read
      }
      if (k == 0) {
        WARN("refnet: connection closed by the peer after %llu bytes on device %d, request #%llu (%llu of %llu "
             "bytes received)", (unsigned long long)c->moved, c->dev, (unsigned long long)r.seq,
             (unsigned long long)r.done, (unsigned long long)r.total);
        return fail(c, abi::kRemoteError);
      }
      if (k < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return abi::kSuccess;
        WARN("refnet: recv on device %d failed after %llu bytes: %s", c->dev, (unsigned long long)c->moved,
             std::strerror(errno));
        return fail(c, abi::kRemoteError);
      }
    }
    if (r.hdr_done == 8 && r.done == r.total) {
      if (r.cuda_mr && !host_to_cuda(r.cuda_mr, r.user, r.data, r.total)) {
        WARN("refnet: copying %llu received bytes to CUDA memory %p failed", (unsigned long long)r.total,
             static_cast<void*>(r.user));
        return fail(c, abi::kUnhandledCudaError);
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
    }
  }
  return abi::kSuccess;
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

bool ip_of(const std::string& ifname, sockaddr_in* out) {
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return false;
  bool ok = false;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && ifname == i->ifa_name) {
      std::memcpy(out, i->ifa_addr, sizeof(sockaddr_in));
      ok = true;
      break;
    }
  }
  freeifaddrs(ifs);
  return ok;
}

}  // namespace

Result init(abi::Logger log) {
  g = Config{};
  g.log = log;
  if (env_u64("P2PSCOPE_REFNET_INIT_FAIL", 0)) {
    WARN("refnet: init fails as asked (P2PSCOPE_REFNET_INIT_FAIL)");
    return abi::kSystemError;
  }
  g.unpack = env_u64("P2PSCOPE_REFNET_UNPACK", 0) != 0;
  if (env_u64("P2PSCOPE_REFNET_CUDA", 0)) {
    g.cuda = load_cuda();
    if (!g.cuda) WARN("refnet: P2PSCOPE_REFNET_CUDA=1 but libcuda.so.1 could not be loaded: host memory only");
  }
  g.fail_after = env_u64("P2PSCOPE_REFNET_FAIL_AFTER_BYTES", kOff);
  g.die_after = env_u64("P2PSCOPE_REFNET_DIE_AFTER_BYTES", kOff);
  const char* side = std::getenv("P2PSCOPE_REFNET_FAULT_SIDE");
  std::string s = side ? side : "send";
  g.fault_send = s == "send" || s == "both";
  g.fault_recv = s == "recv" || s == "both";
  const char* nr = std::getenv("P2PSCOPE_REFNET_NULL_REQUESTS");
  g_null_left = !nr || !*nr ? 0 : std::string(nr) == "forever" ? -1 : std::strtoll(nr, nullptr, 0);
  g.zero_devices = std::getenv("P2PSCOPE_REFNET_DEVICES") && env_u64("P2PSCOPE_REFNET_DEVICES", 1) == 0;
  const char* ifs = std::getenv("P2PSCOPE_REFNET_IFS");
  std::string list = ifs && *ifs ? ifs : "lo";
  for (std::size_t pos = 0; pos <= list.size();) {
    std::size_t e = list.find(',', pos);
    if (e == std::string::npos) e = list.size();
    Dev d;
    d.name = list.substr(pos, e - pos);
    pos = e + 1;
    if (d.name.empty()) continue;
    if (!ip_of(d.name, &d.addr)) {
      WARN("refnet: interface %s has no IPv4 address: skipped", d.name.c_str());
      continue;
    }
    d.pci_path = pci_of(d.name);
    d.speed_mbps = speed_of(d.name);
    g.devs.push_back(d);
  }
  INFO("refnet: %zu devices, unpack %d", g.devs.size(), (int)g.unpack);
  return abi::kSuccess;
}

Result devices(int* ndev) {
  *ndev = g.zero_devices ? 0 : static_cast<int>(g.devs.size());
  return abi::kSuccess;
}

Result properties(int dev, abi::PropsV11* p) {
  if (dev < 0 || dev >= static_cast<int>(g.devs.size())) return abi::kInvalidArgument;
  const Dev& d = g.devs[static_cast<std::size_t>(dev)];
  *p = abi::PropsV11{};
  p->name = const_cast<char*>(d.name.c_str());
  p->pci_path = d.pci_path.empty() ? nullptr : const_cast<char*>(d.pci_path.c_str());
  p->guid = static_cast<std::uint64_t>(dev);
  p->ptr_support = g.cuda ? 0x3 : 0x1;  // host (and CUDA, staged)
  p->speed = d.speed_mbps;
  p->port = 0;
  p->latency = 0;
  p->max_comms = 65536;
  p->max_recvs = 1;
  p->net_device_type = g.unpack ? abi::kDevUnpack : abi::kDevHost;
  p->net_device_version = g.unpack ? abi::kUnpackDeviceVersion : 0;
  p->vprops.ndevs = 1;
  p->vprops.devs[0] = dev;
  p->max_p2p_bytes = g.unpack ? kUnpackSliceBytes : (1ull << 31);
  p->max_coll_bytes = p->max_p2p_bytes;
  p->max_multi_request_size = 1;
  return abi::kSuccess;
}

Result listen(int dev, void* handle, void** listen_comm) {
  *listen_comm = nullptr;
  if (dev < 0 || dev >= static_cast<int>(g.devs.size())) return abi::kInvalidArgument;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in a = g.devs[static_cast<std::size_t>(dev)].addr;
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    WARN("refnet: listen on %s: %s", g.devs[static_cast<std::size_t>(dev)].name.c_str(), std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return abi::kSystemError;
  }
  Handle h{kMagic, a, 0, -1};
  std::memset(handle, 0, abi::kHandleMaxBytes);
  std::memcpy(handle, &h, sizeof h);
  auto* l = new Listen;
  l->fd = fd;
  l->dev = dev;
  *listen_comm = l;
  return abi::kSuccess;
}

Result connect(int dev, void* handle, void** send_comm) {
  *send_comm = nullptr;
  Handle h;
  std::memcpy(&h, handle, sizeof h);
  if (h.magic != kMagic) {
    WARN("refnet: connect: the handle is not one of this plugin's (magic %llx)", (unsigned long long)h.magic);
    return abi::kInvalidArgument;
  }
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &h.addr.sin_addr, ip, sizeof ip);
  if (h.stage == 0) {
    h.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(h.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(h.fd, reinterpret_cast<sockaddr*>(&h.addr), sizeof h.addr) != 0 && errno != EINPROGRESS) {
      WARN("refnet: connect to %s:%d: %s", ip, ntohs(h.addr.sin_port), std::strerror(errno));
      ::close(h.fd);
      return abi::kSystemError;
    }
    h.stage = 1;
    std::memcpy(handle, &h, sizeof h);
  }
  pollfd pfd{h.fd, POLLOUT, 0};
  if (::poll(&pfd, 1, 0) == 0) return abi::kSuccess;  // not yet: call again
  int err = 0;
  socklen_t el = sizeof err;
  ::getsockopt(h.fd, SOL_SOCKET, SO_ERROR, &err, &el);
  if (err != 0) {
    WARN("refnet: connect to %s:%d: %s", ip, ntohs(h.addr.sin_port), std::strerror(err));
    ::close(h.fd);
    h.stage = 0;
    std::memcpy(handle, &h, sizeof h);
    return abi::kSystemError;
  }
  std::uint64_t hello = kMagic;
  if (::send(h.fd, &hello, sizeof hello, MSG_NOSIGNAL) != sizeof hello) {
    WARN("refnet: hello to %s:%d: %s", ip, ntohs(h.addr.sin_port), std::strerror(errno));
    ::close(h.fd);
    return abi::kSystemError;
  }
  auto* c = new Comm;
  c->fd = h.fd;
  c->send = true;
  c->dev = dev;
  *send_comm = c;
  return abi::kSuccess;
}

Result accept(void* listen_comm, void** recv_comm, abi::DeviceHandle** dev_handle) {
  *recv_comm = nullptr;
  auto* l = static_cast<Listen*>(listen_comm);
  if (l->pending_fd < 0) {
    int fd = ::accept4(l->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return abi::kSuccess;
      WARN("refnet: accept: %s", std::strerror(errno));
      return abi::kSystemError;
    }
    l->pending_fd = fd;
    l->hello_got = 0;
  }
  ssize_t k = ::recv(l->pending_fd, reinterpret_cast<char*>(&l->hello) + l->hello_got, 8 - l->hello_got, 0);
  if (k > 0) l->hello_got += static_cast<std::size_t>(k);
  if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
    WARN("refnet: accept: the peer left before its hello");
    ::close(l->pending_fd);
    l->pending_fd = -1;
    return abi::kRemoteError;
  }
  if (l->hello_got < 8) return abi::kSuccess;
  if (l->hello != kMagic) {
    WARN("refnet: accept: a connection that is not this plugin's (hello %llx)", (unsigned long long)l->hello);
    ::close(l->pending_fd);
    l->pending_fd = -1;
    return abi::kRemoteError;
  }
  auto* c = new Comm;
  c->fd = l->pending_fd;
  c->dev = l->dev;
  l->pending_fd = -1;
  int one = 1;
  ::setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (g.unpack) {
    // As TCPX: a metadata queue the kernel reads and a bounce area, one slot per request.
    std::size_t bytes = kUnpackSliceBytes * abi::kUnpackQueueDepth;
    void* b = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    c->meta = new (std::nothrow) abi::UnpackQueue{};
    if (b == MAP_FAILED || !c->meta) {
      WARN("refnet: no memory for the UNPACK bounce area");
      if (b != MAP_FAILED) ::munmap(b, bytes);
      ::close(c->fd);
      delete c->meta;
      delete c;
      return abi::kSystemError;
    }
    c->bounce = static_cast<char*>(b);
    c->udh = new abi::UnpackDevHandle{c->meta, c->bounce, 0};
    if (dev_handle && *dev_handle) {
      (*dev_handle)->handle = c->udh;
      (*dev_handle)->size = sizeof(abi::UnpackDevHandle);
      (*dev_handle)->needs_proxy_progress = 1;
    }
  }
  *recv_comm = c;
  return abi::kSuccess;
}

Result reg_mr(void*, void* data, std::size_t size, int type, void** mhandle) {
  if (type == 0x2 && g.cuda) {
    void* ctx = nullptr;
    if (cu.ptr_attr(&ctx, kCuPointerAttributeContext, reinterpret_cast<unsigned long long>(data)) != 0 || !ctx) {
      WARN("refnet: regMr: %p is not CUDA device memory", data);
      return abi::kInvalidArgument;
    }
    *mhandle = new Mr{data, size, true, ctx};
    return abi::kSuccess;
  }
  if (type != 0x1) {
    WARN("refnet: regMr of memory type %d: this plugin registers host memory only (NCCL_PTR_HOST%s)", type,
         g.cuda ? "|NCCL_PTR_CUDA" : "; P2PSCOPE_REFNET_CUDA=1 adds CUDA");
    return abi::kInvalidArgument;
  }
  *mhandle = new Mr{data, size};
  return abi::kSuccess;
}

Result dereg_mr(void*, void* mhandle) {
  delete static_cast<Mr*>(mhandle);
  return abi::kSuccess;
}

Result isend(void* send_comm, void* data, std::size_t size, int, void* mhandle, void** request) {
  auto* c = static_cast<Comm*>(send_comm);
  if (c->err != abi::kSuccess) return c->err;
  const Mr* mr = static_cast<const Mr*>(mhandle);
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
  Result res = progress(c);
  if (res != abi::kSuccess) return res;
  if (!r->complete) return abi::kSuccess;
  *done = 1;
  if (size) *size = static_cast<int>(std::min<std::size_t>(r->total, INT_MAX));
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
