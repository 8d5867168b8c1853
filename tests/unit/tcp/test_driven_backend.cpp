// Rank 0 drives, the other ranks serve: every collective call rank 0 makes reaches
// the serving ranks, with its arguments, in order; stop ends them; a vanished rank 0
// is an error, not a hang. Ranks are threads over the loopback TCP bootstrap.
#include <future>

#include <gtest/gtest.h>

#include "bench/driven_backend.hpp"
#include "p2pscope/error.hpp"
#include "support/loopback_port.hpp"

using namespace p2pscope;
using p2pscope::test::free_port;
using namespace p2pscope::bench;

namespace {

// A backend that records the calls it gets (a test double beside the real ones); it
// offers a timer and a heater unless told not to.
class Recorder final : public Backend, public DeviceTimer, public Heater {
 public:
  explicit Recorder(bool parts = true) : parts_(parts) {}
  std::vector<std::string> calls;
  std::string name() const override { return "recorder"; }
  // Says its own capabilities (outside the table): the driven wrapper must pass them on.
  BackendCaps capabilities() const override { return {.latency = true, .ranks = true}; }
  int device_count() const override { return 2; }
  std::string device_name(int d) const override { return "dev" + std::to_string(d); }
  PairSupport support(int, int) const override { return {}; }
  void prepare(const std::vector<int>& devs, std::uint64_t max) override {
    calls.push_back("prepare " + std::to_string(devs.size()) + " " + std::to_string(max));
  }
  BatchResult run_batch(const BatchSpec& s) override {
    calls.push_back("run_batch " + std::to_string(s.src) + ">" + std::to_string(s.dst) + " " + std::to_string(s.bytes) + " " +
                    to_string(s.pattern) + " " + std::to_string(s.warmup) + "/" + std::to_string(s.iters));
    BatchResult r;
    r.elapsed_ns = {1.0};
    return r;
  }
  OpTiming run_blocking(int s, int d, std::uint64_t n) override {
    calls.push_back("run_blocking " + std::to_string(s) + ">" + std::to_string(d) + " " + std::to_string(n));
    return {};
  }
  std::int64_t verify(int s, int d, std::uint64_t n) override {
    calls.push_back("verify " + std::to_string(s) + ">" + std::to_string(d) + " " + std::to_string(n));
    return -1;
  }
  DeviceTimer* device_timer() override { return parts_ ? this : nullptr; }
  Heater* heater() override { return parts_ ? this : nullptr; }
  TimerReading read_device_timer(int d) override {
    calls.push_back("timer " + std::to_string(d));
    return {12345, 1, 2};
  }
  TimerBurst read_device_timer_burst(int d, int count) override {
    calls.push_back("burst " + std::to_string(d) + " x" + std::to_string(count));
    TimerBurst b;
    b.readings.assign(static_cast<std::size_t>(count), {777, 3, 4});
    b.method = "recorded";
    return b;
  }
  void busy_compute(int d, double s) override { calls.push_back("busy " + std::to_string(d) + " " + std::to_string(s)); }

 private:
  bool parts_;
};


// Rank 1 of 2 serving a Recorder; what stopped it.
std::string serve_until_error(std::uint16_t port, bool parts = true) {
  auto boot = make_tcp_bootstrap(1, 2, "127.0.0.1", port, 10);
  Recorder rec(parts);
  try {
    serve_backend(rec, *boot);
  } catch (const Error& e) {
    return e.what();
  }
  return "(returned without error)";
}

}  // namespace

TEST(DrivenBackend, ServingRanksMakeRankZerosCallsInOrderAndStopWithIt) {
  const std::uint16_t port = free_port();
  std::vector<std::future<std::vector<std::string>>> servants;
  for (int r = 1; r <= 2; ++r)
    servants.push_back(std::async(std::launch::async, [=] {
      auto boot = make_tcp_bootstrap(r, 3, "127.0.0.1", port, 10);
      Recorder rec;
      serve_backend(rec, *boot);  // returns when rank 0's backend goes
      return rec.calls;
    }));
  std::shared_ptr<Bootstrap> boot = make_tcp_bootstrap(0, 3, "127.0.0.1", port, 10);
  auto inner = std::make_unique<Recorder>();
  Recorder* mine = inner.get();
  std::vector<std::string> expected;
  {
    auto b = make_driven_backend(std::move(inner), boot);
    EXPECT_EQ(b->device_count(), 2);  // local calls are not announced
    EXPECT_TRUE(b->capabilities().latency && b->capabilities().ranks);  // the inner backend's, forwarded
    EXPECT_FALSE(b->capabilities().gpu_memory);
    EXPECT_TRUE(b->support(0, 1).ok);
    b->prepare({0, 1}, 1 << 20);
    b->run_batch({1, 0, 4096, Pattern::bidirectional, 3, 7});
    b->run_blocking(0, 1, 8);
    b->verify(1, 0, 4096);
    ASSERT_NE(b->device_timer(), nullptr);  // the inner backend's parts, offered and forwarded
    ASSERT_NE(b->heater(), nullptr);
    EXPECT_EQ(b->device_timer()->read_device_timer(1).device_ns, 12345);
    const TimerBurst burst = b->device_timer()->read_device_timer_burst(0, 3);
    EXPECT_EQ(burst.readings.size(), 3u);
    EXPECT_EQ(burst.method, "recorded");
    b->heater()->busy_compute(0, 0.5);
    expected = mine->calls;
  }
  ASSERT_EQ(expected.size(), 7u);
  EXPECT_EQ(expected[1], "run_batch 1>0 4096 bidirectional 3/7");
  EXPECT_EQ(expected[4], "timer 1");
  EXPECT_EQ(expected[5], "burst 0 x3");
  EXPECT_EQ(expected[6], "busy 0 0.500000");
  for (auto& s : servants) EXPECT_EQ(s.get(), expected);
}

