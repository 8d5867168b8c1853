#pragma once
// State shared by the reference plugin's setup (refnet_setup.cpp: init, devices,
// listen/connect/accept) and data path (refnet.cpp: requests, progress, memory).
#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "netplugin_ref/refnet.hpp"

namespace refnet::detail {

inline constexpr std::uint64_t kMagic = 0x5032505352454631ull;  // "P2PSREF1"
inline constexpr std::uint64_t kOff = UINT64_MAX;
inline constexpr std::uint64_t kDefaultWaitUs = 1000;

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
  bool dmabuf = false;  // P2PSCOPE_REFNET_DMABUF=1 (with CUDA): NCCL_PTR_DMABUF advertised

  std::uint64_t max_requests = 0;   // P2PSCOPE_REFNET_MAX_REQUESTS: past it a post fails (0: NULL at the window)
  bool eof_fails = false;           // P2PSCOPE_REFNET_EOF_FAILS: a receive comm whose peer closed fails test()
  std::uint64_t test_delay_us = 0;  // P2PSCOPE_REFNET_TEST_DELAY_US: each test() of a receive comm sleeps first
  bool size_short = false;          // P2PSCOPE_REFNET_SIZE_SHORT: test() of a receive reports a byte less
  bool send_stalls = false;         // P2PSCOPE_REFNET_SEND_STALLS: a send whose peer closed stays not done
  bool size_unset = false;          // P2PSCOPE_REFNET_SIZE_UNSET: test() of a receive leaves *size (Fast Socket)
  // P2PSCOPE_REFNET_WAIT_US: how long one socket call of test() may sleep in the kernel
  // for the tested request (blocking socket, SO_RCVTIMEO/SO_SNDTIMEO); 0: never (every
  // call nonblocking, test() polls, as before issue 34).
  std::uint64_t wait_us = kDefaultWaitUs;
  // P2PSCOPE_REFNET_RCVLOWAT (default 1): a waiting read sets SO_RCVLOWAT to the bytes it
  // still misses and polls; 0: one MSG_WAITALL recv, woken per arriving segment.
  bool rcvlowat = true;
  abi::Logger log = nullptr;
};
extern Config g;  // set by init; read-only while comms exist
extern std::atomic<long long> g_null_left;  // NULL answers left; <0: forever

#define REF_LOG(level, ...) \
  do {                      \
    if (g.log) g.log(level, 16 /*NCCL_NET*/, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define WARN(...) REF_LOG(abi::kLogWarn, __VA_ARGS__)
#define INFO(...) REF_LOG(abi::kLogInfo, __VA_ARGS__)


// The handle NCCL carries between ranks; `stage` and `pending` are connect()'s progress.
// The handle's bytes come from the peer, so they carry no descriptor: `pending` is a
// random ticket that only this process's table (refnet_setup.cpp) turns into the
// socket it is connecting, and a ticket this process did not issue is refused.
struct Handle {
  std::uint64_t magic;
  sockaddr_in addr;
  int stage;  // 0: not started, 1: connecting
  int reserved;
  std::uint64_t pending;  // stage 1: the ticket of the connect in progress
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
};
extern Cuda cu;
inline constexpr int kCuPointerAttributeContext = 1;

struct Mr {
  void* data;
  std::size_t size;
  bool cuda = false;
  void* ctx = nullptr;  // the CUDA context that owns the memory
};


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
  // Receive side: header and payload are read in one call once messages have filled
  // their receives exactly; bytes such a read took past a shorter message wait here.
  std::vector<Mr*> mrs;  // registrations, freed with the comm if not deregistered
  bool exact = false;
  std::vector<char> carry;
  std::size_t carry_off = 0;
  int lowat = 1;  // SO_RCVLOWAT as last set on fd (the kernel's default: 1)
  bool faulty() const { return send ? g.fault_send : g.fault_recv; }
};


bool load_cuda();

}  // namespace refnet::detail
