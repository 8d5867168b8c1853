// The version adapters: one template over the six vtables, `if constexpr` where the
// ABI changed (v7 device offload, v8 size_t regMr, v9 size_t isend/irecv and vNICs,
// v10 profiler and comm config, v11 init context).
#include "transport/net/ops.hpp"

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <deque>
#include <mutex>

#include <fmt/format.h>

#include "p2pscope/text.hpp"

namespace p2pscope::net::detail {
namespace {

// A plugin's strings (its name, device names and PCI paths, log lines) are a third
// party's bytes: made safe to print where they enter, at a length no real one nears.
constexpr std::size_t kPluginTextBytes = 4096;
std::string plugin_text(const char* s, const char* none) { return external_text(s ? s : none, kPluginTextBytes); }

// Profiler callback for v10/v11: we record no plugin events; report "no event".
extern "C" abi::Result noop_profiler(void** event, int, void*, std::int64_t, void*) {
  if (event) *event = nullptr;
  return abi::kSuccess;
}

template <class Net, class Props, int V>
class OpsT final : public Ops {
 public:
  explicit OpsT(const Net* t) : t_(t) {
    version = V;
    name = plugin_text(t->name, "(unnamed)");
    if constexpr (V < 9) max_call_bytes = INT_MAX;
  }

  abi::Result init(abi::Logger log) override {
    if constexpr (V >= 11) {
      abi::CommConfig cfg{abi::kTrafficClassUndef};
      return t_->init(&ctx_, /*comm_id=*/0, &cfg, log, noop_profiler);
    } else if constexpr (V == 10) {
      return t_->init(log, noop_profiler);
    } else {
      return t_->init(log);
    }
  }
  abi::Result finalize() override {
    if constexpr (V >= 11) {
      if (t_->finalize) return t_->finalize(ctx_);
    }
    return abi::kSuccess;
  }
  abi::Result devices(int* n) override { return t_->devices(n); }

  abi::Result properties(int dev, DeviceProps* out) override {
    Props p{};
    abi::Result r = t_->get_properties(dev, &p);
    if (r != abi::kSuccess) return r;
    out->index = dev;
    out->name = plugin_text(p.name, "");
    out->pci_path = plugin_text(p.pci_path, "");
    out->guid = p.guid;
    out->ptr_support = p.ptr_support;
    out->speed_mbps = p.speed;
    out->port = p.port;
    out->latency_us = p.latency;
    out->max_comms = p.max_comms;
    out->max_recvs = p.max_recvs;
    if constexpr (V >= 7) {
      out->device_type = static_cast<DeviceType>(p.net_device_type);
      out->device_version = p.net_device_version;
    }
    if constexpr (V >= 8) out->reg_is_global = p.reg_is_global != 0;
    if constexpr (V >= 9) {
      out->force_flush = p.force_flush != 0;
      out->vdevs.assign(p.vprops.devs, p.vprops.devs + std::min(std::max(p.vprops.ndevs, 0), abi::kMaxDevsPerVNic));
      out->max_p2p_bytes = p.max_p2p_bytes;
      out->max_coll_bytes = p.max_coll_bytes;
    }
    if constexpr (V >= 11) out->max_multi_request_size = p.max_multi_request_size;
    return r;
  }

  abi::Result listen(int dev, void* handle, void** lc) override {
    if constexpr (V >= 11) return t_->listen(ctx_, dev, handle, lc);
    else return t_->listen(dev, handle, lc);
  }
  abi::Result connect(int dev, void* handle, void** sc, abi::DeviceHandle** dh) override {
    if constexpr (V >= 11) {
      return t_->connect(ctx_, dev, handle, sc, dh);
    } else if constexpr (V == 10) {
      abi::CommConfig cfg{abi::kTrafficClassUndef};
      return t_->connect(dev, &cfg, handle, sc, dh);
    } else if constexpr (V >= 7) {
      return t_->connect(dev, handle, sc, dh);
    } else {
      return t_->connect(dev, handle, sc);
    }
  }
  abi::Result accept(void* lc, void** rc, abi::DeviceHandle** dh) override {
    if constexpr (V >= 7) return t_->accept(lc, rc, dh);
    else return t_->accept(lc, rc);
  }
  abi::Result reg_mr(void* comm, void* data, std::size_t size, int type, void** mh) override {
    if constexpr (V >= 8) {
      return t_->reg_mr(comm, data, size, type, mh);
    } else {
      if (size > INT_MAX) return abi::kInvalidArgument;
      return t_->reg_mr(comm, data, static_cast<int>(size), type, mh);
    }
  }
  abi::Result reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type, std::uint64_t off, int fd,
                            void** mh) override {
    if (!t_->reg_mr_dmabuf) return abi::kInternalError;
    return t_->reg_mr_dmabuf(comm, data, size, type, off, fd, mh);
  }
  abi::Result dereg_mr(void* comm, void* mh) override { return t_->dereg_mr(comm, mh); }

