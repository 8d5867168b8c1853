#pragma once
// Drive an NCCL net plugin (libnccl-net-*.so: TCPX, aws-ofi-nccl, IB/UCX, socket
// plugins) without NCCL: load it, read its devices, open comms, register memory and
// move bytes with isend/irecv/test, one normalised API over ABI versions v6..v11.
//
// Ownership: Plugin is shared (std::shared_ptr) and every comm and memory region keeps
// it alive; comms and regions are move-only RAII owners that close/deregister in their
// destructor (noexcept; errors there are kept in the plugin log, never thrown).
// Threads: one Plugin may be used from many threads, but each comm (and the regions
// registered on it) from one thread at a time, as NCCL's proxy does.
// Errors: every failing plugin call throws p2pscope::Error naming the plugin (file,
// name, ABI version), the call and the ncclResult_t, followed by the plugin's recent
// WARN log lines. Misuse (testing a request that is not the oldest, a size the ABI
// cannot carry, memory the plugin does not offer) throws UsageError.
// Units: bytes, Mbps as the plugin reports speed, deadlines on steady_clock.
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "p2pscope/error.hpp"

namespace p2pscope::net {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline constexpr int kMinAbiVersion = 6;   // the oldest ncclNetPlugin_vN NCCL 2.28 still loads
inline constexpr int kMaxAbiVersion = 11;  // the newest
inline constexpr std::size_t kHandleBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
// Requests NCCL keeps in flight per comm from ABI v8 on (NCCL_NET_MAX_REQUESTS); see
// max_requests_per_comm. UNPACK receives: the queue depth of the scatter lists.
inline constexpr int kMaxRequestsPerComm = 32;
inline constexpr int kUnpackQueueDepth = 16;
// What a plugin of ABI `version` must take in flight per comm: NCCL_NET_MAX_REQUESTS
// of the headers it was built against, 8 in v6's (NCCL <= 2.18; v7 taken as the same)
// and 32 from v8's. Plugins fail past their slots (google/nccl-fastsocket, built on
// v6, has 16; NCCL's socket and IB transports error out too): no NULL to back off on.
constexpr int max_requests_per_comm(int version) { return version < 8 ? 8 : kMaxRequestsPerComm; }

// NCCL_PTR_* bits of ptrSupport.
inline constexpr int kPtrHost = 0x1;
inline constexpr int kPtrCuda = 0x2;
inline constexpr int kPtrDmabuf = 0x4;

enum class MemType { host, cuda };  // DMA-BUF is host/cuda memory registered by fd
enum class DeviceType { host = 0, unpack = 1, gin_proxy = 2, gin_gdaki = 3 };
std::string to_string(DeviceType t);
std::string ptr_support_text(int bits);  // "host,cuda,dmabuf"

// The opaque bytes listen() returns; the caller carries them to the connecting side.
using NetHandle = std::array<unsigned char, kHandleBytes>;

// One plugin device (usually one NIC), normalised over versions. Fields a version
// lacks hold what NCCL assumes for it (noted per field).
struct DeviceProps {
  int index = 0;
  std::string name;
  std::string pci_path;
  std::uint64_t guid = 0;
  int ptr_support = 0;         // kPtr* bits
  bool reg_is_global = false;  // v8+; false before
  bool force_flush = false;    // v9+; false before
  int speed_mbps = 0;
  int port = 0;
  float latency_us = 0;
  int max_comms = 0;
  int max_recvs = 1;  // grouped receives per irecv (this API posts n=1)
  DeviceType device_type = DeviceType::host;  // v7+; host before
  int device_version = 0;                     // v7+
  std::vector<int> vdevs;                     // v9+: physical devices of a virtual NIC
  std::uint64_t max_p2p_bytes = 1ull << 30;   // v9+; NCCL's MAX_NET_SIZE (1 GiB) before
  std::uint64_t max_coll_bytes = 1ull << 30;  // v9+
  int max_multi_request_size = 1;             // v11+

