#pragma once
// What the signature rules share: a rule's hit, the rules' signature, and small readers of
// one run's log (its environment lines, marked lines, interfaces). Internal to src/tune.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "p2pscope/nccl_signatures.hpp"
#include "p2pscope/tune.hpp"

namespace p2pscope::tune::sig {

// What a rule found: the log's lines and the values worth naming in the title.
struct Hit {
  std::vector<std::string> evidence;
  std::string detail;
};
using Rule = bool (*)(const NcclLog&, Hit&);

// ------------------------------------------------------------------ helpers
inline std::optional<std::string> env_of(const NcclLog& l, std::string_view name) {
  for (const auto& kv : l.env_lines)
    if (kv.size() > name.size() && kv.compare(0, name.size(), name) == 0 && kv[name.size()] == '=')
      return kv.substr(name.size() + 1);
  return std::nullopt;
}
inline bool env_is(const NcclLog& l, std::string_view name, std::string_view value) {
  const auto v = env_of(l, name);
  return v && *v == value;
}
// The log's own "NAME set by environment to V" line, else NAME=V as the parser read it.
inline std::string env_line(const NcclLog& l, const std::string& name) {
  for (const auto& e : l.evidence)
    if (e.find(name + " set by environment to") != std::string::npos) return e;
  const auto v = env_of(l, name);
  return v ? name + "=" + *v : std::string();
}
// Adds the env lines of the names that are set; true when any is.
inline bool env_evidence(const NcclLog& l, std::initializer_list<const char*> names, Hit& h) {
  bool any = false;
  for (const char* n : names)
    if (env_of(l, n)) {
      h.evidence.push_back(env_line(l, n));
      h.detail += (h.detail.empty() ? "" : ", ") + std::string(n) + "=" + *env_of(l, n);
      any = true;
    }
  return any;
}
inline bool marked(const NcclLog& l, const char* key, Hit& h, std::size_t n = 2) {
  const auto& v = l.marked(key);
  for (std::size_t i = 0; i < v.size() && i < n; ++i) h.evidence.push_back(v[i]);
  return !v.empty();
}
// The text after `key` in `line` up to the first of `stop`.
inline std::string after(const std::string& line, std::string_view key, std::string_view stop = " \t") {
  const auto p = line.find(key);
  if (p == std::string::npos) return {};
  const auto b = p + key.size();
  return line.substr(
      b, line.find_first_of(stop, b) == std::string::npos ? std::string::npos : line.find_first_of(stop, b) - b);
}
inline std::string plugin_name(const NcclLog& l) { return l.net_plugin.substr(0, l.net_plugin.find(" (")); }
inline bool uses(const NcclLog& l, const std::string& transport) {
  const auto it = l.transports.find(transport);
  return it != l.transports.end() && it->second > 0;
}
// The network the run's channels used: from "Using network X", else from the channels.
inline bool network_is(const NcclLog& l, const std::string& name) {
  return l.network == name || uses(l, "NET/" + name);
}
inline bool external_plugin_used(const NcclLog& l) {
  return !l.net_plugin.empty() && network_is(l, plugin_name(l)) && plugin_name(l) != "Socket" && plugin_name(l) != "IB";
}
inline bool virtual_if(const std::string& name) {
  for (const char* p :
       {"docker", "virbr", "br-", "cni", "flannel", "cali", "vxlan", "tun", "tap", "ifb", "kube", "weave"})
    if (name.rfind(p, 0) == 0) return true;
  return name.find("veth") != std::string::npos || name.find("dummy") != std::string::npos;
}
inline std::string if_name(const std::string& item) { return item.substr(0, item.find(':')); }
inline bool run_failed(const NcclLog& l) {
  return l.marks.count("abort") || l.marks.count("remote_error") || l.marks.count("program_error") ||
         l.marks.count("error_trace") || l.marks.count("peer_closed");
}

// A catalogue entry: its text and the rule that finds it; rule == nullptr for the
// signatures that log_findings (doctor.cpp) finds itself.
struct Entry {
  Signature sig;
  Rule rule;
};
// The table (nccl_signature_rules.cpp), in docs/doctor.md's order.
const std::vector<Entry>& entries();

}  // namespace p2pscope::tune::sig
