// Comms, registered memory and requests. The per-comm FIFO enforces what plugins
// assume without checking: test() is called on the oldest outstanding request only.
#include <fmt/format.h>

#include "transport/net/plugin_impl.hpp"

namespace p2pscope::net {
namespace {

Plugin::Impl& impl_of(const std::shared_ptr<Plugin>& p) { return p->impl(); }

const char* mem_name(MemType t) { return t == MemType::cuda ? "CUDA" : "host"; }

}  // namespace

// ---- MemRegion -----------------------------------------------------------------
MemRegion::MemRegion(MemRegion&& o) noexcept
    : plugin_(std::move(o.plugin_)),
      comm_alive_(std::move(o.comm_alive_)),
      comm_(std::exchange(o.comm_, nullptr)),
      mhandle_(std::exchange(o.mhandle_, nullptr)),
      data_(o.data_),
      size_bytes_(o.size_bytes_),
      type_(o.type_) {}

MemRegion& MemRegion::operator=(MemRegion&& o) noexcept {
  if (this != &o) {
    reset();
    plugin_ = std::move(o.plugin_);
    comm_alive_ = std::move(o.comm_alive_);
    comm_ = std::exchange(o.comm_, nullptr);
    mhandle_ = std::exchange(o.mhandle_, nullptr);
    data_ = o.data_;
    size_bytes_ = o.size_bytes_;
    type_ = o.type_;
  }
  return *this;
}

MemRegion::~MemRegion() { reset(); }

void MemRegion::reset() noexcept {
  if (mhandle_ && plugin_) {
    if (comm_alive_.expired()) {
      detail::log_note("INFO p2pscope: a memory region outlived its comm; deregMr skipped");
    } else if (impl_of(plugin_).ops->dereg_mr(comm_, mhandle_) != abi::kSuccess) {
      detail::log_note("WARN p2pscope: deregMr failed");
    }
  }
  mhandle_ = nullptr;
  comm_ = nullptr;
  plugin_.reset();
}

// ---- CommBase ------------------------------------------------------------------
CommBase::CommBase(CommBase&& o) noexcept
    : plugin_(std::move(o.plugin_)),
      alive_(std::move(o.alive_)),
      comm_(std::exchange(o.comm_, nullptr)),
      dev_(o.dev_),
      next_seq_(o.next_seq_),
      queue_(std::move(o.queue_)),
      last_done_(o.last_done_) {}

CommBase& CommBase::operator=(CommBase&& o) noexcept {
  plugin_ = std::move(o.plugin_);
  alive_ = std::move(o.alive_);
  comm_ = std::exchange(o.comm_, nullptr);
  dev_ = o.dev_;
  next_seq_ = o.next_seq_;
  queue_ = std::move(o.queue_);
  last_done_ = o.last_done_;
  return *this;
}

MemRegion CommBase::reg_mr(void* data, std::size_t size_bytes, MemType type) {
  if (!comm_) throw UsageError("net plugin: reg_mr on a closed comm");
  auto& I = impl_of(plugin_);
  const DeviceProps& d = plugin_->device(dev_);
  const int need = type == MemType::cuda ? kPtrCuda : kPtrHost;
  if (!(d.ptr_support & need))
    throw UsageError(fmt::format("{}: device {} ({}) cannot register {} memory: it offers {} memory only "
                                 "(ptrSupport {})", I.describe(), dev_, d.name, mem_name(type),
                                 ptr_support_text(d.ptr_support), d.ptr_support));
  if (size_bytes > I.ops->max_call_bytes && I.ops->version < 8)
    throw UsageError(fmt::format("{}: regMr of {} bytes: ABI v{} carries at most {} bytes per region",
                                 I.describe(), size_bytes, I.ops->version, I.ops->max_call_bytes));
  void* mh = nullptr;
  I.check(I.ops->reg_mr(comm_, data, size_bytes, need, &mh),
          fmt::format("regMr({} bytes of {} memory at {})", size_bytes, mem_name(type), data),
          reinterpret_cast<std::uintptr_t>(data) % 4096
              ? "the buffer is not 4 KiB aligned, which some plugins (TCPX) require"
              : "");
  return MemRegion(plugin_, alive_, comm_, mh, data, size_bytes, type);
}

MemRegion CommBase::reg_mr_dmabuf(void* data, std::size_t size_bytes, MemType type, std::uint64_t offset, int fd) {
  if (!comm_) throw UsageError("net plugin: reg_mr_dmabuf on a closed comm");
  auto& I = impl_of(plugin_);
  const DeviceProps& d = plugin_->device(dev_);
  if (!(d.ptr_support & kPtrDmabuf) || !I.ops->has_dmabuf())
    throw UsageError(fmt::format("{}: device {} ({}) does not take DMA-BUF registrations: it offers {}",
                                 I.describe(), dev_, d.name, ptr_support_text(d.ptr_support)));
  void* mh = nullptr;
  const int t = type == MemType::cuda ? kPtrCuda : kPtrHost;
  I.check(I.ops->reg_mr_dmabuf(comm_, data, size_bytes, t, offset, fd, &mh),
          fmt::format("regMrDmaBuf({} bytes, fd {}, offset {})", size_bytes, fd, offset));
  return MemRegion(plugin_, alive_, comm_, mh, data, size_bytes, type);
}

void* CommBase::device_mr(const MemRegion& mr) {
  auto& I = impl_of(plugin_);
  void* dptr = nullptr;
  I.check(I.ops->get_device_mr(comm_, mr.mhandle(), &dptr), "getDeviceMr");
  return dptr;
}

std::optional<Request> CommBase::oldest() const {
  if (queue_.empty()) return std::nullopt;
  return queue_.front();
}

bool CommBase::test_front(std::deque<Request>& q, const char* call, bool receive) {
  if (q.empty()) throw UsageError(fmt::format("{}: {} with no outstanding request", plugin_->describe(), call));
  auto& I = impl_of(plugin_);
  int done = 0;
  int size = kSizeNotReported;  // a plugin may leave it unset (Fast Socket does)
  Request& r = q.front();
  if (const abi::Result res = I.ops->test(r.raw, &done, &size); res != abi::kSuccess)
    throw Error(I.failure(fmt::format("{}(request #{} of {} bytes)", call, r.seq, r.size_bytes), res));
  if (!done) return false;
  r.reported_bytes = size;
  last_done_ = r;
  q.pop_front();
  if (receive) on_complete(*last_done_);
  return true;
}

bool CommBase::test_oldest() { return test_front(queue_, "test", true); }

bool CommBase::test(const Request& r) {
  if (queue_.empty() || queue_.front().seq != r.seq || queue_.front().raw != r.raw)
    throw UsageError(fmt::format("{}: test(request #{}) refused: only the oldest outstanding request of a comm "
                                 "may be tested{}", plugin_->describe(), r.seq,
                                 queue_.empty() ? " (none is outstanding)"
                                                : fmt::format(" (that is #{})", queue_.front().seq)));
  return test_oldest();
}

// ---- SendComm ------------------------------------------------------------------
SendComm::~SendComm() { close(); }

SendComm& SendComm::operator=(SendComm&& o) noexcept {
  if (this != &o) {
    close();
    CommBase::operator=(std::move(o));
  }
  return *this;
}

std::optional<Request> SendComm::isend(const void* data, std::size_t size_bytes, const MemRegion& mr, int tag) {
  if (!comm_) throw UsageError("net plugin: isend on a closed comm");
  auto& I = impl_of(plugin_);
  if (size_bytes > I.ops->max_call_bytes || size_bytes > plugin_->device(dev_).max_p2p_bytes)
    throw UsageError(fmt::format("{}: isend of {} bytes exceeds what one call carries ({} bytes): use smaller "
                                 "chunks", I.describe(), size_bytes,
                                 std::min<std::uint64_t>(I.ops->max_call_bytes, plugin_->device(dev_).max_p2p_bytes)));
  void* req = nullptr;
  // The call's name is formatted only when it failed: per request it was an allocation.
  if (const abi::Result res = I.ops->isend(comm_, const_cast<void*>(data), size_bytes, tag, mr.mhandle(), &req);
      res != abi::kSuccess)
    throw Error(I.failure(fmt::format("isend(request #{} of {} bytes)", next_seq_, size_bytes), res));
  if (!req) return std::nullopt;
  Request r{req, next_seq_++, size_bytes, const_cast<void*>(data)};
  queue_.push_back(r);
  return r;
}

void SendComm::close() noexcept {
  if (!comm_) return;
  auto& I = impl_of(plugin_);
  // Outstanding requests die with the comm: plugins free them in closeSend.
  if (I.ops->close_send(comm_) != abi::kSuccess) detail::log_note("WARN p2pscope: closeSend failed");
  alive_.reset();  // regions of the closed comm see theirs expire
  comm_ = nullptr;
  queue_.clear();
  plugin_.reset();
}

// ---- RecvComm ------------------------------------------------------------------
RecvComm::RecvComm(RecvComm&& o) noexcept
    : CommBase(std::move(o)),
      flushes_(std::move(o.flushes_)),
      to_consume_(std::move(o.to_consume_)),
      dev_handle_(std::exchange(o.dev_handle_, nullptr)),
      unpack_head_(o.unpack_head_) {}

RecvComm& RecvComm::operator=(RecvComm&& o) noexcept {
  if (this != &o) {
    close();
    CommBase::operator=(std::move(o));
    flushes_ = std::move(o.flushes_);
    to_consume_ = std::move(o.to_consume_);
    dev_handle_ = std::exchange(o.dev_handle_, nullptr);
    unpack_head_ = o.unpack_head_;
  }
  return *this;
}

RecvComm::~RecvComm() { close(); }

std::optional<Request> RecvComm::irecv(void* data, std::size_t size_bytes, const MemRegion& mr, int tag) {
  if (!comm_) throw UsageError("net plugin: irecv on a closed comm");
  auto& I = impl_of(plugin_);
  if (size_bytes > I.ops->max_call_bytes || size_bytes > plugin_->device(dev_).max_p2p_bytes)
    throw UsageError(fmt::format("{}: irecv of {} bytes exceeds what one call carries: use smaller chunks",
                                 I.describe(), size_bytes));
  void* req = nullptr;
  if (const abi::Result res = I.ops->irecv(comm_, data, size_bytes, tag, mr.mhandle(), &req); res != abi::kSuccess)
    throw Error(I.failure(fmt::format("irecv(request #{} of {} bytes)", next_seq_, size_bytes), res));
  if (!req) return std::nullopt;
  Request r{req, next_seq_++, size_bytes, data};
  queue_.push_back(r);
  return r;
}

bool RecvComm::unpack() const { return dev_handle_ != nullptr; }

// test_oldest is CommBase's; UNPACK receives also enter the to-consume queue.
void RecvComm::on_complete(const Request& r) {
  if (dev_handle_) to_consume_.push_back(r);
}

std::optional<Request> RecvComm::iflush(void* data, std::size_t size_bytes, const MemRegion& mr) {
  auto& I = impl_of(plugin_);
  void* req = nullptr;
  I.check(I.ops->iflush(comm_, data, static_cast<int>(std::min<std::size_t>(size_bytes, INT32_MAX)), mr.mhandle(),
                        &req), fmt::format("iflush({} bytes)", size_bytes));
  if (!req) return std::nullopt;
  Request r{req, next_seq_++, size_bytes, data};
  flushes_.push_back(r);
  return r;
}

bool RecvComm::test_flush() { return test_front(flushes_, "test(flush)", false); }

UnpackView RecvComm::unpack_view() const {
  if (!dev_handle_) throw UsageError(plugin_->describe() + ": unpack_view on a device that is not of UNPACK type");
  if (to_consume_.empty()) throw UsageError(plugin_->describe() + ": unpack_view with no completed receive to consume");
  auto* dh = static_cast<abi::DeviceHandle*>(dev_handle_);
  auto* uh = static_cast<abi::UnpackDevHandle*>(dh->handle);
  if (!uh || !uh->meta) throw Error(plugin_->describe() + ": accept gave no UNPACK device handle");
  const std::size_t slot = unpack_head_ % abi::kUnpackQueueDepth;
  UnpackView v;
  v.pieces = reinterpret_cast<const UnpackPiece*>(uh->meta->mem[slot]);
  v.count = uh->meta->cnt[slot];
  v.bounce = uh->bounce_buf;
  return v;
}

void RecvComm::irecv_consumed() {
  if (to_consume_.empty()) throw UsageError(plugin_->describe() + ": irecv_consumed with no completed receive");
  auto& I = impl_of(plugin_);
  Request r = to_consume_.front();
  I.check(I.ops->irecv_consumed(comm_, r.raw), fmt::format("irecvConsumed(request #{})", r.seq));
  to_consume_.pop_front();
  ++unpack_head_;
}

void RecvComm::close() noexcept {
  if (!comm_) return;
  auto& I = impl_of(plugin_);
  if (I.ops->close_recv(comm_) != abi::kSuccess) detail::log_note("WARN p2pscope: closeRecv failed");
  alive_.reset();
  comm_ = nullptr;
  queue_.clear();
  flushes_.clear();
  to_consume_.clear();
  delete static_cast<abi::DeviceHandle*>(dev_handle_);
  dev_handle_ = nullptr;
  plugin_.reset();
}

// ---- ListenComm ----------------------------------------------------------------
ListenComm::ListenComm(ListenComm&& o) noexcept
    : plugin_(std::move(o.plugin_)), comm_(std::exchange(o.comm_, nullptr)), dev_(o.dev_), handle_(o.handle_) {}

ListenComm& ListenComm::operator=(ListenComm&& o) noexcept {
  if (this != &o) {
    close();
    plugin_ = std::move(o.plugin_);
    comm_ = std::exchange(o.comm_, nullptr);
    dev_ = o.dev_;
    handle_ = o.handle_;
  }
  return *this;
}

ListenComm::~ListenComm() { close(); }

void ListenComm::close() noexcept {
  if (!comm_) return;
  if (plugin_->impl().ops->close_listen(comm_) != abi::kSuccess) detail::log_note("WARN p2pscope: closeListen failed");
  comm_ = nullptr;
  plugin_.reset();
}

}  // namespace p2pscope::net
