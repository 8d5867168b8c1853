#pragma once
// `--format` for the commands whose choices CLI11 checks (topo, doctor, irq diff and
// plan): the names come from the format table, and the command keeps an out::Output,
// never the string (p2pscope/output.hpp).
#include <initializer_list>
#include <string>

#include <CLI/CLI.hpp>

#include "p2pscope/error.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::app {

inline CLI::Option* add_format_option(CLI::App& cmd, std::string& format, std::initializer_list<out::Format> offered,
                                      const std::string& help) {
  return cmd.add_option("--format", format, help)->check(CLI::IsMember(out::format_names(offered)));
}

// After CLI11 checked the name against the table; any name of kFormats is known here.
inline out::Output chosen_output(const std::string& format) {
  const auto f = out::find_format(format, {out::Format::text, out::Format::json, out::Format::csv, out::Format::html});
  if (!f) throw UsageError("--format '" + format + "' is no format");
  return out::Output(*f);
}

}  // namespace p2pscope::app
