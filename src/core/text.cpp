#include "p2pscope/text.hpp"

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