  bool host_memory() const { return ptr_support & kPtrHost; }
  bool cuda_memory() const { return ptr_support & kPtrCuda; }  // GPUDirect RDMA / devmem
  bool dmabuf() const { return ptr_support & kPtrDmabuf; }
};

// The bound on every call into a plugin while a session runs (Plugin::watch_calls).
struct CallLimits {
  double limit_s = 10;                       // a call not back by then is hung (at least 2 s)
  const std::atomic<bool>* stop = nullptr;   // once set, a call not back a second later is hung
  // Told why, from the watchdog's thread; must end the process: the hung thread cannot
  // be stopped. Empty: the reason goes to stderr and the process aborts.
  std::function<void(const std::string&)> on_hung;
};

// Where a plugin comes from. `plugin` is a path (contains '/'), a file name
// (libfoo.so), a name (NAME -> libnccl-net-NAME.so, then NAME as given), or empty
// (NCCL_NET_PLUGIN from env, else libnccl-net.so), resolved as NCCL resolves them.
struct LoadOptions {
  std::string plugin;
  int max_version = kMaxAbiVersion;  // lower it to drive an older ABI of the same file
  int min_version = kMinAbiVersion;
};

// Candidate file names NCCL would try for a NCCL_NET_PLUGIN value, in order.
std::vector<std::string> nccl_plugin_candidates(const std::string& nccl_net_plugin);

// Which file NCCL would load under an environment (NCCL_NET_PLUGIN, LD_LIBRARY_PATH),
// without initialising it: found, path, exported versions, the reason when not found.
struct Resolution {
  std::string request;          // the NCCL_NET_PLUGIN value ("" = unset)
  bool disabled = false;        // NCCL_NET_PLUGIN=none
  bool found = false;
  std::string file;             // the name dlopen accepted
  std::string path;             // its canonical path (from dlinfo's link map)
  std::vector<int> versions;    // ncclNetPlugin_vN symbols present, any N
  std::string reason;           // why not found / why NCCL would skip it
};
Resolution resolve_like_nccl(const std::string& nccl_net_plugin);

class ListenComm;
class SendComm;
class RecvComm;

// Load a plugin once per process and share it (server and client sides of a loopback
// run included): plugins keep process-wide state, and a second load re-runs init.
class Plugin : public std::enable_shared_from_this<Plugin> {
 public:
  // dlopen + pick the highest ncclNetPlugin_vN in [min,max] + init + devices +
  // getProperties. Errors name the file and the step: not a shared object, no
  // ncclNetPlugin symbol, only versions outside v6..v11, init failing, zero devices.
  static std::shared_ptr<Plugin> load(const LoadOptions& opt = {});
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  const std::string& path() const;       // the file loaded
  const std::string& name() const;       // the vtable's name ("Socket", "GPUDirectTCPX", ...)
  int version() const;                   // ABI version used
  std::vector<int> exported_versions() const;  // every ncclNetPlugin_vN the file has
  const std::vector<DeviceProps>& devices() const;
  const DeviceProps& device(int dev) const;  // UsageError for an index out of range
  std::string describe() const;  // "net plugin 'NAME' v9 (/path)" for messages

  // Log lines the plugin printed through NCCL's logger since it was loaded (WARN and
  // INFO, "LEVEL file:line text"), oldest first, at most the last 500.
  std::vector<std::string> log() const;

  // Every call into the plugin is bounded by `limits` while the token lives (several
  // tokens at once: the longest limit). A third-party plugin may hang inside a call.
  std::shared_ptr<void> watch_calls(CallLimits limits);

