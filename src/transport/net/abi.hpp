#pragma once
// The NCCL net-plugin ABI, versions 6 to 11, declared by this project from the
// documented layout (NCCL's ext-net headers): a plugin exports a struct named
// ncclNetPlugin_vN whose first member is its name and the rest function pointers.
// Only the order and types of members matter to the ABI; names here are ours.
// tests/unit/net/test_abi_layout.cpp pins every offset on x86-64/aarch64 (LP64).
#include <cstddef>
#include <cstdint>

namespace p2pscope::net::abi {

extern "C" {

// ncclResult_t: an int-sized enum.
enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};

enum LogLevel : int { kLogNone = 0, kLogVersion = 1, kLogWarn = 2, kLogInfo = 3, kLogAbort = 4, kLogTrace = 5 };
// ncclDebugLogger_t: level, subsystem flags, file, line, printf format, ...
typedef void (*Logger)(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...);
// ncclProfilerCallback_t (v10+): event handle out, event type, parent, plugin id, data.
typedef Result (*ProfilerCallback)(void** event, int type, void* parent, std::int64_t plugin_id, void* data);

enum DevType : int { kDevHost = 0, kDevUnpack = 1, kDevGinProxy = 2, kDevGinGdaki = 3 };

// ncclNetDeviceHandle_v7..v11 (unchanged since v7): returned by connect/accept when
// the plugin offloads to the device (UNPACK: handle -> UnpackDevHandle).
struct DeviceHandle {
  DevType type;
  int version;
  void* handle;
  std::size_t size;
  int needs_proxy_progress;
};

constexpr int kHandleMaxBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
constexpr int kMaxDevsPerVNic = 4;    // NCCL_NET_MAX_DEVS_PER_NIC
constexpr int kUnpackQueueDepth = 16;             // NCCL_NET_DEVICE_UNPACK_MAX_QUEUE_DEPTH
constexpr int kUnpackMaxSlicePages = 4194304 / 4096 * 2;  // 4 MiB per irecv in 4 KiB pages, x2 slack
constexpr int kUnpackDeviceVersion = 0x7;         // NCCL_NET_DEVICE_UNPACK_VERSION

// The UNPACK device protocol (TCPX): per receive slot a list of 16-byte pieces and
// their count; NCCL's kernel reads slot head % depth, then irecvConsumed frees it.
struct alignas(16) UnpackMeta {
  std::uint32_t src_off;
  std::uint32_t len;
  std::uint64_t dst_off;
};
struct UnpackQueue {
  UnpackMeta mem[kUnpackQueueDepth][kUnpackMaxSlicePages];
  std::uint64_t cnt[kUnpackQueueDepth];
};
struct UnpackDevHandle {
  UnpackQueue* meta;
  void* bounce_buf;
  std::uint64_t head;
};

// ---- v6 -------------------------------------------------------------------------
struct PropsV6 {
  char* name;
  char* pci_path;
  std::uint64_t guid;
  int ptr_support;
  int speed;  // Mbps
  int port;
  float latency;  // us
  int max_comms;
  int max_recvs;
};

struct NetV6 {
  const char* name;
  Result (*init)(Logger log);
  Result (*devices)(int* ndev);
  Result (*get_properties)(int dev, PropsV6* props);
  Result (*listen)(int dev, void* handle, void** listen_comm);
  Result (*connect)(int dev, void* handle, void** send_comm);
  Result (*accept)(void* listen_comm, void** recv_comm);
  Result (*reg_mr)(void* comm, void* data, int size, int type, void** mhandle);
  Result (*reg_mr_dmabuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                          void** mhandle);
  Result (*dereg_mr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, int size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*close_send)(void* send_comm);
  Result (*close_recv)(void* recv_comm);
  Result (*close_listen)(void* listen_comm);
};

// ---- v7: device offload (netDeviceType), getDeviceMr, irecvConsumed ------------------
struct PropsV7 {
  char* name;
  char* pci_path;
  std::uint64_t guid;
  int ptr_support;
  int speed;
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  DevType net_device_type;
  int net_device_version;
};

struct NetV7 {
  const char* name;
  Result (*init)(Logger log);
  Result (*devices)(int* ndev);
  Result (*get_properties)(int dev, PropsV7* props);
  Result (*listen)(int dev, void* handle, void** listen_comm);
  Result (*connect)(int dev, void* handle, void** send_comm, DeviceHandle** send_dev_comm);
  Result (*accept)(void* listen_comm, void** recv_comm, DeviceHandle** recv_dev_comm);
  Result (*reg_mr)(void* comm, void* data, int size, int type, void** mhandle);
  Result (*reg_mr_dmabuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                          void** mhandle);
  Result (*dereg_mr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, int size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*close_send)(void* send_comm);
  Result (*close_recv)(void* recv_comm);
  Result (*close_listen)(void* listen_comm);
  Result (*get_device_mr)(void* comm, void* mhandle, void** dptr_mhandle);
  Result (*irecv_consumed)(void* recv_comm, int n, void* request);
};

// ---- v8: regIsGlobal, regMr takes size_t ---------------------------------------
struct PropsV8 {
  char* name;
  char* pci_path;
  std::uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int speed;
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  DevType net_device_type;
  int net_device_version;
};

struct NetV8 {
  const char* name;
  Result (*init)(Logger log);
  Result (*devices)(int* ndev);
  Result (*get_properties)(int dev, PropsV8* props);
  Result (*listen)(int dev, void* handle, void** listen_comm);
  Result (*connect)(int dev, void* handle, void** send_comm, DeviceHandle** send_dev_comm);
  Result (*accept)(void* listen_comm, void** recv_comm, DeviceHandle** recv_dev_comm);
  Result (*reg_mr)(void* comm, void* data, std::size_t size, int type, void** mhandle);
  Result (*reg_mr_dmabuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                          void** mhandle);
  Result (*dereg_mr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, int size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*close_send)(void* send_comm);
  Result (*close_recv)(void* recv_comm);
  Result (*close_listen)(void* listen_comm);
  Result (*get_device_mr)(void* comm, void* mhandle, void** dptr_mhandle);
  Result (*irecv_consumed)(void* recv_comm, int n, void* request);
};

// ---- v9: forceFlush, virtual NICs, size_t isend/irecv sizes, max transfer sizes --
struct VDevProps {  // ncclNetVDeviceProps_v9..v11
  int ndevs;
  int devs[kMaxDevsPerVNic];
};

struct PropsV9 {
  char* name;
  char* pci_path;
  std::uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int force_flush;
  int speed;
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  DevType net_device_type;
  int net_device_version;
  VDevProps vprops;
  std::size_t max_p2p_bytes;
  std::size_t max_coll_bytes;
};

struct NetV9 {
  const char* name;
  Result (*init)(Logger log);
  Result (*devices)(int* ndev);
  Result (*get_properties)(int dev, PropsV9* props);
  Result (*listen)(int dev, void* handle, void** listen_comm);
  Result (*connect)(int dev, void* handle, void** send_comm, DeviceHandle** send_dev_comm);
  Result (*accept)(void* listen_comm, void** recv_comm, DeviceHandle** recv_dev_comm);
  Result (*reg_mr)(void* comm, void* data, std::size_t size, int type, void** mhandle);
  Result (*reg_mr_dmabuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                          void** mhandle);
  Result (*dereg_mr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, std::size_t size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, std::size_t* sizes, int* tags, void** mhandles,
                  void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*close_send)(void* send_comm);
  Result (*close_recv)(void* recv_comm);
  Result (*close_listen)(void* listen_comm);
  Result (*get_device_mr)(void* comm, void* mhandle, void** dptr_mhandle);
  Result (*irecv_consumed)(void* recv_comm, int n, void* request);
  Result (*make_vdevice)(int* d, VDevProps* props);
};

// ---- v10: profiler callback at init, comm config at connect, profiler handles ----
struct CommConfig {  // ncclNetCommConfig_v10/v11
  int traffic_class;  // -1: undefined (NCCL_NET_TRAFFIC_CLASS_UNDEF)
};
constexpr int kTrafficClassUndef = -1;

using PropsV10 = PropsV9;  // same members in the same order

struct NetV10 {
  const char* name;
  Result (*init)(Logger log, ProfilerCallback prof);
  Result (*devices)(int* ndev);
  Result (*get_properties)(int dev, PropsV10* props);
  Result (*listen)(int dev, void* handle, void** listen_comm);
  Result (*connect)(int dev, CommConfig* config, void* handle, void** send_comm, DeviceHandle** send_dev_comm);
  Result (*accept)(void* listen_comm, void** recv_comm, DeviceHandle** recv_dev_comm);
  Result (*reg_mr)(void* comm, void* data, std::size_t size, int type, void** mhandle);
  Result (*reg_mr_dmabuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                          void** mhandle);
  Result (*dereg_mr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, std::size_t size, int tag, void* mhandle, void* phandle,
                  void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, std::size_t* sizes, int* tags, void** mhandles,
                  void** phandles, void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*close_send)(void* send_comm);
  Result (*close_recv)(void* recv_comm);
  Result (*close_listen)(void* listen_comm);
  Result (*get_device_mr)(void* comm, void* mhandle, void** dptr_mhandle);
  Result (*irecv_consumed)(void* recv_comm, int n, void* request);
  Result (*make_vdevice)(int* d, VDevProps* props);
};

// ---- v11: a context per init (commId, config), finalize, setNetAttr ----------------
struct PropsV11 {
  char* name;
  char* pci_path;
  std::uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int force_flush;
  int speed;
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  DevType net_device_type;
  int net_device_version;
  VDevProps vprops;
  std::size_t max_p2p_bytes;
  std::size_t max_coll_bytes;
  int max_multi_request_size;
};

struct CommAttr {  // ncclNetCommAttr_v11
  std::int32_t max_concurrent_peers;
  std::int32_t min_concurrent_peers;
  std::int32_t max_flows_per_peer;
  std::int32_t min_flows_per_peer;
};
struct NetAttr {  // ncclNetAttr_v11
  CommAttr send;
  CommAttr recv;
  std::uint32_t op;
  std::uint32_t algo;
  std::uint32_t proto;
};

struct NetV11 {
  const char* name;
  Result (*init)(void** ctx, std::uint64_t comm_id, CommConfig* config, Logger log, ProfilerCallback prof);
  Result (*devices)(int* ndev);
  Result (*get_properties)(int dev, PropsV11* props);
  Result (*listen)(void* ctx, int dev, void* handle, void** listen_comm);
  Result (*connect)(void* ctx, int dev, void* handle, void** send_comm, DeviceHandle** send_dev_comm);
  Result (*accept)(void* listen_comm, void** recv_comm, DeviceHandle** recv_dev_comm);
  Result (*reg_mr)(void* comm, void* data, std::size_t size, int type, void** mhandle);
  Result (*reg_mr_dmabuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                          void** mhandle);
  Result (*dereg_mr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, std::size_t size, int tag, void* mhandle, void* phandle,
                  void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, std::size_t* sizes, int* tags, void** mhandles,
                  void** phandles, void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*close_send)(void* send_comm);
  Result (*close_recv)(void* recv_comm);
  Result (*close_listen)(void* listen_comm);
  Result (*get_device_mr)(void* comm, void* mhandle, void** dptr_mhandle);
  Result (*irecv_consumed)(void* recv_comm, int n, void* request);
  Result (*make_vdevice)(int* d, VDevProps* props);
  Result (*finalize)(void* ctx);
  Result (*set_net_attr)(void* ctx, NetAttr* attr);
};

}  // extern "C"

const char* result_name(int r);  // "ncclSystemError" ...

}  // namespace p2pscope::net::abi
