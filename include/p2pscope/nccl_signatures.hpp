#pragma once
// The NCCL doctor's catalogue of named signatures: each a fault or a setting that a
// NCCL_DEBUG=INFO (or WARN) log shows by lines NCCL really prints, with its severity,
// cause and fix. docs/doctor.md lists the same catalogue; every entry is tested on a
// real log that shows it (tests/fixtures/nccl-logs/faults, labelled in LABELS.tsv).
// A signature is matched on one run's lines only (NcclLog is one run of a file).
#include <string>
#include <string_view>
#include <vector>

#include "p2pscope/tune.hpp"

namespace p2pscope::tune {

struct Signature {
  const char* id;        // stable, e.g. "plugin.missing"; the finding's id
  const char* severity;  // "error", "warning", "info"
  const char* name;      // what it is, in a few words
  const char* cause;     // why it happens and what it costs
  const char* fix;       // export lines or commands; "" if none
};

// Every signature, in the order docs/doctor.md lists them.
const std::vector<Signature>& nccl_signatures();
// The entry of `id`, nullptr when there is none.
const Signature* find_signature(std::string_view id);

// The signatures one run's log shows, as findings: the title names the run, what was
// seen (values from the log) and the cause; the evidence is the log's own lines,
// sanitized (external_text), at most a few per signature.
std::vector<Finding> signature_findings(const NcclLog& l);

// Called by the log reader on every line: keeps the lines the catalogue's rules look for
// (NcclLog::marks). Cheap on the hot "Channel ... via" lines, which it skips.
void note_signature_line(NcclLog& l, std::string_view raw);

}  // namespace p2pscope::tune
