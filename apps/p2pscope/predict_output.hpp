#pragma once
// What both predict paths (cmd_predict.cpp: ring and tree over the link models;
// predict_nccl.cpp: NCCL's model) share about output: --format read once through the
// format table, the JSON document's head, and where the report and its page go.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "commands.hpp"
#include "p2pscope/output.hpp"

namespace p2pscope::app {

// --format: text, json or csv; UsageError (exit 2) naming the flag otherwise.
out::Output predict_output(const std::string& format);

// schema_version, then the run's metadata (p2pscope/metadata.hpp), at the top level as
// predict always wrote them; the command adds its keys after. One function, so the
// output layer's shared head can replace it.
nlohmann::ordered_json predict_json_head(const Context& ctx);

// Where a run's results go: --out (stdout for "" or "-") and, with --html, the page.
struct PredictFiles {
  std::string out, html;
  bool force = false;  // --force: replace existing files
};
void write_predict(const out::Report& rep, const out::Output& output, const PredictFiles& files);

}  // namespace p2pscope::app
