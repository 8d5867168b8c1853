#pragma once
// One peer frame's body, as the side that receives it reads it (issue 32): parsed under
// the frame's limits, then handed to the same reader the session uses. A crash, a
// hang or an escape other than p2pscope::Error is a finding; so is a value that passed
// the limits but is deeper than the stack allows (copying or dumping it would crash).
#include <cstdint>
#include <string>
#include <string_view>

#include "p2pscope/error.hpp"
#include "p2pscope/tcp.hpp"
#include "transport/net/handle_check.hpp"
#include "transport/session/protocol.hpp"

namespace fuzzframe {

using p2pscope::session::FrameType;

inline std::string field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) throw p2pscope::Error("no string");
  return it->get<std::string>();
}

inline void read_as(FrameType type, const nlohmann::json& body) {
  using namespace p2pscope;
  switch (type) {
    case FrameType::hello:
      field(body, "nonce");
      break;
    case FrameType::params: {
      field(body, "proof");
      const auto it = body.find("params");
      if (it != body.end()) tcp::params_from_json(*it);
      break;
    }
    case FrameType::go: {
      const auto it = body.find("round");
      if (it != body.end() && it->is_number_integer()) (void)it->get<std::int64_t>();
      break;
    }
    case FrameType::result:
      tcp::side_from_json(body);
      break;
    case FrameType::challenge:
    case FrameType::accept:
      field(body, "nonce");
      field(body, "session");
      break;
    case FrameType::net_handles: {
      const auto it = body.find("handles");
      if (it == body.end() || !it->is_array()) break;
      net::HandlePolicy policy{.peer_ip = "127.0.0.1", .vouched = {"127.0.0.2"}, .plugin = "", .authenticated = true};
      for (const auto& h : *it) {
        if (!h.is_string() || h.get<std::string>().size() != 2 * net::kHandleBytes) continue;
        net::NetHandle nh{};
        const std::string& s = h.get_ref<const std::string&>();
        for (std::size_t i = 0; i < nh.size(); ++i) nh[i] = static_cast<unsigned char>(s[2 * i] ^ s[2 * i + 1]);
        net::check_peer_handle(nh, policy);
        policy.plugin = "FastSocket";  // its layout too: the counts it range-checks
        net::check_peer_handle(nh, policy);
        policy.plugin.clear();
      }
      break;
    }
    default:
      break;
  }
}

inline int one(FrameType type, const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json body = p2pscope::session::frame_body(type, text, "fuzz");
    // The recursive operations the old code died in: a copy, a dump, a compare.
    const nlohmann::json copy = body;
    if (copy != body) __builtin_trap();
    (void)copy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    read_as(type, body);
  } catch (const p2pscope::Error&) {
  } catch (const nlohmann::json::exception&) {  // a reader's own get<> on a wrong type: caught by the session
  }
  return 0;
}

}  // namespace fuzzframe

#define P2PSCOPE_FRAME_FUZZER(TYPE)                                                        \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {      \
    return fuzzframe::one(p2pscope::session::FrameType::TYPE, data, size);                     \
  }
