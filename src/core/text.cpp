#include "p2pscope/text.hpp"
#include "p2pscope/json_words.hpp"

#include <algorithm>

#include "p2pscope/error.hpp"

namespace p2pscope {

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const auto b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

std::vector<std::string_view> split_views(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const auto pos = line.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string> split_fields(std::string_view line, char sep) {
  const auto views = split_views(line, sep);
  return {views.begin(), views.end()};
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> out;
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const std::size_t b = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > b) out.push_back(text.substr(b, i - b));
  }
  return out;
}

std::vector<std::string> split_list(std::string_view text, std::string_view what, char sep) {
  const std::string s(1, sep);
  if (trim(text).empty())
    throw UsageError(std::string(what) + ": empty list; give one or more items separated by '" + s + "'");
  std::vector<std::string> out;
  std::size_t k = 0;
  for (const std::string_view item : split_views(text, sep)) {
    ++k;
    if (trim(item).empty())
      throw UsageError(std::string(what) + ": item " + std::to_string(k) + " of '" + std::string(text) +
                       "' is empty; separate items by a single '" + s + "', with none at either end");
    out.emplace_back(trim(item));
  }
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  return join(items, sep, [](const std::string& s) -> const std::string& { return s; });
}

}  // namespace p2pscope

namespace p2pscope {
namespace {

// The length of the well-formed UTF-8 sequence at s[i], and its code point; 0 when the
// bytes there are not one (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
std::size_t utf8_char(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (tighter where overlongs and surrogates start)
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;  // overlong below U+0800
    if (c == 0xED) hi = 0x9F;  // U+D800-U+DFFF: surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;  // overlong below U+10000
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;  // a continuation byte alone, 0xC0 / 0xC1 (overlong ASCII), 0xF5-0xFF
  }
  if (s.size() - i < n) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const unsigned char x = b(k);
    if (x < (k == 1 ? lo : 0x80) || x > (k == 1 ? hi : 0xBF)) return 0;
    cp = (cp << 6) | (x & 0x3F);
  }
  return n;
}

// What a terminal (or a bidi-aware viewer) acts on instead of showing: C0, DEL, C1 (0x9B
// is CSI, as ESC [ is), the bidi embeddings, overrides and isolates ("Trojan Source").
bool acts_on_display(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string external_text(std::string_view raw, std::size_t max_bytes) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(std::min(raw.size(), max_bytes));
  for (std::size_t i = 0; i < raw.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_char(raw, i, cp);
    std::string_view piece;
    if (n == 0) {
      piece = kReplacement;  // one U+FFFD for each byte that starts no well-formed character
      i += 1;
    } else {
      const bool space = cp == '\t' || cp == '\n' || cp == '\r';
      piece = space ? std::string_view(" ") : acts_on_display(cp) ? kReplacement : raw.substr(i, n);
      i += n;
    }
    if (out.size() + piece.size() > max_bytes) break;  // whole characters only
    out += piece;
  }
  return out;
}

}  // namespace p2pscope

namespace p2pscope {

// The words only: what a library said may quote a stranger's bytes (external_text).
std::string json_error_words(std::string_view what) {
  std::string_view w = what;
  if (w.rfind("[json.exception.", 0) == 0 && w.find("] ") != std::string_view::npos) w.remove_prefix(w.find("] ") + 2);
  const auto cut = [](std::string_view s, std::string_view at) {
    const auto i = s.find(at);
    return i == std::string_view::npos ? s : s.substr(0, i);
  };
  std::string r;
  if (w.rfind("parse error", 0) == 0) {
    // "parse error at line L, column C: syntax error while parsing X - WHAT; last read: ..."
    if (const auto at = w.find("line "); at != std::string_view::npos) r = std::string(cut(w.substr(at), ":")) + ": ";
    const auto dash = w.find(" - ");
    r += dash == std::string_view::npos ? std::string("not JSON") : std::string(cut(w.substr(dash + 3), ";"));
  } else if (w.rfind("type must be ", 0) == 0) {
    // "type must be number, but is string"
    const auto is = w.find("but is ");
    r = "a " + std::string(is == std::string_view::npos ? std::string_view("value") : w.substr(is + 7)) + " where a " +
        std::string(cut(w.substr(13), ",")) + " belongs";
  } else if (w.rfind("key '", 0) == 0) {
    r = "no " + std::string(cut(w, " not found").substr(4)) + " field";  // "key 'x' not found"
  } else {
    r = std::string(w);
  }
  return external_text(r, 300);
}

}  // namespace p2pscope
