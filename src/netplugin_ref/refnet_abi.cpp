// The exported vtables ncclNetPlugin_v6 .. ncclNetPlugin_v11: thin adapters from each
// ABI version's signatures to the one implementation in refnet.cpp.
#include <climits>
#include <cstring>

#include "netplugin_ref/refnet.hpp"

namespace {

using namespace refnet;
using p2pscope::net::abi::DeviceHandle;

constexpr const char* kName = "p2pscope-refnet";

template <class Props>
Result props_as(int dev, Props* out) {
  abi::PropsV11 p{};
  Result r = properties(dev, &p);
  if (r != abi::kSuccess) return r;
  *out = Props{};
  out->name = p.name;
  out->pci_path = p.pci_path;
  out->guid = p.guid;
  out->ptr_support = p.ptr_support;
  out->speed = p.speed;
  out->port = p.port;
  out->latency = p.latency;
  out->max_comms = p.max_comms;
  out->max_recvs = p.max_recvs;
  if constexpr (requires { out->net_device_type; }) {
    out->net_device_type = p.net_device_type;
    out->net_device_version = p.net_device_version;
  }
  if constexpr (requires { out->reg_is_global; }) out->reg_is_global = p.reg_is_global;
  if constexpr (requires { out->force_flush; }) {
    out->force_flush = p.force_flush;
    out->vprops = p.vprops;
    out->max_p2p_bytes = p.max_p2p_bytes;
    out->max_coll_bytes = p.max_coll_bytes;
  }
  if constexpr (requires { out->max_multi_request_size; }) out->max_multi_request_size = p.max_multi_request_size;
  return abi::kSuccess;
}

// Versions before v9 carry int sizes.
Result reg_mr_int(void* comm, void* data, int size, int type, void** mh) {
  return reg_mr(comm, data, static_cast<std::size_t>(size), type, mh);
}
Result isend_int(void* c, void* data, int size, int tag, void* mh, void** req) {
  return isend(c, data, static_cast<std::size_t>(size), tag, mh, req);
}
Result isend_v10(void* c, void* data, std::size_t size, int tag, void* mh, void*, void** req) {
  return isend(c, data, size, tag, mh, req);
}
Result irecv_int(void* c, int n, void** data, int* sizes, int* tags, void** mhs, void** req) {
  if (n != 1) return irecv(c, n, data, nullptr, tags, mhs, req);
  std::size_t s = static_cast<std::size_t>(sizes[0]);
  return irecv(c, n, data, &s, tags, mhs, req);
}
Result irecv_v9(void* c, int n, void** data, std::size_t* sizes, int* tags, void** mhs, void** req) {
  return irecv(c, n, data, sizes, tags, mhs, req);
}
Result irecv_v10(void* c, int n, void** data, std::size_t* sizes, int* tags, void** mhs, void**, void** req) {
  return irecv(c, n, data, sizes, tags, mhs, req);
}
Result connect_v6(int dev, void* handle, void** sc) { return connect(dev, handle, sc); }
Result connect_v7(int dev, void* handle, void** sc, DeviceHandle**) { return connect(dev, handle, sc); }
Result connect_v10(int dev, abi::CommConfig*, void* handle, void** sc, DeviceHandle**) {
  return connect(dev, handle, sc);
}
Result connect_v11(void*, int dev, void* handle, void** sc, DeviceHandle**) { return connect(dev, handle, sc); }
Result accept_v6(void* lc, void** rc) { return accept(lc, rc, nullptr); }
Result listen_v11(void*, int dev, void* handle, void** lc) { return listen(dev, handle, lc); }
Result make_vdevice(int*, abi::VDevProps*) { return abi::kInvalidUsage; }
Result init_v10(abi::Logger log, abi::ProfilerCallback) { return init(log); }
int g_ctx;  // v11 hands back a context; ours carries nothing
Result init_v11(void** ctx, std::uint64_t, abi::CommConfig*, abi::Logger log, abi::ProfilerCallback) {
  *ctx = &g_ctx;
  return init(log);
}
Result finalize_v11(void*) { return abi::kSuccess; }
Result set_net_attr(void*, abi::NetAttr*) { return abi::kSuccess; }
Result props_v6(int d, abi::PropsV6* p) { return props_as(d, p); }
Result props_v7(int d, abi::PropsV7* p) { return props_as(d, p); }
Result props_v8(int d, abi::PropsV8* p) { return props_as(d, p); }
Result props_v9(int d, abi::PropsV9* p) { return props_as(d, p); }
Result props_v11(int d, abi::PropsV11* p) { return props_as(d, p); }

}  // namespace

#define REFNET_EXPORT extern "C" __attribute__((visibility("default")))
// P2PSCOPE_REFNET_ONLY=N (CMake's libnccl-net-p2pscope-vN.so): export vN alone.
#ifndef P2PSCOPE_REFNET_ONLY
#define REFNET_HAS(v) 1
#else
#define REFNET_HAS(v) (P2PSCOPE_REFNET_ONLY == (v))
#endif

// For tests: how many regMrDmaBuf calls succeeded in this file (dlsym it from the
// loaded plugin); not part of any NCCL ABI.
REFNET_EXPORT unsigned long long p2pscope_refnet_dmabuf_registrations(void) { return dmabuf_registrations(); }

#if REFNET_HAS(6)
REFNET_EXPORT const abi::NetV6 ncclNetPlugin_v6 = {
    kName, init, devices, props_v6, listen, connect_v6, accept_v6, reg_mr_int, reg_mr_dmabuf, dereg_mr,
    isend_int, irecv_int, iflush, test, close_send, close_recv, close_listen};
#endif

#if REFNET_HAS(7)
REFNET_EXPORT const abi::NetV7 ncclNetPlugin_v7 = {
    kName, init, devices, props_v7, listen, connect_v7, accept, reg_mr_int, reg_mr_dmabuf, dereg_mr,
    isend_int, irecv_int, iflush, test, close_send, close_recv, close_listen, get_device_mr, irecv_consumed};
#endif

#if REFNET_HAS(8)
REFNET_EXPORT const abi::NetV8 ncclNetPlugin_v8 = {
    kName, init, devices, props_v8, listen, connect_v7, accept, reg_mr, reg_mr_dmabuf, dereg_mr,
    isend_int, irecv_int, iflush, test, close_send, close_recv, close_listen, get_device_mr, irecv_consumed};
#endif

#if REFNET_HAS(9)
REFNET_EXPORT const abi::NetV9 ncclNetPlugin_v9 = {
    kName, init, devices, props_v9, listen, connect_v7, accept, reg_mr, reg_mr_dmabuf, dereg_mr,
    isend, irecv_v9, iflush, test, close_send, close_recv, close_listen, get_device_mr, irecv_consumed,
    make_vdevice};
#endif

#if REFNET_HAS(10)
REFNET_EXPORT const abi::NetV10 ncclNetPlugin_v10 = {
    kName, init_v10, devices, props_v9, listen, connect_v10, accept, reg_mr, reg_mr_dmabuf, dereg_mr,
    isend_v10, irecv_v10, iflush, test, close_send, close_recv, close_listen, get_device_mr, irecv_consumed,
    make_vdevice};
#endif

#if REFNET_HAS(11)
REFNET_EXPORT const abi::NetV11 ncclNetPlugin_v11 = {
    kName, init_v11, devices, props_v11, listen_v11, connect_v11, accept, reg_mr, reg_mr_dmabuf,
    dereg_mr, isend_v10, irecv_v10, iflush, test, close_send, close_recv, close_listen, get_device_mr,
    irecv_consumed, make_vdevice, finalize_v11, set_net_attr};
#endif
