// A peer's result frame, parsed and read as the client reads it, then printed (issue 43):
// to_json(...).dump() under nlohmann's strict default (type_error 316 on invalid UTF-8
// escapes as an uncaught exception: a finding), the text printer and CSV. A parse error
// becomes the failure text it would in a session. A crash, an escape other than
// p2pscope::Error from the reader, or an ESC / C0 / C1 control in the printed text is a
// finding: text from a peer must be data by the time anything prints it.
#include <cstdint>
#include <string>
#include <string_view>

#include "p2pscope/error.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/tcp.hpp"
#include "p2pscope/text.hpp"
#include "transport/session/protocol.hpp"

namespace {

using namespace p2pscope;

// A byte a terminal acts on: C0 (our own newlines and the tables' tabs aside), DEL, ESC,
// or a C1 control in UTF-8 (C2 80 - C2 9F).
void trap_on_controls(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) __builtin_trap();
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) __builtin_trap();
  }
}

void print_all(const tcp::Results& r) {
  (void)tcp::to_json(r).dump();  // strict: throws on invalid UTF-8, uncaught here
  trap_on_controls(tcp::format_text(r));
  trap_on_controls(out::Output(out::Format::csv).print(tcp::report(r)));
  trap_on_controls(out::Output(out::Format::json).print(tcp::report(r)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The sanitizer on raw bytes: always valid UTF-8, within its limit, nothing to act on.
  const std::string clean = external_text(text, 512);
  if (clean.size() > 512) __builtin_trap();
  (void)nlohmann::json(clean).dump();
  trap_on_controls(clean);

  tcp::Results r;
  r.client.side = "client";
  try {
    const nlohmann::json body = session::frame_body(session::FrameType::result, text, "fuzz");
    r.server = tcp::side_from_json(body);
  } catch (const Error& e) {  // the session keeps the reader's words as its failure
    r.failure = std::string("client: final results: ") + e.what();
    r.failure_cause = "error";
  } catch (const nlohmann::json::exception&) {  // a reader's own get<> on a wrong type: caught by the session
    return 0;
  }
  print_all(r);
  return 0;
}
