// Rank 0 announces each collective call (as a small JSON command) before making it;
// the serving ranks make the same call. Local calls (names, counts, support) need no
// announcement: every rank answers them alike from what it learnt at construction.
#include "bench/driven_backend.hpp"

#include <mutex>

#include <nlohmann/json.hpp>

#include "p2pscope/bounded_json.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/text.hpp"

namespace p2pscope::bench {
namespace {

using nlohmann::json;

// The optional parts (timer, heater) are offered exactly when the wrapped backend offers
// them; privately inherited, so callers reach them only through the accessors.
class DrivenBackend final : public Backend, DeviceTimer, Heater {
 public:
  DrivenBackend(std::unique_ptr<Backend> inner, std::shared_ptr<Bootstrap> boot)
      : inner_(std::move(inner)), boot_(std::move(boot)) {}
  ~DrivenBackend() override {
    std::lock_guard<std::mutex> lk(m_);
    try {
      announce({{"call", "stop"}});
    } catch (...) {  // a rank already gone: nothing left to tell it
    }
  }

  std::string name() const override { return inner_->name(); }
  BackendCaps capabilities() const override { return inner_->capabilities(); }
  int device_count() const override { return inner_->device_count(); }
  std::string device_name(int d) const override { return inner_->device_name(d); }
  PairSupport support(int s, int d) const override { return inner_->support(s, d); }
  DeviceLocation device_location(int d) const override { return inner_->device_location(d); }

  void prepare(const std::vector<int>& devices, std::uint64_t max_bytes) override {
    std::lock_guard<std::mutex> lk(m_);
    announce({{"call", "prepare"}, {"devices", devices}, {"max_bytes", max_bytes}});
    inner_->prepare(devices, max_bytes);
  }
  BatchResult run_batch(const BatchSpec& s) override {
    std::lock_guard<std::mutex> lk(m_);
    announce({{"call", "run_batch"}, {"src", s.src}, {"dst", s.dst}, {"bytes", s.bytes},
              {"pattern", to_string(s.pattern)}, {"warmup", s.warmup}, {"iters", s.iters}});
    return inner_->run_batch(s);
  }
  OpTiming run_blocking(int src, int dst, std::uint64_t bytes) override {
    std::lock_guard<std::mutex> lk(m_);
    announce({{"call", "run_blocking"}, {"src", src}, {"dst", dst}, {"bytes", bytes}});
    return inner_->run_blocking(src, dst, bytes);
  }
  // One announcement for the whole batch (Backend's default would announce each op).
  OpTiming run_blocking_batch(int src, int dst, std::uint64_t bytes, int count) override {
    std::lock_guard<std::mutex> lk(m_);
    announce({{"call", "run_blocking_batch"}, {"src", src}, {"dst", dst}, {"bytes", bytes}, {"count", count}});
    return inner_->run_blocking_batch(src, dst, bytes, count);
  }
  int clock_device(int src, int dst) const override { return inner_->clock_device(src, dst); }
  std::int64_t verify(int src, int dst, std::uint64_t bytes) override {
    std::lock_guard<std::mutex> lk(m_);
    announce({{"call", "verify"}, {"src", src}, {"dst", dst}, {"bytes", bytes}});
    return inner_->verify(src, dst, bytes);
  }
  DeviceTimer* device_timer() override { return inner_->device_timer() ? this : nullptr; }
  Heater* heater() override { return inner_->heater() ? this : nullptr; }

 private:
  TimerReading read_device_timer(int device) override {
    std::lock_guard<std::mutex> lk(m_);
    announce({{"call", "read_device_timer"}, {"device", device}});
    return inner_->device_timer()->read_device_timer(device);
  }
  TimerBurst read_device_timer_burst(int device, int count) override {
    std::lock_guard<std::mutex> lk(m_);
    announce({{"call", "read_device_timer_burst"}, {"device", device}, {"count", count}});
    return inner_->device_timer()->read_device_timer_burst(device, count);
  }
  void busy_compute(int device, double seconds) override {
    std::lock_guard<std::mutex> lk(m_);
    announce({{"call", "busy_compute"}, {"device", device}, {"seconds", seconds}});
    inner_->heater()->busy_compute(device, seconds);
  }

