#pragma once
// One {value, name, aliases} table per enum (a std::array of EnumName rows), read in both directions: to_string and
// the parser come from the same rows, so each name is written once and the error for
// an unknown name lists exactly what the parser accepts.
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "p2pscope/error.hpp"

namespace p2pscope {

template <class E>
struct EnumName {
  E value;
  std::string_view name;                       // what to_string gives and reports write
  std::array<std::string_view, 3> aliases{};   // also accepted when parsing; empty slots unused
  std::string_view help{};                     // said after the name in the error's list
};

// The row's name; "?" for a value not in the table.
template <class Table, class E>
std::string enum_name(const Table& table, E value) {
  for (const auto& row : table)
    if (row.value == value) return std::string(row.name);
  return "?";
}

template <class Table>
auto find_enum(const Table& table, std::string_view text) -> std::optional<decltype(table[0].value)> {
  for (const auto& row : table) {
    if (text == row.name) return row.value;
    for (std::string_view a : row.aliases)
      if (!a.empty() && text == a) return row.value;
  }
  return std::nullopt;
}

// "a (help), b or c": every name, with its help where it has one.
template <class Table>
std::string enum_choices(const Table& table) {
  std::string out;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (i) out += i + 1 == table.size() ? " or " : ", ";
    out += table[i].name;
    if (!table[i].help.empty()) out += " (" + std::string(table[i].help) + ")";
  }
  return out;
}

// Throws UsageError "<what> '<text>': use <choices>" when text is no name or alias.
template <class Table>
auto parse_enum(const Table& table, std::string_view text, std::string_view what) -> decltype(table[0].value) {
  if (auto v = find_enum(table, text)) return *v;
  throw UsageError(std::string(what) + " '" + std::string(text) + "': use " + enum_choices(table));
}

}  // namespace p2pscope
