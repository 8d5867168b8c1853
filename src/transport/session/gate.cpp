#include "transport/session/gate.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <list>

#include "p2pscope/auth.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/tcp.hpp"
#include "transport/session/protocol.hpp"

namespace p2pscope::session {

struct Gate::Pending {
  Socket sock;
  std::string peer;
  std::int64_t deadline_ns = 0;
  std::string buf;  // the frame being read: header, then body
  bool said_hello = false;  // a hello came and the challenge went out: the next frame is `params`
  std::string client_nonce, server_nonce;
  std::string binding;  // client_binding() of this connection, with a token
  bool done = false;  // handed on or refused: drop from the list
};

namespace {

constexpr std::int64_t kNsPerS = 1'000'000'000;

// A complete frame in buf, or nullopt while more bytes are needed. Throws Error with
// the reason to give the peer when the bytes cannot be a frame of ours.
std::optional<Frame> parse(const std::string& buf, std::uint32_t max_bytes) {
  if (buf.size() < sizeof(FrameHeader)) return std::nullopt;
  FrameHeader h;
  std::memcpy(&h, buf.data(), sizeof h);
  if (h.magic != kProtocolMagic) throw Error("not the p2pscope tcp protocol (bad magic)");
  if (h.version != kProtocolVersion)
    throw Error("protocol version " + std::to_string(h.version) + ", this server speaks " +
                std::to_string(kProtocolVersion) + "; run the same p2pscope version on both sides");
  if (h.length > max_bytes)
    throw Error("a " + std::to_string(h.length) + "-byte message before the session began (limit " +
                std::to_string(max_bytes) + ")");
  if (buf.size() < sizeof h + h.length) return std::nullopt;
  Frame f;
  f.type = static_cast<FrameType>(h.type);
  f.body = frame_body(f.type, std::string_view(buf).substr(sizeof h), "a new connection");
  return f;
}

// The bytes still missing from the frame in buf (header first, then its body).
std::size_t missing(const std::string& buf) {
  if (buf.size() < sizeof(FrameHeader)) return sizeof(FrameHeader) - buf.size();
  FrameHeader h;
  std::memcpy(&h, buf.data(), sizeof h);
  return sizeof h + h.length - buf.size();
}

std::string str_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) throw Error(std::string("field '") + key + "' missing or not a string");
  // Cut in place: GCC 12 -O2 reports a false stringop-overread on substr() + "..." here.
  std::string v = it->get<std::string>();
  if (v.size() > 200) {
    v.resize(200);
    v.append("...");
  }
  return v;
}

}  // namespace

Gate::Gate(Listener& listener, GateLimits limits, std::optional<std::string> token)
    : listener_(listener), limits_(limits), token_(std::move(token)) {
  thread_ = std::jthread([this] { loop(); });
}

