#pragma once
// Small helpers many tests share: the message of the Error a call throws, and an
// environment lookup over a map (for functions that take a getenv stand-in).
#include <map>
#include <string>

#include "p2pscope/error.hpp"

namespace p2pscope::test {

// The what() of the p2pscope::Error that f() throws, or "(no error)".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A getenv stand-in over `env` (which must outlive it).
inline auto env_lookup(const std::map<std::string, std::string>& env) {
  return [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace p2pscope::test
