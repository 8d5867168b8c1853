// The reference plugin's setup: configuration from the environment, devices (one
// per interface), and connection establishment that never blocks (NULL comm = later).
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
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
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "netplugin_ref/refnet_state.hpp"

namespace refnet {
namespace detail {
Config g;
std::atomic<long long> g_null_left{0};
Cuda cu;

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

}  // namespace detail

using namespace detail;
namespace {

std::uint64_t env_u64(const char* name, std::uint64_t dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  return std::strtoull(v, nullptr, 0);
}


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

// A comm's socket once it is connected: blocking, each call bounded by g.wait_us, so
// that test() sleeps in one recv/send for the tested request (MSG_WAITALL) instead of
// polling. Calls that must not wait (isend's first push, the EOF peek) pass
// MSG_DONTWAIT. Without a wait the socket stays nonblocking.
bool make_waiting(int fd) {
  if (g.wait_us == 0) return true;
  const int fl = ::fcntl(fd, F_GETFL);
  timeval tv{static_cast<time_t>(g.wait_us / 1000000), static_cast<suseconds_t>(g.wait_us % 1000000)};
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    WARN("refnet: making a comm's socket wait %llu us per call: %s", (unsigned long long)g.wait_us,
         std::strerror(errno));
    return false;
  }
  return true;
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
  const bool want_dmabuf = env_u64("P2PSCOPE_REFNET_DMABUF", 0) != 0;
  if (env_u64("P2PSCOPE_REFNET_CUDA", 0) || want_dmabuf) {
    g.cuda = load_cuda();
    if (!g.cuda)
      WARN("refnet: P2PSCOPE_REFNET_%s=1 but libcuda.so.1 could not be loaded: host memory only",
           want_dmabuf ? "DMABUF" : "CUDA");
    g.dmabuf = g.cuda && want_dmabuf;
  }
  g.max_requests = env_u64("P2PSCOPE_REFNET_MAX_REQUESTS", 0);
  g.eof_fails = env_u64("P2PSCOPE_REFNET_EOF_FAILS", 0) != 0;
  g.test_delay_us = env_u64("P2PSCOPE_REFNET_TEST_DELAY_US", 0);
  g.size_short = env_u64("P2PSCOPE_REFNET_SIZE_SHORT", 0) != 0;
  g.size_unset = env_u64("P2PSCOPE_REFNET_SIZE_UNSET", 0) != 0;
  g.send_stalls = env_u64("P2PSCOPE_REFNET_SEND_STALLS", 0) != 0;
  g.wait_us = std::min<std::uint64_t>(env_u64("P2PSCOPE_REFNET_WAIT_US", kDefaultWaitUs), 1000000);
  g.rcvlowat = env_u64("P2PSCOPE_REFNET_RCVLOWAT", 1) != 0;
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
  p->ptr_support = g.dmabuf ? 0x7 : g.cuda ? 0x3 : 0x1;  // host (and CUDA, staged; and DMA-BUF)
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
  Handle h{kMagic, a, 0, 0, 0};
  std::memset(handle, 0, abi::kHandleMaxBytes);
  std::memcpy(handle, &h, sizeof h);
  auto* l = new Listen;
  l->fd = fd;
  l->dev = dev;
  *listen_comm = l;
  return abi::kSuccess;
}

namespace {

// Connects in progress, by ticket: the socket and the address it was opened to.
struct Pending {
  int fd;
  sockaddr_in addr;
};
std::mutex g_pending_mu;
std::map<std::uint64_t, Pending> g_pending;

std::uint64_t new_ticket() {
  static std::mt19937_64 gen{std::random_device{}()};
  std::uint64_t t = 0;
  while (t == 0 || g_pending.count(t)) t = gen();
  return t;
}

// Addresses a connect may name: IPv4, a port, and not the wildcard or broadcast.
bool plausible(const sockaddr_in& a) {
  return a.sin_family == AF_INET && a.sin_port != 0 && a.sin_addr.s_addr != htonl(INADDR_ANY) &&
         a.sin_addr.s_addr != htonl(INADDR_BROADCAST);
}

}  // namespace

Result connect(int dev, void* handle, void** send_comm) {
  *send_comm = nullptr;
  Handle h;
  std::memcpy(&h, handle, sizeof h);
  if (h.magic != kMagic) {
    WARN("refnet: connect: the handle is not one of this plugin's (magic %llx)", (unsigned long long)h.magic);
    return abi::kInvalidArgument;
  }
  if (!plausible(h.addr)) {
    WARN("refnet: connect: the handle names no address a listener of this plugin has (family %d)", int{h.addr.sin_family});
    return abi::kInvalidArgument;
  }
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &h.addr.sin_addr, ip, sizeof ip);
  int fd = -1;
  if (h.stage == 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      WARN("refnet: connect: socket: %s", std::strerror(errno));
      return abi::kSystemError;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&h.addr), sizeof h.addr) != 0 && errno != EINPROGRESS) {
      WARN("refnet: connect to %s:%d: %s", ip, ntohs(h.addr.sin_port), std::strerror(errno));
      ::close(fd);
      return abi::kSystemError;
    }
    std::lock_guard lk(g_pending_mu);
    h.stage = 1;
    h.pending = new_ticket();
    g_pending[h.pending] = {fd, h.addr};
    std::memcpy(handle, &h, sizeof h);
  } else {
    // A handle in progress must be one this process started, to the same address: a
    // forged one (a peer's bytes naming stage 1) would otherwise name any descriptor.
    std::lock_guard lk(g_pending_mu);
    const auto it = g_pending.find(h.pending);
    if (h.stage != 1 || it == g_pending.end() || it->second.addr.sin_addr.s_addr != h.addr.sin_addr.s_addr ||
        it->second.addr.sin_port != h.addr.sin_port) {
      WARN("refnet: connect: a handle in progress (stage %d) that this process did not start: refused", h.stage);
      return abi::kInvalidArgument;
    }
    fd = it->second.fd;
  }
  auto forget = [&](bool close_fd) {
    std::lock_guard lk(g_pending_mu);
    g_pending.erase(h.pending);
    if (close_fd) ::close(fd);
    h.stage = 0;
    h.pending = 0;
    std::memcpy(handle, &h, sizeof h);
  };
  pollfd pfd{fd, POLLOUT, 0};
  if (::poll(&pfd, 1, 0) == 0) return abi::kSuccess;  // not yet: call again
  int err = 0;
  socklen_t el = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
  if (err != 0) {
    WARN("refnet: connect to %s:%d: %s", ip, ntohs(h.addr.sin_port), std::strerror(err));
    forget(true);
    return abi::kSystemError;
  }
  std::uint64_t hello = kMagic;
  if (::send(fd, &hello, sizeof hello, MSG_NOSIGNAL) != sizeof hello) {
    WARN("refnet: hello to %s:%d: %s", ip, ntohs(h.addr.sin_port), std::strerror(errno));
    forget(true);
    return abi::kSystemError;
  }
  forget(false);
  if (!make_waiting(fd)) {
    ::close(fd);
    return abi::kSystemError;
  }
  auto* c = new Comm;
  c->fd = fd;
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
  if (!make_waiting(c->fd)) {
    ::close(c->fd);
    delete c;
    return abi::kSystemError;
  }
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

}  // namespace refnet