TEST(DrivenBackend, AServingRankWhoseRankZeroVanishesGetsAnError) {
  const std::uint16_t port = free_port();
  auto servant = std::async(std::launch::async, [=] { return serve_until_error(port); });
  {
    auto boot = make_tcp_bootstrap(0, 2, "127.0.0.1", port, 10);
    boot->broadcast(0, R"({"call":"run_blocking","src":0,"dst":1,"bytes":8})");
  }  // rank 0 gone without saying stop
  const std::string why = servant.get();
  EXPECT_NE(why.find("rank 0"), std::string::npos) << why;
}

TEST(DrivenBackend, AnUnknownCommandIsRefusedWithTheReason) {
  const std::uint16_t port = free_port();
  auto servant = std::async(std::launch::async, [=] { return serve_until_error(port); });
  auto boot = make_tcp_bootstrap(0, 2, "127.0.0.1", port, 10);
  boot->broadcast(0, R"({"call":"format_disk"})");
  EXPECT_NE(servant.get().find("same binary on every rank"), std::string::npos);
}

// Issue 43 item 4: a command's fields were read by implicit conversion, and one of the
// wrong type ended the serving rank with nlohmann's type_error ("internal error").
TEST(DrivenBackend, ACommandWithFieldsOfTheWrongTypeIsRefusedAsAUsageError) {
  for (const std::string& junk : {std::string(R"({"call":"run_batch","src":"x","dst":1,"bytes":1,"pattern":"a"})"),
                                  std::string(R"({"call":5})"), std::string(R"({"call":"verify","src":0})"),
                                  std::string(R"({"call":"prepare","devices":[[[1]]],"max_bytes":1})")}) {
    const std::uint16_t port = free_port();
    auto servant = std::async(std::launch::async, [=] {
      try {
        return serve_until_error(port);
      } catch (const std::exception& e) {
        return std::string("NOT AN ERROR: ") + e.what();
      }
    });
    auto boot = make_tcp_bootstrap(0, 2, "127.0.0.1", port, 10);
    boot->broadcast(0, junk);
    const std::string why = servant.get();
    EXPECT_EQ(why.rfind("rank 0 sent a command", 0), 0u) << junk << ": " << why;
  }
}

TEST(DrivenBackend, OffersNoTimerOrHeaterWhereTheBackendItWrapsHasNone) {
  const std::uint16_t port = free_port();
  auto servant = std::async(std::launch::async, [=] { return serve_until_error(port, false); });
  std::shared_ptr<Bootstrap> boot = make_tcp_bootstrap(0, 2, "127.0.0.1", port, 10);
  {
    auto b = make_driven_backend(std::make_unique<Recorder>(false), boot);
    EXPECT_EQ(b->device_timer(), nullptr);
    EXPECT_EQ(b->heater(), nullptr);
  }  // stop: the serving rank returns
  EXPECT_EQ(servant.get(), "(returned without error)");
}

TEST(DrivenBackend, AServingRankWithoutTheAskedPartSaysSo) {
  const std::uint16_t port = free_port();
  auto servant = std::async(std::launch::async, [=] { return serve_until_error(port, false); });
  auto boot = make_tcp_bootstrap(0, 2, "127.0.0.1", port, 10);
  boot->broadcast(0, R"({"call":"read_device_timer_burst","device":0,"count":4})");
  const std::string why = servant.get();
  EXPECT_NE(why.find("'read_device_timer_burst', which this rank's backend does not offer"), std::string::npos) << why;
}
