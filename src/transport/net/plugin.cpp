// Loading a plugin: pick the ABI version, init, read devices; listen/connect/accept.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "p2pscope/text.hpp"
#include "transport/net/loader.hpp"
#include "transport/net/plugin_impl.hpp"

namespace p2pscope::net {

std::string to_string(DeviceType t) {
  switch (t) {
    case DeviceType::host: return "host";
    case DeviceType::unpack: return "unpack";
    case DeviceType::gin_proxy: return "gin-proxy";
    case DeviceType::gin_gdaki: return "gin-gdaki";
  }
  return fmt::format("type-{}", static_cast<int>(t));
}

std::string ptr_support_text(int bits) {
  std::vector<std::string> v;
  if (bits & kPtrHost) v.emplace_back("host");
  if (bits & kPtrCuda) v.emplace_back("cuda");
  if (bits & kPtrDmabuf) v.emplace_back("dmabuf");
  return v.empty() ? "none" : fmt::format("{}", fmt::join(v, ","));
}

std::vector<std::string> nccl_plugin_candidates(const std::string& v) { return detail::candidates_for(v); }

std::string Plugin::Impl::describe() const {
  return fmt::format("net plugin '{}' v{} ({})", ops ? ops->name : "?", ops ? ops->version : 0, path);
}

std::string Plugin::Impl::failure(const std::string& call, int result, const std::string& detail) const {
  std::string s = fmt::format("{}: {} failed: {} ({})", describe(), call, abi::result_name(result), result);
  if (!detail.empty()) s += ": " + detail;
  auto warns = detail::log_since(log_mark, /*warn_only=*/true);
  if (!warns.empty()) {
    std::size_t from = warns.size() > 8 ? warns.size() - 8 : 0;
    s += "\n  plugin log:";
    for (std::size_t i = from; i < warns.size(); ++i) s += "\n    " + warns[i];
  }
  return s;
}

Plugin::Plugin(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Plugin::~Plugin() {
  if (impl_->ops && impl_->initialised) {
    if (impl_->ops->finalize() != abi::kSuccess) detail::log_note("WARN p2pscope: finalize failed");
  }
  impl_->ops.reset();
  if (impl_->dl) dlclose(impl_->dl);
}

std::shared_ptr<Plugin> Plugin::load(const LoadOptions& opt) {
  if (opt.min_version > opt.max_version)
    throw UsageError(fmt::format("net plugin versions: min v{} > max v{}", opt.min_version, opt.max_version));
  std::string request = opt.plugin;
  if (request.empty()) {
    if (const char* e = std::getenv("NCCL_NET_PLUGIN")) request = e;
  }
  if (request == "none")
    throw UsageError("NCCL_NET_PLUGIN=none: NCCL would use its internal transports; pass --plugin PATH");
  // NCCL 2.28 accepts a comma-separated list and takes the first that loads.
  const std::vector<std::string> list = split_fields(request, ',');
  detail::OpenedLib lib;
  std::string errors;
  for (const auto& item : list) {
    try {
      lib = detail::open_plugin_file(item);
      break;
    } catch (const Error& e) {
      errors += (errors.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (!lib.dl) throw Error(errors);

  auto impl = std::make_unique<Impl>();
  impl->dl = lib.dl;
  impl->path = lib.path;
  impl->exported = lib.versions;
  impl->log_mark = detail::log_mark();
  std::shared_ptr<Plugin> p(new Plugin(std::move(impl)));  // dlcloses on any throw below
  Impl& I = *p->impl_;

  int chosen = 0;
  for (int v = std::min(opt.max_version, kMaxAbiVersion); v >= std::max(opt.min_version, kMinAbiVersion); --v) {
    if (std::find(I.exported.begin(), I.exported.end(), v) != I.exported.end()) {
      chosen = v;
      break;
    }
  }
  if (!chosen) {
    if (I.exported.empty())
      throw Error(fmt::format("net plugin {}: exports no ncclNetPlugin_vN symbol: not an NCCL net plugin "
                              "(a tuner or profiler plugin, or a library of another kind?)", I.path));
    std::vector<std::string> names;
    for (int v : I.exported) names.push_back(fmt::format("ncclNetPlugin_v{}", v));
    throw Error(fmt::format("net plugin {}: exports only {}, none in v{}..v{} (the versions NCCL 2.28 loads{}); "
                            "use a build of the plugin for a matching NCCL release",
                            I.path, fmt::join(names, ", "), std::max(opt.min_version, kMinAbiVersion),
                            std::min(opt.max_version, kMaxAbiVersion),
                            opt.max_version < kMaxAbiVersion || opt.min_version > kMinAbiVersion ? ", as limited" : ""));
  }
  I.watch = std::make_unique<detail::CallWatch>(fmt::format("net plugin {}", I.path));
  I.ops = detail::watched(detail::make_ops(chosen, detail::plugin_symbol(I.dl, chosen)), *I.watch);
  I.check(I.ops->init(detail::plugin_logger), "init");
  I.initialised = true;
  int n = 0;
  I.check(I.ops->devices(&n), "devices");
  if (n <= 0)
    throw Error(I.failure("devices", 0, fmt::format("{} devices: the plugin found no usable NIC (check its "
                                                    "interface variables, e.g. NCCL_SOCKET_IFNAME, and its log)", n)));
  for (int d = 0; d < n; ++d) {
    DeviceProps dp;
    I.check(I.ops->properties(d, &dp), fmt::format("getProperties(dev {})", d));
    I.devs.push_back(std::move(dp));
  }
  return p;
}

const std::string& Plugin::path() const { return impl_->path; }

std::shared_ptr<void> Plugin::watch_calls(CallLimits limits) {
  if (!limits.on_hung)  // a library user gave no way out: say why, then end (the thread is stuck for good)
    limits.on_hung = [](const std::string& why) {
      std::fprintf(stderr, "p2pscope: %s\n", why.c_str());
      std::abort();
    };
  return impl_->watch->arm(std::move(limits));
}
const std::string& Plugin::name() const { return impl_->ops->name; }
int Plugin::version() const { return impl_->ops->version; }
std::vector<int> Plugin::exported_versions() const { return impl_->exported; }
const std::vector<DeviceProps>& Plugin::devices() const { return impl_->devs; }
std::string Plugin::describe() const { return impl_->describe(); }
std::vector<std::string> Plugin::log() const { return detail::log_since(impl_->log_mark, false); }

const DeviceProps& Plugin::device(int dev) const {
  if (dev < 0 || dev >= static_cast<int>(impl_->devs.size()))
    throw UsageError(fmt::format("{}: device {} out of range (it has {})", describe(), dev, impl_->devs.size()));
  return impl_->devs[static_cast<std::size_t>(dev)];
}

ListenComm Plugin::listen(int dev) {
  device(dev);
  ListenComm lc;
  void* comm = nullptr;
  impl_->check(impl_->ops->listen(dev, lc.handle_.data(), &comm), fmt::format("listen(dev {})", dev));
  if (!comm) throw Error(impl_->failure(fmt::format("listen(dev {})", dev), 0, "returned no listen comm"));
  lc.plugin_ = shared_from_this();
  lc.comm_ = comm;
  lc.dev_ = dev;
  return lc;
}

namespace {
// Between tries of a connect/accept that is not ready: yield first, then sleep a
// little so that a slow peer does not cost a core.
void backoff(int tries) {
  if (tries < 100) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(200));
}
}  // namespace

std::optional<SendComm> Plugin::try_connect(int dev, NetHandle& handle) {
  device(dev);
  void* comm = nullptr;
  abi::DeviceHandle* dh = nullptr;  // NCCL asks no send-side offload, even for UNPACK
  impl_->check(impl_->ops->connect(dev, handle.data(), &comm, &dh), fmt::format("connect(dev {})", dev));
  if (!comm) return std::nullopt;
  SendComm sc;
  sc.plugin_ = shared_from_this();
  sc.comm_ = comm;
  sc.dev_ = dev;
  return sc;
}

SendComm Plugin::connect(int dev, const NetHandle& handle, Deadline deadline) {
  NetHandle h = handle;  // plugins write connection state into the handle
  for (int tries = 0;; ++tries) {
    if (auto sc = try_connect(dev, h)) return std::move(*sc);
    if (Clock::now() > deadline)
      throw Error(impl_->failure(fmt::format("connect(dev {})", dev), abi::kInProgress,
                                 "the peer did not accept before the deadline"));
    backoff(tries);
  }
}

std::optional<RecvComm> Plugin::try_accept(ListenComm& listener) {
  if (!listener.comm_) throw UsageError(describe() + ": accept on a closed listen comm");
  const int dev = listener.dev_;
  std::unique_ptr<abi::DeviceHandle> dh;
  if (device(dev).device_type == DeviceType::unpack) {
    // As NCCL: the receiver offers a handle of the device's type; the plugin fills it.
    dh = std::make_unique<abi::DeviceHandle>();
    dh->type = abi::kDevUnpack;
    dh->version = device(dev).device_version;
  }
  abi::DeviceHandle* dhp = dh.get();
  void* comm = nullptr;
  impl_->check(impl_->ops->accept(listener.comm_, &comm, &dhp), fmt::format("accept(dev {})", dev));
  if (!comm) return std::nullopt;
  RecvComm rc;
  rc.plugin_ = shared_from_this();
  rc.comm_ = comm;
  rc.dev_ = dev;
  rc.dev_handle_ = dh.release();
  return rc;
}

RecvComm Plugin::accept(ListenComm& listener, Deadline deadline) {
  for (int tries = 0;; ++tries) {
    if (auto rc = try_accept(listener)) return std::move(*rc);
    if (Clock::now() > deadline)
      throw Error(impl_->failure(fmt::format("accept(dev {})", listener.dev_), abi::kInProgress,
                                 "no peer connected before the deadline"));
    backoff(tries);
  }
}

}  // namespace p2pscope::net