  // Callers hold m_: an announcement and its collective call must not interleave
  // with another thread's (their frames would mix on the bootstrap's sockets).
  void announce(const json& cmd) { boot_->broadcast(0, cmd.dump()); }

  std::unique_ptr<Backend> inner_;
  std::shared_ptr<Bootstrap> boot_;
  std::mutex m_;
};

}  // namespace

std::unique_ptr<Backend> make_driven_backend(std::unique_ptr<Backend> inner, std::shared_ptr<Bootstrap> boot) {
  if (!boot || boot->rank() != 0) throw Error("make_driven_backend: only rank 0 drives; the other ranks serve_backend()");
  return std::make_unique<DrivenBackend>(std::move(inner), std::move(boot));
}

namespace {
// The serving rank's part that rank 0 asked for: rank 0 announces a part's calls only
// when its backend offers it, and every rank runs the same backend.
template <class Part>
Part& part(Part* p, const std::string& call) {
  if (!p) throw Error("rank 0 asked for '" + call + "', which this rank's backend does not offer: use the same backend on every rank");
  return *p;
}
}  // namespace

namespace {
// One command of rank 0's; false at "stop". Its fields convert implicitly and throw
// nlohmann's type_error when they are not of their types (serve_backend names it).
bool serve_command(Backend& b, const json& c) {
  const std::string call = c.at("call");
  if (call == "stop") return false;
  if (call == "prepare") {
    b.prepare(c.at("devices").get<std::vector<int>>(), c.at("max_bytes"));
  } else if (call == "run_batch") {
    BatchSpec s;
    s.src = c.at("src");
    s.dst = c.at("dst");
    s.bytes = c.at("bytes");
    s.pattern = parse_pattern(c.at("pattern"));
    s.warmup = c.at("warmup");
    s.iters = c.at("iters");
    b.run_batch(s);
  } else if (call == "run_blocking") {
    b.run_blocking(c.at("src"), c.at("dst"), c.at("bytes"));
  } else if (call == "run_blocking_batch") {
    b.run_blocking_batch(c.at("src"), c.at("dst"), c.at("bytes"), c.at("count"));
  } else if (call == "verify") {
    b.verify(c.at("src"), c.at("dst"), c.at("bytes"));
  } else if (call == "read_device_timer") {
    part(b.device_timer(), call).read_device_timer(c.at("device"));
  } else if (call == "read_device_timer_burst") {
    part(b.device_timer(), call).read_device_timer_burst(c.at("device"), c.at("count"));
  } else if (call == "busy_compute") {
    part(b.heater(), call).busy_compute(c.at("device"), c.at("seconds"));
  } else {
    throw Error("rank 0 asked for '" + external_text(call, 100) +
                "', which this p2pscope does not know: use the same binary on every rank");
  }
  return true;
}
}  // namespace

void serve_backend(Backend& b, Bootstrap& boot) {
  for (;;) {
    const std::string text = boot.broadcast(0, std::string());
    // Rank 0's bytes: without P2PSCOPE_TOKEN a process squatting the rendezvous port may
    // be rank 0 to this rank. Bounded, and its fields typed, or a usage error (issue 43
    // item 4), never nlohmann's type_error as "internal error".
    JsonLimits limits;
    limits.max_bytes = 1u << 20;
    limits.max_depth = 2;
    const BoundedJson c = parse_json_bounded(text, limits);
    if (!c.ok() || !c.value.is_object() || !c.value.contains("call"))
      throw Error("rank 0 sent a command that is not one: not the same p2pscope?");
    try {
      if (!serve_command(b, c.value)) return;
    } catch (const json::exception& e) {
      throw UsageError("rank 0 sent a command whose fields are not of their types (" + external_text(e.what(), 200) +
                       "): not this run's p2pscope rank 0 (another process on the rendezvous port? set the same "
                       "P2PSCOPE_TOKEN on every rank)");
    }
  }
}

}  // namespace p2pscope::bench