  abi::Result isend(void* comm, void* data, std::size_t size, int tag, void* mh, void** req) override {
    if constexpr (V >= 10) {
      return t_->isend(comm, data, size, tag, mh, /*phandle=*/nullptr, req);
    } else if constexpr (V == 9) {
      return t_->isend(comm, data, size, tag, mh, req);
    } else {
      return t_->isend(comm, data, static_cast<int>(size), tag, mh, req);
    }
  }
  abi::Result irecv(void* comm, void* data, std::size_t size, int tag, void* mh, void** req) override {
    void* datas[1] = {data};
    int tags[1] = {tag};
    void* mhs[1] = {mh};
    if constexpr (V >= 9) {
      std::size_t sizes[1] = {size};
      if constexpr (V >= 10) {
        void* phs[1] = {nullptr};
        return t_->irecv(comm, 1, datas, sizes, tags, mhs, phs, req);
      } else {
        return t_->irecv(comm, 1, datas, sizes, tags, mhs, req);
      }
    } else {
      int sizes[1] = {static_cast<int>(size)};
      return t_->irecv(comm, 1, datas, sizes, tags, mhs, req);
    }
  }
  abi::Result iflush(void* comm, void* data, int size, void* mh, void** req) override {
    if (!t_->iflush) {
      *req = nullptr;
      return abi::kSuccess;
    }
    void* datas[1] = {data};
    int sizes[1] = {size};
    void* mhs[1] = {mh};
    return t_->iflush(comm, 1, datas, sizes, mhs, req);
  }
  abi::Result test(void* req, int* done, int* size) override { return t_->test(req, done, size); }
  abi::Result close_send(void* c) override { return t_->close_send(c); }
  abi::Result close_recv(void* c) override { return t_->close_recv(c); }
  abi::Result close_listen(void* c) override { return t_->close_listen(c); }
  bool has_dmabuf() const override { return t_->reg_mr_dmabuf != nullptr; }
  bool has_device_mr() const override {
    if constexpr (V >= 7) return t_->get_device_mr != nullptr;
    else return false;
  }
  abi::Result get_device_mr(void* comm, void* mh, void** dptr) override {
    if constexpr (V >= 7) {
      if (t_->get_device_mr) return t_->get_device_mr(comm, mh, dptr);
    }
    *dptr = nullptr;
    return abi::kSuccess;
  }
  abi::Result irecv_consumed(void* comm, void* req) override {
    if constexpr (V >= 7) {
      if (t_->irecv_consumed) return t_->irecv_consumed(comm, 1, req);
    }
    return abi::kSuccess;
  }

 private:
  const Net* t_;
  void* ctx_ = nullptr;  // v11 init context
};

// Log ring shared by every loaded plugin (see ops.hpp).
struct LogRing {
  std::mutex mu;
  std::deque<std::pair<std::uint64_t, std::string>> lines;
  std::uint64_t next = 0;
  void add(std::string s) {
    std::lock_guard lk(mu);
    lines.emplace_back(next++, std::move(s));
    while (lines.size() > 500) lines.pop_front();
  }
};
LogRing& ring() {
  static LogRing r;  // process-wide by necessity: the C logger has no context pointer
  return r;
}

}  // namespace

std::unique_ptr<Ops> make_ops(int version, const void* table) {
  switch (version) {
    case 6: return std::make_unique<OpsT<abi::NetV6, abi::PropsV6, 6>>(static_cast<const abi::NetV6*>(table));
    case 7: return std::make_unique<OpsT<abi::NetV7, abi::PropsV7, 7>>(static_cast<const abi::NetV7*>(table));
    case 8: return std::make_unique<OpsT<abi::NetV8, abi::PropsV8, 8>>(static_cast<const abi::NetV8*>(table));
    case 9: return std::make_unique<OpsT<abi::NetV9, abi::PropsV9, 9>>(static_cast<const abi::NetV9*>(table));
    case 10: return std::make_unique<OpsT<abi::NetV10, abi::PropsV10, 10>>(static_cast<const abi::NetV10*>(table));
    case 11: return std::make_unique<OpsT<abi::NetV11, abi::PropsV11, 11>>(static_cast<const abi::NetV11*>(table));
    default: throw UsageError(fmt::format("net plugin ABI v{} is not supported (v6..v11)", version));
  }
}

extern "C" void plugin_logger(abi::LogLevel level, unsigned long /*flags*/, const char* file, int line,
                              const char* fmtstr, ...) {
  if (level == abi::kLogNone || level == abi::kLogTrace || !fmtstr) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmtstr);
  std::vsnprintf(buf, sizeof buf, fmtstr, ap);
  va_end(ap);
  const char* lv = level == abi::kLogWarn ? "WARN" : level == abi::kLogAbort ? "ABORT" : "INFO";
  // vsnprintf cut the line at 1024 bytes, maybe inside a character.
  ring().add(external_text(fmt::format("{} {}:{} {}", lv, file ? file : "?", line, buf), kPluginTextBytes));
}

std::uint64_t log_mark() {
  std::lock_guard lk(ring().mu);
  return ring().next;
}

std::vector<std::string> log_since(std::uint64_t mark, bool warn_only) {
  std::vector<std::string> out;
  std::lock_guard lk(ring().mu);
  for (const auto& [seq, s] : ring().lines) {
    if (seq < mark) continue;
    if (warn_only && s.rfind("INFO", 0) == 0) continue;
    out.push_back(s);
  }
  return out;
}

void log_note(const std::string& line) { ring().add(line); }

}  // namespace p2pscope::net::detail
