#pragma once
// libnccl-net-p2pscope.so: the project's reference NCCL net plugin. Host TCP sockets,
// one device per chosen interface, a window of requests per comm, an emulated UNPACK
// mode and fault switches, behind every ABI version v6..v11 (refnet_abi.cpp).
//
// Environment (read at every init):
//   P2PSCOPE_REFNET_IFS=lo,eth0        interfaces, one device each (default: lo)
//   P2PSCOPE_REFNET_UNPACK=1           UNPACK device type: receives land in a bounce
//                                      area as 4 KiB pages out of order + a scatter list
//   P2PSCOPE_REFNET_NULL_REQUESTS=N|forever   isend/irecv answer NULL for N calls
//   P2PSCOPE_REFNET_FAIL_AFTER_BYTES=N  test() fails once a comm moved N bytes
//   P2PSCOPE_REFNET_DIE_AFTER_BYTES=N   the comm closes its socket after N bytes
//   P2PSCOPE_REFNET_FAULT_SIDE=send|recv|both  which comms the two above hit (send)
//   P2PSCOPE_REFNET_DEVICES=0           report zero devices (tests the caller's error)
//   P2PSCOPE_REFNET_CUDA=1              also register CUDA memory (NCCL_PTR_CUDA), staged
//                                      through host buffers with libcuda.so.1 (loaded at run time)
//   P2PSCOPE_REFNET_DMABUF=1            also advertise NCCL_PTR_DMABUF (implies _CUDA=1): regMrDmaBuf
//                                      checks the fd is a dma-buf covering offset + size, counts
//                                      it (p2pscope_refnet_dmabuf_registrations()) and keeps the
//                                      staged CUDA data path
//   P2PSCOPE_REFNET_INIT_FAIL=1         init fails (tests the caller's error)
//   P2PSCOPE_REFNET_SIZE_SHORT=1        test() of a receive reports one byte less than came
//                                      (a plugin's wrong size: callers that use it must check)
//   P2PSCOPE_REFNET_SEND_STALLS=1       a send whose peer closed stays not done instead of failing
//                                      (as Fast Socket's sends did after the peer gave up)
//   P2PSCOPE_REFNET_SIZE_UNSET=1        test() of a receive leaves *size as it was (as Google's
//                                      Fast Socket: upstream ncclFastSocketTest never sets it)
//   P2PSCOPE_REFNET_WAIT_US=N           test() of an incomplete request sleeps in each socket
//                                      call up to N us for its bytes (default 1000); 0: polls
//   P2PSCOPE_REFNET_RCVLOWAT=0          such a waiting read is one MSG_WAITALL recv, woken per
//                                      arriving segment, instead of SO_RCVLOWAT and poll
#include <cstddef>
#include <cstdint>

#include "transport/net/abi.hpp"

namespace refnet {

using p2pscope::net::abi::Result;
namespace abi = p2pscope::net::abi;

constexpr int kMaxRequests = 32;    // per comm (NCCL_NET_MAX_REQUESTS)
constexpr std::size_t kUnpackSliceBytes = 4u << 20;  // per UNPACK receive, as TCPX
constexpr std::uint32_t kPageBytes = 4096;

Result init(abi::Logger log);
Result devices(int* ndev);
// The newest property set; older versions copy the members they have.
Result properties(int dev, abi::PropsV11* props);
Result listen(int dev, void* handle, void** listen_comm);
Result connect(int dev, void* handle, void** send_comm);
Result accept(void* listen_comm, void** recv_comm, abi::DeviceHandle** dev_handle);
Result reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle);
Result reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                     void** mhandle);
unsigned long long dmabuf_registrations();  // successful regMrDmaBuf calls since the library loaded
Result dereg_mr(void* comm, void* mhandle);
Result isend(void* send_comm, void* data, std::size_t size, int tag, void* mhandle, void** request);
Result irecv(void* recv_comm, int n, void** data, const std::size_t* sizes, int* tags, void** mhandles,
             void** request);
Result iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
Result test(void* request, int* done, int* size);
Result close_send(void* send_comm);
Result close_recv(void* recv_comm);
Result close_listen(void* listen_comm);
Result get_device_mr(void* comm, void* mhandle, void** dptr);
Result irecv_consumed(void* recv_comm, int n, void* request);

}  // namespace refnet
