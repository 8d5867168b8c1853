#pragma once
// Splitting, trimming and joining text: the one copy every reader and command uses.
// Two kinds of split, on purpose:
//   - fields of a line (CSV rows, key lists written by this program): every separator
//     splits and empty fields are kept, so column k stays column k ("a,,b," -> 4);
//   - a list a user typed (--backend ce,sm): items trimmed, an empty item refused with
//     a UsageError that names the option and the text (as size and CPU lists do).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace p2pscope {

// Text that came from outside (a peer's frame, a plugin, a file) made safe to print and
// to serialise: the one sanitizer, applied where such text enters. The result is valid
// UTF-8 (an invalid byte, overlong form, surrogate or code point past U+10FFFF becomes
// U+FFFD), holds no control character a terminal could act on (C0, DEL, C1 and ESC, so
// no escape sequence survives; bidi overrides too) and is at most `max_bytes` long, cut
// on a character boundary. Tab, CR and LF become a space: such text is one field of one
// line, and a newline would let a stranger forge a line of our output.
std::string external_text(std::string_view raw, std::size_t max_bytes);

// Spaces, tabs, CR and LF off both ends.
std::string_view trim(std::string_view s);

// "a,,b," -> {"a", "", "b", ""}; "" -> {""}. Views into `line`.
std::vector<std::string_view> split_views(std::string_view line, char sep);
// The same fields, copied.
std::vector<std::string> split_fields(std::string_view line, char sep);
// Lines without their '\n': "a\n\nb\n" -> {"a", "", "b"}; a last line without '\n'
// still counts; "" -> {}. CRs are kept. Views into `text`.
std::vector<std::string_view> split_lines(std::string_view text);
// Words separated by runs of spaces, tabs or CRs; no empty words ("" -> {}).
std::vector<std::string_view> split_words(std::string_view text);

// A user's list: "ce, sm" -> {"ce", "sm"}. Throws UsageError naming `what` ("--backend")
// for blank text and for an empty item ("ce,,sm", "ce,"), saying how to write it.
std::vector<std::string> split_list(std::string_view text, std::string_view what, char sep = ',');

// {"a", "b"} -> "a, b"; an empty item is still an item ("a,,b").
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
// Any other range of strings (a set, a span): join(names, ", ").
template <class Range>
std::string join(const Range& items, std::string_view sep = ", ");
// Items rendered by `to_text` first: join(devices, ",", [](int d) { return std::to_string(d); }).
template <class Range, class ToText>
std::string join(const Range& items, std::string_view sep, ToText&& to_text) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += sep;
    first = false;
    out += to_text(item);
  }
  return out;
}

template <class Range>
std::string join(const Range& items, std::string_view sep) {
  return join(items, sep, [](const auto& s) -> std::string_view { return s; });
}

}  // namespace p2pscope
