// The ABI declarations against the documented layout of ncclNet v6..v11 (LP64):
// every member's offset and every struct's size, written out by hand from the
// field order of NCCL's ext-net headers, so a reordered or resized member fails here.
#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

#include "p2pscope/netplugin.hpp"
#include "transport/net/abi.hpp"

namespace nabi = p2pscope::net::abi;

#define AT(T, m, off) EXPECT_EQ(offsetof(T, m), std::size_t{off}) << #T "::" #m
#define SIZE(T, n) EXPECT_EQ(sizeof(T), std::size_t{n}) << "sizeof " #T

TEST(NetAbi, PropertiesV6) {
  AT(nabi::PropsV6, name, 0); AT(nabi::PropsV6, pci_path, 8); AT(nabi::PropsV6, guid, 16);
  AT(nabi::PropsV6, ptr_support, 24); AT(nabi::PropsV6, speed, 28); AT(nabi::PropsV6, port, 32);
  AT(nabi::PropsV6, latency, 36); AT(nabi::PropsV6, max_comms, 40); AT(nabi::PropsV6, max_recvs, 44);
  SIZE(nabi::PropsV6, 48);
}

TEST(NetAbi, PropertiesV7AddsDeviceOffload) {
  AT(nabi::PropsV7, ptr_support, 24); AT(nabi::PropsV7, speed, 28); AT(nabi::PropsV7, max_recvs, 44);
  AT(nabi::PropsV7, net_device_type, 48); AT(nabi::PropsV7, net_device_version, 52);
  SIZE(nabi::PropsV7, 56);
}

TEST(NetAbi, PropertiesV8InsertsRegIsGlobalAfterPtrSupport) {
  AT(nabi::PropsV8, ptr_support, 24); AT(nabi::PropsV8, reg_is_global, 28); AT(nabi::PropsV8, speed, 32);
  AT(nabi::PropsV8, port, 36); AT(nabi::PropsV8, latency, 40); AT(nabi::PropsV8, max_comms, 44);
  AT(nabi::PropsV8, max_recvs, 48); AT(nabi::PropsV8, net_device_type, 52); AT(nabi::PropsV8, net_device_version, 56);
  SIZE(nabi::PropsV8, 64);
}

TEST(NetAbi, PropertiesV9V10AddForceFlushVnicsAndSizes) {
  AT(nabi::PropsV9, reg_is_global, 28); AT(nabi::PropsV9, force_flush, 32); AT(nabi::PropsV9, speed, 36);
  AT(nabi::PropsV9, port, 40); AT(nabi::PropsV9, latency, 44); AT(nabi::PropsV9, max_comms, 48);
  AT(nabi::PropsV9, max_recvs, 52); AT(nabi::PropsV9, net_device_type, 56); AT(nabi::PropsV9, net_device_version, 60);
  AT(nabi::PropsV9, vprops, 64); AT(nabi::PropsV9, max_p2p_bytes, 88); AT(nabi::PropsV9, max_coll_bytes, 96);
  SIZE(nabi::PropsV9, 104);
  SIZE(nabi::VDevProps, 20);
  AT(nabi::VDevProps, devs, 4);
  EXPECT_TRUE((std::is_same_v<nabi::PropsV10, nabi::PropsV9>));
}

TEST(NetAbi, PropertiesV11AddsMaxMultiRequestSize) {
  AT(nabi::PropsV11, vprops, 64); AT(nabi::PropsV11, max_p2p_bytes, 88); AT(nabi::PropsV11, max_coll_bytes, 96);
  AT(nabi::PropsV11, max_multi_request_size, 104);
  SIZE(nabi::PropsV11, 112);
}

TEST(NetAbi, DeviceHandleAndUnpackQueue) {
  AT(nabi::DeviceHandle, type, 0); AT(nabi::DeviceHandle, version, 4); AT(nabi::DeviceHandle, handle, 8);
  AT(nabi::DeviceHandle, size, 16); AT(nabi::DeviceHandle, needs_proxy_progress, 24);
  SIZE(nabi::DeviceHandle, 32);
  AT(nabi::UnpackMeta, src_off, 0); AT(nabi::UnpackMeta, len, 4); AT(nabi::UnpackMeta, dst_off, 8);
  SIZE(nabi::UnpackMeta, 16);
  EXPECT_EQ(alignof(nabi::UnpackMeta), 16u);
  // 16 slots x 2048 pages x 16 bytes, then 16 counts.
  AT(nabi::UnpackQueue, cnt, 16 * 2048 * 16);
  SIZE(nabi::UnpackQueue, 16 * 2048 * 16 + 16 * 8);
  AT(nabi::UnpackDevHandle, meta, 0); AT(nabi::UnpackDevHandle, bounce_buf, 8); AT(nabi::UnpackDevHandle, head, 16);
  // The public piece is the same 16 bytes the plugin writes.
  SIZE(p2pscope::net::UnpackPiece, 16);
  EXPECT_EQ(offsetof(p2pscope::net::UnpackPiece, dst_off), offsetof(nabi::UnpackMeta, dst_off));
  SIZE(nabi::CommConfig, 4);
  SIZE(nabi::NetAttr, 44);
  AT(nabi::NetAttr, recv, 16); AT(nabi::NetAttr, op, 32); AT(nabi::NetAttr, proto, 40);
}