  // listen() returns at once; the handle goes to the peer that connects.
  ListenComm listen(int dev);
  // connect/accept loop while the plugin answers a NULL comm (not yet), until the
  // deadline: then Error "<describe>: connect(dev N) failed: ncclInProgress (7): the
  // peer did not accept before the deadline" (accept: "no peer connected ...").
  SendComm connect(int dev, const NetHandle& handle, Deadline deadline);
  RecvComm accept(ListenComm& listener, Deadline deadline);
  // One try each, for a caller that must progress both ends in one thread (--loopback
  // with plugins whose connect waits for the accept, as IB's does): std::nullopt =
  // not yet. `handle` carries the plugin's connection state between tries: pass the
  // same object each time, starting from the peer's bytes.
  std::optional<SendComm> try_connect(int dev, NetHandle& handle);
  std::optional<RecvComm> try_accept(ListenComm& listener);
  // connect / accept in a thread of their own, waited for until the deadline and a
  // grace (or the grace after *stop is raised). A peer chooses what a handle names and
  // whether it ever answers: a plugin call it hangs must fail its session, not end the
  // server, as the watchdog's exit did (issue 43 item 3). A call that has not returned by
  // then is abandoned: its thread (and for accept, the listen comm) is left behind and
  // the watchdog leaves it be; Error says so. After kMaxAbandonedCalls in one process no
  // more are started (each holds a thread and the plugin's state): Error, restart it.
  static constexpr int kMaxAbandonedCalls = 8;
  SendComm connect_bounded(int dev, const NetHandle& handle, Deadline deadline,
                           const std::atomic<bool>* stop = nullptr);
  RecvComm accept_bounded(ListenComm& listener, Deadline deadline, const std::atomic<bool>* stop = nullptr);

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  explicit Plugin(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Registered memory on one comm. deregMr in the destructor (skipped when the comm
// was closed first: plugins free a comm's registrations with it).
class MemRegion {
 public:
  MemRegion() = default;
  MemRegion(MemRegion&&) noexcept;
  MemRegion& operator=(MemRegion&&) noexcept;
  ~MemRegion();
  void* mhandle() const { return mhandle_; }
  void* data() const { return data_; }
  std::size_t size_bytes() const { return size_bytes_; }
  MemType type() const { return type_; }
  explicit operator bool() const { return mhandle_ != nullptr; }
  void reset() noexcept;

 private:
  friend class CommBase;
  MemRegion(std::shared_ptr<Plugin> plugin, std::weak_ptr<int> comm_alive, void* comm, void* mhandle, void* data,
            std::size_t size_bytes, MemType type)
      : plugin_(std::move(plugin)), comm_alive_(std::move(comm_alive)), comm_(comm), mhandle_(mhandle), data_(data),
        size_bytes_(size_bytes), type_(type) {}
  std::shared_ptr<Plugin> plugin_;
  std::weak_ptr<int> comm_alive_;  // expired once its comm closed: deregMr is skipped then
  void* comm_ = nullptr;
  void* mhandle_ = nullptr;
  void* data_ = nullptr;
  std::size_t size_bytes_ = 0;
  MemType type_ = MemType::host;
};

// What Request::reported_bytes holds when the plugin's test() left the size unset (Fast
// Socket never sets it): the API's own "no size" would be 0, which bench net reads as an
// end-of-round mark.
inline constexpr int kSizeNotReported = -2;

// A posted isend/irecv/iflush. `seq` numbers requests per comm from 0.
struct Request {
  void* raw = nullptr;
  std::uint64_t seq = 0;
  std::size_t size_bytes = 0;  // the size posted
  void* data = nullptr;
  int reported_bytes = -1;     // what test() said it moved, once done (a receive: the sender's size)
};

// Where the bytes of one completed UNPACK receive are: `count` pieces, each copying
// `len` bytes from bounce+src_off to the destination buffer + dst_off (TCPX's loadMeta
// layout: 16 bytes each). `pieces` and `bounce` are the plugin's memory (for TCPX:
// mapped host memory and GPU memory); valid until irecv_consumed().
struct UnpackPiece {
  std::uint32_t src_off;
  std::uint32_t len;
  std::uint64_t dst_off;
};
struct UnpackView {
  const UnpackPiece* pieces = nullptr;
  std::size_t count = 0;
  const void* bounce = nullptr;
};

// What send and receive comms share: registration and the oldest-request rule.
class CommBase {
 public:
  CommBase() = default;
  CommBase(CommBase&&) noexcept;
  CommBase& operator=(CommBase&&) noexcept;  // the target must be closed (derived classes close it)
  virtual ~CommBase() = default;

  // type must be in the device's ptr_support, else UsageError naming what it offers.
  MemRegion reg_mr(void* data, std::size_t size_bytes, MemType type);
  MemRegion reg_mr_dmabuf(void* data, std::size_t size_bytes, MemType type, std::uint64_t offset, int fd);
  // getDeviceMr (v7+; UNPACK plugins): the device-side form of a region, or nullptr.
  void* device_mr(const MemRegion& mr);

  // Tests the comm's oldest outstanding request (the only one plugins accept testing).
  // true: it completed and left the queue. Throws Error when the plugin fails it.
  bool test_oldest();
  // The same, for a request the caller names: UsageError when it is not the oldest.
  bool test(const Request& r);
  const std::deque<Request>& outstanding() const { return queue_; }
  // The size test() reported for the request test_oldest last completed (-1: none yet).
  // Callers that rely on it check it: plugins have reported sizes wrong.
  int last_reported_bytes() const { return last_done_ ? last_done_->reported_bytes : -1; }
  std::optional<Request> oldest() const;

  int device() const { return dev_; }
  void* raw() const { return comm_; }
  const std::shared_ptr<Plugin>& plugin() const { return plugin_; }
  explicit operator bool() const { return comm_ != nullptr; }

 protected:
  friend class Plugin;
  std::shared_ptr<Plugin> plugin_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(1);  // regions watch it (MemRegion::comm_alive_)
  void* comm_ = nullptr;
  int dev_ = 0;
  std::uint64_t next_seq_ = 0;
  std::deque<Request> queue_;
  std::optional<Request> last_done_;  // the request test_oldest just completed
  bool test_front(std::deque<Request>& q, const char* call, bool receive);
  virtual void on_complete(const Request&) {}  // a receive (not a flush) completed
};

class SendComm : public CommBase {
 public:
  SendComm() = default;
  SendComm(SendComm&&) noexcept = default;
  SendComm& operator=(SendComm&&) noexcept;
  ~SendComm() override;
  // std::nullopt when the plugin answered NULL (busy: call again, the caller bounds it).
  // UsageError when size_bytes exceeds what the ABI version or max_p2p_bytes carries.
  std::optional<Request> isend(const void* data, std::size_t size_bytes, const MemRegion& mr, int tag = 0);
  void close() noexcept;
};

class RecvComm : public CommBase {
 public:
  RecvComm() = default;
  RecvComm(RecvComm&&) noexcept;
  RecvComm& operator=(RecvComm&&) noexcept;
  ~RecvComm() override;
  // One buffer per irecv (n=1). std::nullopt when the plugin answered NULL.
  std::optional<Request> irecv(void* data, std::size_t size_bytes, const MemRegion& mr, int tag = 0);
  // iflush after receives into CUDA memory; std::nullopt when the plugin needs none
  // (it returned a NULL request). Flushes have their own oldest-first queue.
  std::optional<Request> iflush(void* data, std::size_t size_bytes, const MemRegion& mr);
  bool test_flush();  // tests the oldest flush; true when done
  std::size_t flushes_outstanding() const { return flushes_.size(); }

  // UNPACK devices: the scatter list of the receive test_oldest() just completed
  // (UsageError on a HOST device or when none awaits consumption), then
  // irecv_consumed() hands its bounce space back (in completion order).
  bool unpack() const;
  UnpackView unpack_view() const;
  void irecv_consumed();
  std::size_t awaiting_consume() const { return to_consume_.size(); }

  void close() noexcept;

 private:
  friend class Plugin;
  std::deque<Request> flushes_;
  std::deque<Request> to_consume_;  // UNPACK receives done but not yet consumed
  void* dev_handle_ = nullptr;      // ncclNetDeviceHandle from accept (UNPACK)
  std::uint64_t unpack_head_ = 0;   // slot of the next receive to consume
  void on_complete(const Request& r) override;
};

class ListenComm {
 public:
  ListenComm() = default;
  ListenComm(ListenComm&&) noexcept;
  ListenComm& operator=(ListenComm&&) noexcept;
  ~ListenComm();
  const NetHandle& handle() const { return handle_; }
  int device() const { return dev_; }
  void close() noexcept;

 private:
  friend class Plugin;
  std::shared_ptr<Plugin> plugin_;
  void* comm_ = nullptr;
  int dev_ = 0;
  NetHandle handle_{};
};

// The table `topo --net-plugin` and `doctor` show: one row per device, plus the
// plugin and what NCCL would pick. JSON: {"plugin":{path,name,version,exported},
// "devices":[{index,name,pci_path,speed_mbps,port,ptr_support:[..],gdr,dmabuf,
// max_comms,max_recvs,device_type,...}], "nccl_would_load":{...}, "gpu_memory":{...}}
nlohmann::json properties_json(const Plugin& p);
nlohmann::json resolution_json(const Resolution& r);
std::vector<std::vector<std::string>> properties_rows(const Plugin& p);  // header first
// "yes: cuda via dmabuf on 4/4 devices" / "no: host memory only (ptrSupport host)".
std::string gpu_memory_verdict(const Plugin& p);

// For `doctor`: what NCCL would load under NCCL_NET_PLUGIN (the value given, "" =
// unset) and LD_LIBRARY_PATH, loaded and asked for its devices when found. Never
// throws for the plugin's faults: they land in load_error.
struct NcclPluginReport {
  Resolution resolution;
  std::shared_ptr<Plugin> plugin;  // null when none was found or it failed to load
  std::string load_error;
  std::string gpu_memory;          // the verdict, or why there is none
  nlohmann::json to_json() const;  // {"nccl_would_load", "plugin", "devices", "gpu_memory", "load_error"?}
};
NcclPluginReport report_nccl_plugin(const std::string& nccl_net_plugin);

// Unpack kernel (src/transport/net/unpack.cu; Error when built without CUDA):
// copies count pieces from bounce to dst on `stream` (a cudaStream_t, nullptr =
// default). pieces, bounce and dst must be device-accessible (device memory, or
// mapped pinned host memory). Returns at once; the caller synchronises.
void launch_unpack(const UnpackPiece* pieces, std::size_t count, const void* bounce, void* dst, void* stream);
bool unpack_kernel_available();

}  // namespace p2pscope::net
