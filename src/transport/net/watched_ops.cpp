// Ops that mark every call into the plugin in a CallWatch: the watchdog sees which call
// of which thread has not returned (transport/net/call_watch.hpp says why).
#include "transport/net/call_watch.hpp"
#include "transport/net/ops.hpp"

namespace p2pscope::net::detail {
namespace {

class WatchedOps final : public Ops {
 public:
  WatchedOps(std::unique_ptr<Ops> inner, CallWatch& w) : in_(std::move(inner)), w_(w) {
    version = in_->version;
    name = in_->name;
    max_call_bytes = in_->max_call_bytes;
  }
  using R = abi::Result;
  R init(abi::Logger log) override { return in(&Ops::init, "init", log); }
  R finalize() override { return in(&Ops::finalize, "finalize"); }
  R devices(int* n) override { return in(&Ops::devices, "devices", n); }
  R properties(int dev, DeviceProps* out) override { return in(&Ops::properties, "getProperties", dev, out); }
  R listen(int dev, void* h, void** lc) override { return in(&Ops::listen, "listen", dev, h, lc); }
  R connect(int dev, void* h, void** sc, abi::DeviceHandle** dh) override {
    return in(&Ops::connect, "connect", dev, h, sc, dh);
  }
  R accept(void* lc, void** rc, abi::DeviceHandle** dh) override { return in(&Ops::accept, "accept", lc, rc, dh); }
  R reg_mr(void* c, void* d, std::size_t n, int t, void** mh) override {
    return in(&Ops::reg_mr, "regMr", c, d, n, t, mh);
  }
  R reg_mr_dmabuf(void* c, void* d, std::size_t n, int t, std::uint64_t off, int fd, void** mh) override {
    return in(&Ops::reg_mr_dmabuf, "regMrDmaBuf", c, d, n, t, off, fd, mh);
  }
  R dereg_mr(void* c, void* mh) override { return in(&Ops::dereg_mr, "deregMr", c, mh); }
  R isend(void* c, void* d, std::size_t n, int tag, void* mh, void** rq) override {
    return in(&Ops::isend, "isend", c, d, n, tag, mh, rq);
  }
  R irecv(void* c, void* d, std::size_t n, int tag, void* mh, void** rq) override {
    return in(&Ops::irecv, "irecv", c, d, n, tag, mh, rq);
  }
  R iflush(void* c, void* d, int n, void* mh, void** rq) override { return in(&Ops::iflush, "iflush", c, d, n, mh, rq); }
  R test(void* rq, int* done, int* size) override { return in(&Ops::test, "test", rq, done, size); }
  R close_send(void* c) override { return in(&Ops::close_send, "closeSend", c); }
  R close_recv(void* c) override { return in(&Ops::close_recv, "closeRecv", c); }
  R close_listen(void* c) override { return in(&Ops::close_listen, "closeListen", c); }
  bool has_dmabuf() const override { return in_->has_dmabuf(); }
  bool has_device_mr() const override { return in_->has_device_mr(); }
  R get_device_mr(void* c, void* mh, void** p) override { return in(&Ops::get_device_mr, "getDeviceMr", c, mh, p); }
  R irecv_consumed(void* c, void* rq) override { return in(&Ops::irecv_consumed, "irecvConsumed", c, rq); }

 private:
  template <class F, class... A>
  R in(F f, const char* call, A... a) {
    const CallWatch::Guard g(w_, call);
    return ((*in_).*f)(a...);
  }
  std::unique_ptr<Ops> in_;
  CallWatch& w_;
};

}  // namespace

std::unique_ptr<Ops> watched(std::unique_ptr<Ops> inner, CallWatch& w) {
  return std::make_unique<WatchedOps>(std::move(inner), w);
}

}  // namespace p2pscope::net::detail
