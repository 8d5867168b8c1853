// libtest-netplugin-hang.so: the reference plugin behind ncclNetPlugin_v8, except that
// one call chosen by P2PSCOPE_TEST_HANG=CALL[:N] (isend, irecv, test, connect, accept,
// closeSend) never returns from its N-th time on (default 1; with P2PSCOPE_TEST_HANG_ONCE=1
// only the N-th): a third-party plugin hung
// inside a call, as Google's Fast Socket did (issue 32 item 1). Signals do not end the
// hang: it sleeps again, as a plugin stuck in a kernel wait or a spin would.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "netplugin_ref/refnet.hpp"

namespace {

using namespace refnet;

void maybe_hang(const char* call) {
  static std::atomic<long> count{0};
  const char* env = std::getenv("P2PSCOPE_TEST_HANG");
  if (!env) return;
  const std::string spec = env;
  const std::string name = spec.substr(0, spec.find(':'));
  if (name != call) return;
  const long nth = spec.find(':') == std::string::npos ? 1 : std::atol(spec.c_str() + spec.find(':') + 1);
  // P2PSCOPE_TEST_HANG_ONCE=1: only the N-th call hangs (a server's later sessions go on).
  const long n = ++count;
  if (n < nth || (std::getenv("P2PSCOPE_TEST_HANG_ONCE") && n != nth)) return;
  for (;;) pause();
}

Result props_v8(int dev, abi::PropsV8* out) {
  abi::PropsV11 p{};
  const Result r = properties(dev, &p);
  if (r != abi::kSuccess) return r;
  *out = abi::PropsV8{p.name, p.pci_path, p.guid, p.ptr_support, p.reg_is_global, p.speed, p.port, p.latency,
                      p.max_comms, p.max_recvs, p.net_device_type, p.net_device_version};
  return abi::kSuccess;
}
Result connect_h(int dev, void* handle, void** sc, abi::DeviceHandle**) {
  maybe_hang("connect");
  return connect(dev, handle, sc);
}
Result accept_h(void* lc, void** rc, abi::DeviceHandle** dh) {
  maybe_hang("accept");
  return accept(lc, rc, dh);
}
Result isend_h(void* c, void* data, int size, int tag, void* mh, void** req) {
  maybe_hang("isend");
  return isend(c, data, static_cast<std::size_t>(size), tag, mh, req);
}
Result irecv_h(void* c, int n, void** data, int* sizes, int* tags, void** mhs, void** req) {
  maybe_hang("irecv");
  std::size_t s = n == 1 ? static_cast<std::size_t>(sizes[0]) : 0;
  return irecv(c, n, data, n == 1 ? &s : nullptr, tags, mhs, req);
}
Result test_h(void* req, int* done, int* size) {
  maybe_hang("test");
  return test(req, done, size);
}
Result close_send_h(void* c) {
  maybe_hang("closeSend");
  return close_send(c);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const abi::NetV8 ncclNetPlugin_v8 = {
    "p2pscope-test-hang", init, devices, props_v8, listen, connect_h, accept_h, reg_mr, reg_mr_dmabuf, dereg_mr,
    isend_h, irecv_h, iflush, test_h, close_send_h, close_recv, close_listen, get_device_mr, irecv_consumed};
