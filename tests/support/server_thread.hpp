#pragma once
// A bench tcp server on 127.0.0.1 serving session after session in a thread, as
// `bench tcp --server` does: what each serve_one returned or threw is kept, with the
// server's log. Only p2pscope::Error is caught: anything else escaping a session ends
// the test binary, as it would end a real server.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"

namespace p2pscope::test {

class ServerThread {
 public:
  explicit ServerThread(tcp::ServerOptions so = {}) {
    so.bind_addrs = {"127.0.0.1"};
    so.port = 0;
    so.accept_timeout_s = 0;  // until stop()
    so.log = [this](const std::string& line) {
      std::lock_guard lk(mu_);
      log_ += line + "\n";
    };
    srv_ = std::make_unique<tcp::Server>(so);
    thread_ = std::thread([this] {
      for (;;) {
        try {
          tcp::Results r = srv_->serve_one();
          std::lock_guard lk(mu_);
          results_.push_back(std::move(r));
        } catch (const tcp::NoClient&) {
          return;
        } catch (const Error& e) {
          std::lock_guard lk(mu_);
          errors_.push_back(e.what());
        }
      }
    });
  }
  ~ServerThread() {
    srv_->stop();
    thread_.join();
  }
  ServerThread(const ServerThread&) = delete;
  ServerThread& operator=(const ServerThread&) = delete;

  std::uint16_t port() const { return srv_->port(); }
  std::string log() {
    std::lock_guard lk(mu_);
    return log_;
  }
  std::vector<std::string> errors() {
    std::lock_guard lk(mu_);
    return errors_;
  }
  std::vector<tcp::Results> results() {
    std::lock_guard lk(mu_);
    return results_;
  }
  // Polls `done` for up to wait_s (the server logs and ends sessions in its own thread).
  static bool wait_for(const std::function<bool()>& done, double wait_s = 5) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  bool log_has(const std::string& text, double wait_s = 5) {
    return wait_for([&] { return log().find(text) != std::string::npos; }, wait_s);
  }
  std::string errors_text() {
    std::string all;
    for (const auto& e : errors()) all += e + "\n";
    return all;
  }

 private:
  std::unique_ptr<tcp::Server> srv_;
  std::thread thread_;
  std::mutex mu_;
  std::string log_;
  std::vector<std::string> errors_;
  std::vector<tcp::Results> results_;
};

// What a client of the server on `port` is told when it proposes `p`: the error's words,
// or "accepted" when the session ran (stopped after `limit_s` by its stop flag: a test that
// wants a refusal fails there, on the old code, without running the whole session).
inline std::string refusal_of(std::uint16_t port, const tcp::Params& p, double limit_s = 5) {
  std::atomic<bool> stop{false};
  tcp::ClientOptions co;
  co.port = port;
  co.local.stop = &stop;
  std::thread stopper([&] {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    while (!stop && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
  });
  std::string err;
  try {
    tcp::run_client(co, p);
    err = "accepted";
  } catch (const Error& e) {
    err = e.what();
  }
  stop = true;
  stopper.join();
  return err;
}

}  // namespace p2pscope::test