// Vtables: the name, then one pointer per call, in the documented order.
TEST(NetAbi, VtableV6) {
  AT(nabi::NetV6, name, 0); AT(nabi::NetV6, init, 8); AT(nabi::NetV6, devices, 16);
  AT(nabi::NetV6, get_properties, 24); AT(nabi::NetV6, listen, 32); AT(nabi::NetV6, connect, 40);
  AT(nabi::NetV6, accept, 48); AT(nabi::NetV6, reg_mr, 56); AT(nabi::NetV6, reg_mr_dmabuf, 64);
  AT(nabi::NetV6, dereg_mr, 72); AT(nabi::NetV6, isend, 80); AT(nabi::NetV6, irecv, 88); AT(nabi::NetV6, iflush, 96);
  AT(nabi::NetV6, test, 104); AT(nabi::NetV6, close_send, 112); AT(nabi::NetV6, close_recv, 120);
  AT(nabi::NetV6, close_listen, 128);
  SIZE(nabi::NetV6, 136);
}

template <class N>
void expect_v7_tail() {
  AT(N, close_listen, 128); AT(N, get_device_mr, 136); AT(N, irecv_consumed, 144);
}

TEST(NetAbi, VtablesV7V8) {
  expect_v7_tail<nabi::NetV7>();
  SIZE(nabi::NetV7, 152);
  expect_v7_tail<nabi::NetV8>();
  SIZE(nabi::NetV8, 152);
  AT(nabi::NetV8, reg_mr, 56); AT(nabi::NetV8, isend, 80);
}

TEST(NetAbi, VtablesV9V10V11) {
  expect_v7_tail<nabi::NetV9>();
  AT(nabi::NetV9, make_vdevice, 152);
  SIZE(nabi::NetV9, 160);
  expect_v7_tail<nabi::NetV10>();
  AT(nabi::NetV10, make_vdevice, 152);
  SIZE(nabi::NetV10, 160);
  expect_v7_tail<nabi::NetV11>();
  AT(nabi::NetV11, make_vdevice, 152); AT(nabi::NetV11, finalize, 160); AT(nabi::NetV11, set_net_attr, 168);
  SIZE(nabi::NetV11, 176);
}

// Where the signatures changed between versions (same offsets, other types).
TEST(NetAbi, SignaturesThatChanged) {
  using nabi::Result;
  using nabi::DeviceHandle;
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV7::reg_mr), Result (*)(void*, void*, int, int, void**)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV8::reg_mr), Result (*)(void*, void*, std::size_t, int, void**)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV8::isend), Result (*)(void*, void*, int, int, void*, void**)>));
  EXPECT_TRUE(
      (std::is_same_v<decltype(nabi::NetV9::isend), Result (*)(void*, void*, std::size_t, int, void*, void**)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV9::irecv),
                              Result (*)(void*, int, void**, std::size_t*, int*, void**, void**)>));
  // iflush keeps int sizes in every version.
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV11::iflush), Result (*)(void*, int, void**, int*, void**, void**)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV10::isend),
                              Result (*)(void*, void*, std::size_t, int, void*, void*, void**)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV6::connect), Result (*)(int, void*, void**)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV7::connect), Result (*)(int, void*, void**, DeviceHandle**)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV10::connect),
                              Result (*)(int, nabi::CommConfig*, void*, void**, DeviceHandle**)>));
  EXPECT_TRUE(
      (std::is_same_v<decltype(nabi::NetV11::connect), Result (*)(void*, int, void*, void**, DeviceHandle**)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV11::listen), Result (*)(void*, int, void*, void**)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV11::init), Result (*)(void**, std::uint64_t, nabi::CommConfig*,
                                                                      nabi::Logger, nabi::ProfilerCallback)>));
  EXPECT_TRUE((std::is_same_v<decltype(nabi::NetV10::init), Result (*)(nabi::Logger, nabi::ProfilerCallback)>));
  EXPECT_EQ(nabi::kHandleMaxBytes, 128);
  EXPECT_EQ(p2pscope::net::kPtrHost | p2pscope::net::kPtrCuda | p2pscope::net::kPtrDmabuf, 7);
}
