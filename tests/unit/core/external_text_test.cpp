// external_text: what a peer, a plugin or a file supplies becomes data that every printer
// can take (issue 43): valid UTF-8, nothing a terminal acts on, cut on a character
// boundary. Each case is one a naive cut or copy gets wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "p2pscope/text.hpp"

using namespace p2pscope;

namespace {
const std::string kFffd = "\xEF\xBF\xBD";  // U+FFFD, the replacement character

// The text dumps as JSON under nlohmann's strict default (it throws type_error 316 on
// invalid UTF-8), and holds no byte below 0x20, DEL, or a C1 control (UTF-8 C2 80-9F).
void expect_printable(const std::string& s) {
  EXPECT_NO_THROW((void)nlohmann::json(s).dump()) << s;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    EXPECT_FALSE(c < 0x20 || c == 0x7F) << "byte " << i << " of '" << s << "' is a control";
    if (c == 0xC2 && i + 1 < s.size()) {
      EXPECT_FALSE(static_cast<unsigned char>(s[i + 1]) <= 0x9F) << "a C1 control at byte " << i;
    }
  }
}
}  // namespace

TEST(ExternalText, ValidMultibyteTextIsKeptIntact) {
  const std::string s =
      "gr\xC3\xBC\xC3\x9F \xE2\x82\xAC 1 \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC";  // grüß € 😀 日本
  EXPECT_EQ(external_text(s, 1000), s);
  EXPECT_EQ(external_text("plain ascii: 10.0.0.1:18515", 1000), "plain ascii: 10.0.0.1:18515");
  EXPECT_EQ(external_text("", 10), "");
}

TEST(ExternalText, ACutAtTheLimitNeverSplitsACharacter) {
  // "a€": the euro sign is 3 bytes (E2 82 AC); a limit of 2 or 3 falls inside it.
  EXPECT_EQ(external_text("a\xE2\x82\xAC", 4), "a\xE2\x82\xAC");
  EXPECT_EQ(external_text("a\xE2\x82\xAC", 3), "a");
  EXPECT_EQ(external_text("a\xE2\x82\xAC", 2), "a");
  EXPECT_EQ(external_text("a\xE2\x82\xAC", 0), "");
  // A replacement is 3 bytes too: it is not cut either.
  EXPECT_EQ(external_text("ab\xFF", 4), "ab");
  // 2000 euro signs cut at 2000 bytes (what a reason's substr(0, 2000) did): 666 whole ones.
  std::string euros;
  for (int i = 0; i < 2000; ++i) euros += "\xE2\x82\xAC";
  const std::string cut = external_text(euros, 2000);
  EXPECT_EQ(cut.size(), 1998u);
  expect_printable(cut);
  EXPECT_THROW((void)nlohmann::json(euros.substr(0, 2000)).dump(), nlohmann::json::type_error);  // the old cut
}

TEST(ExternalText, InvalidSequencesBecomeReplacementCharacters) {
  const std::string F = kFffd;
  EXPECT_EQ(external_text("a\x80z", 100), "a" + F + "z");                 // a lone continuation byte
  EXPECT_EQ(external_text("\xBF\xBF", 100), F + F);                       // two of them
  EXPECT_EQ(external_text("\xC0\x80", 100), F + F);                       // overlong NUL (modified UTF-8)
  EXPECT_EQ(external_text("\xC1\xBF", 100), F + F);                       // overlong 0x7F
  EXPECT_EQ(external_text("\xE0\x80\xAF", 100), F + F + F);               // overlong '/'
  EXPECT_EQ(external_text("\xF0\x80\x80\xAF", 100), F + F + F + F);       // overlong '/' in 4 bytes
  EXPECT_EQ(external_text("\xED\xA0\x80", 100), F + F + F);               // U+D800, a surrogate
  EXPECT_EQ(external_text("\xF4\x90\x80\x80", 100), F + F + F + F);       // past U+10FFFF
  EXPECT_EQ(external_text("\xFF\xFE", 100), F + F);                       // never in UTF-8
  EXPECT_EQ(external_text("x\xE2\x82", 100), "x" + F + F);                // cut mid-character by someone else
  EXPECT_EQ(external_text("\xE2\x82Z", 100), F + F + "Z");                // the next character survives
  EXPECT_EQ(external_text("\xF4\x8F\xBF\xBF", 100), "\xF4\x8F\xBF\xBF");  // U+10FFFF itself is valid
  for (const char* s : {"\x80", "\xC0\x80", "\xED\xBF\xBF", "\xF8\x88\x80\x80\x80", "a\xC3"})
    expect_printable(external_text(s, 100));
}

TEST(ExternalText, NothingATerminalActsOnSurvives) {
  const std::string F = kFffd;
  // ESC [ 2 J clears the screen; the ESC goes, the rest is plain text.
  EXPECT_EQ(external_text("\x1B[2Jowned", 100), F + "[2Jowned");
  // 0x9B alone is not UTF-8; U+009B (C2 9B) is CSI, the 8-bit ESC [.
  EXPECT_EQ(external_text(std::string("\x9B") + "2J", 100), F + "2J");
  EXPECT_EQ(external_text(std::string("\xC2\x9B") + "2J", 100), F + "2J");
  EXPECT_EQ(external_text(std::string("\xC2\x9D") + "0;title\x07", 100), F + "0;title" + F);  // OSC ... BEL
  EXPECT_EQ(external_text(std::string("a\0b\x7Fz\b", 6), 100), "a" + F + "b" + F + "z" + F);  // NUL, DEL, BS
  // Bidi overrides reorder what a reader sees (U+202E RIGHT-TO-LEFT OVERRIDE).
  EXPECT_EQ(external_text("a\xE2\x80\xAEz", 100), "a" + F + "z");
  // A stranger's text is one field of one line: a newline would forge a line of output.
  EXPECT_EQ(external_text("one\ntwo\r\nthree\tfour", 100), "one two  three four");
  // U+00A0 (C2 A0), just past C1, is an ordinary character.
  EXPECT_EQ(external_text("a\xC2\xA0z", 100), "a\xC2\xA0z");
  expect_printable(external_text(std::string("\x1B]0;x\x1B\\\x1B[31m\x9B") + "1m\xC2\x85", 100));
}

TEST(ExternalText, SafeTextIsAFixedPoint) {
  // Applying it twice (a reason sanitized where it entered, cut again by a caller) changes nothing.
  const std::string once = external_text("\x1B[2J\xC3\x28\xE2\x82\xAC\xFF tail", 12);
  EXPECT_EQ(external_text(once, 12), once);
  EXPECT_LE(once.size(), 12u);
}