Gate::~Gate() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Gate::stop() noexcept {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

std::vector<std::string> Gate::take_log() {
  std::lock_guard lk(mu_);
  std::vector<std::string> out;
  out.swap(log_);
  return out;
}

ClientHello Gate::next_client(double timeout_s) {
  std::unique_lock lk(mu_);
  auto ready = [&] { return stopping_ || !clients_.empty(); };
  if (timeout_s > 0) {
    if (!cv_.wait_for(lk, std::chrono::duration<double>(timeout_s), ready))
      throw NoClient("no client on port " + std::to_string(listener_.port()) + " within " +
                     fixed(timeout_s, 1) + " s");
  } else {
    cv_.wait(lk, ready);
  }
  if (clients_.empty()) throw NoClient("server stopped");
  ClientHello c = std::move(clients_.front());
  clients_.pop_front();
  return c;
}

void Gate::open_session(const std::string& session_id, const std::string& busy_reason) {
  std::lock_guard lk(mu_);
  session_id_ = session_id;
  busy_reason_ = busy_reason;
  data_.clear();
}

void Gate::close_session() {
  std::lock_guard lk(mu_);
  session_id_.clear();
  data_.clear();
}

DataHello Gate::next_data(double timeout_s) {
  std::unique_lock lk(mu_);
  // Out of descriptors while this session waits: it holds them itself, so none will
  // come back before its timeout; it fails now, naming why.
  const std::int64_t since = monotonic_ns();
  auto starved = [&] { return data_.empty() && exhausted_ns_ >= since; };
  if (!cv_.wait_for(lk, std::chrono::duration<double>(timeout_s),
                    [&] { return stopping_ || !data_.empty() || starved(); }) ||
      starved())
    throw IoError(starved() ? std::string("accepting the client's data connections failed: ") + std::strerror(EMFILE)
                            : "the client's data connections did not all arrive within " + fixed(timeout_s, 1) + " s",
                  starved() ? IoCause::other : IoCause::timeout);
  if (data_.empty()) throw Error("server stopped");
  DataHello d = std::move(data_.front());
  data_.pop_front();
  return d;
}

void Gate::refuse(Pending& p, const std::string& why, bool tell) {
  if (tell) {
    try {
      send_frame(p.sock, FrameType::reject, {{"reason", why}});
    } catch (const std::exception&) {  // the peer may be gone already
    }
  }
  std::lock_guard lk(mu_);
  if (log_.size() < 1000) log_.push_back("refused " + p.peer + ": " + why);
  p.done = true;
}

void Gate::step(Pending& p) {
  try {
    for (;;) {
      const std::size_t want = missing(p.buf);
      const std::size_t old = p.buf.size();
      p.buf.resize(old + want);
      const std::size_t got = p.sock.recv_now(p.buf.data() + old, want);
      p.buf.resize(old + got);
      if (got == 0) return;  // nothing more for now
      std::optional<Frame> f;
      try {
        f = parse(p.buf, limits_.max_frame_bytes);
      } catch (const Error& e) {
        return refuse(p, e.what(), true);
      }
      if (!f) continue;
      p.buf.clear();
      if (!p.said_hello && f->type == FrameType::data_hello) {
        std::lock_guard lk(mu_);
        const auto it = f->body.find("session");
        if (session_id_.empty() || it == f->body.end() || !it->is_string() || *it != session_id_) {
          if (log_.size() < 1000) log_.push_back("refused " + p.peer + ": a data connection of no session served here");
        } else {
          data_.push_back({std::move(p.sock), std::move(f->body)});
          cv_.notify_all();
        }
        p.done = true;
        return;
      }
      if (!p.said_hello && f->type == FrameType::hello) {
        p.client_nonce = str_field(f->body, "nonce");
        p.server_nonce = auth::random_nonce_hex();
        send_frame(p.sock, FrameType::challenge,
                   {{"nonce", p.server_nonce}, {"auth", token_ ? "required" : "none"}});
        p.said_hello = true;
        continue;
      }
      if (p.said_hello && f->type == FrameType::params) {
        bool authenticated = false;
        const auto params = f->body.find("params");
        if (token_) {
          // Bound to this connection (the address the client dialed) and the exact
          // parameters: a relay of another client's proof fails (docs/security.md).
          p.binding = client_binding(p.sock.local_addr(), params == f->body.end() ? nlohmann::json() : *params);
          const auto it = f->body.find("proof");
          const std::string proof = it != f->body.end() && it->is_string() ? it->get<std::string>() : "";
          if (proof.empty())
            return refuse(p, "this server requires the shared secret: set P2PSCOPE_TOKEN (or P2PSCOPE_TOKEN_FILE) "
                             "to the server's value on the client", true);
          if (!auth::equal_constant_time(proof, auth::proof(*token_, "client", p.client_nonce, p.server_nonce + p.binding)))
            return refuse(p, "authentication failed: the client's P2PSCOPE_TOKEN differs from the server's, or its "
                             "proof was made for another server address or other parameters (a relay?)", true);
          authenticated = true;
        }
        if (params == f->body.end() || !params->is_object()) return refuse(p, "no parameters in the request", true);
        std::string busy;
        {
          std::lock_guard lk(mu_);
          if (!session_id_.empty() || !clients_.empty())
            busy = busy_reason_.empty() ? "busy: another client is being served" : busy_reason_;
        }
        if (!busy.empty())
          return refuse(p, busy + "; try again when it ends, or start another server on another --port", true);
        ClientHello c;
        c.peer = p.peer;
        c.params = std::move(*params);
        c.client_nonce = p.client_nonce;
        c.server_nonce = p.server_nonce;
        c.authenticated = authenticated;
        c.binding = p.binding;
        c.ctrl = std::move(p.sock);
        {
          std::lock_guard lk(mu_);
          clients_.push_back(std::move(c));
        }
        cv_.notify_all();
        p.done = true;
        return;
      }
      return refuse(p, "unexpected message type " + std::to_string(static_cast<unsigned>(f->type)) +
                           " on a new connection (expected a hello)", true);
    }
  } catch (const IoError&) {  // closed or reset before it said anything whole: a probe
    p.done = true;
  } catch (const std::exception& e) {
    refuse(p, e.what(), true);
  }
}

void Gate::loop() {
  std::list<Pending> pending;
  const std::vector<int> lfds = listener_.fds();
  bool exhausted = false;  // the last accept failed for want of descriptors
  for (;;) {
    {
      std::lock_guard lk(mu_);
      if (stopping_) return;
    }
    std::vector<pollfd> fds;
    // Out of descriptors: the listeners stay readable and accept fails at once; leave
    // them out for one poll rather than spin a CPU until a descriptor is free.
    for (int fd : lfds) fds.push_back({exhausted ? -1 : fd, POLLIN, 0});
    exhausted = false;
    for (auto& p : pending) fds.push_back({p.sock.fd(), POLLIN, 0});
    // A short poll: stop() and deadlines are seen within 50 ms.
    const int rc = ::poll(fds.data(), fds.size(), 50);
    if (rc < 0 && errno != EINTR) {
      std::lock_guard lk(mu_);
      log_.push_back(std::string("poll failed: ") + std::strerror(errno));
      continue;
    }
    const std::int64_t now = monotonic_ns();
    std::size_t i = lfds.size();
    for (auto& p : pending) {
      if (rc > 0 && fds[i].revents) step(p);
      ++i;
      if (!p.done && now > p.deadline_ns)
        refuse(p, "the handshake did not finish within " + fixed(limits_.hello_timeout_s, 1) + " s", true);
    }
    pending.remove_if([](const Pending& p) { return p.done; });
    for (std::size_t k = 0; rc > 0 && k < lfds.size(); ++k) {
      if (!(fds[k].revents & POLLIN)) continue;
      Socket s = listener_.accept_on(lfds[k], &exhausted);
      if (exhausted) {
        std::lock_guard lk(mu_);
        if (now - exhausted_ns_ > 10 * kNsPerS)  // once per episode, not per try
          log_.push_back(std::string("accepting a connection failed: ") + std::strerror(EMFILE) +
                         " (this server's file descriptors are used up: raise ulimit -n)");
        exhausted_ns_ = now;
        cv_.notify_all();
      }
      if (!s.valid()) continue;
      if (pending.size() >= limits_.max_pending) {
        refuse(pending.front(), "too many connections handshaking at once (limit " +
                                    std::to_string(limits_.max_pending) + "); the oldest is dropped", true);
        pending.pop_front();
      }
      Pending p;
      p.peer = s.peer_addr();
      s.set_timeout(1.0);  // only our short replies are sent on it here
      s.set_label("connection from " + p.peer);
      p.sock = std::move(s);
      p.deadline_ns = now + static_cast<std::int64_t>(limits_.hello_timeout_s * kNsPerS);
      pending.push_back(std::move(p));
    }
  }
}

}  // namespace p2pscope::session
