#pragma once
// What a survey reads and writes in its --out DIR: rounds.jsonl read back for --resume,
// survey.json read back for --plan --from, and the result's survey.json, survey.csv,
// survey.html and (with --sizes) links.json written.
#include <filesystem>
#include <string>
#include <vector>

#include "survey/survey.hpp"

namespace p2pscope::survey {

// DIR/rounds.jsonl's records (UsageError where there is none). A line cut by a crash
// does not parse: its task runs again, and `bad_lines` of `lines` say how many.
struct ResumeRecords {
  std::vector<Record> records;
  std::filesystem::path path;
  int lines = 0, bad_lines = 0;
};
ResumeRecords read_resume(const std::string& dir);

// A survey.json (or a --out DIR holding one) back into the figures the time model needs;
// UsageError naming --from where it is not one this version reads.
Result read_survey_json(const std::string& path_text);

// survey.json (`json_text`, as the command made it with the run's metadata), survey.csv
// and survey.html in `dir`; with --sizes (`sizes`) links.json too, where a link has two
// sizes measured. Error when a file cannot be written.
struct LinksWritten {
  std::size_t links = 0;    // link models in links.json (0: none; no links.json)
  std::string grid_backend;  // the first two-dimensional backend (rail + device pairs), "" when none
};
LinksWritten write_survey_files(const std::filesystem::path& dir, const Result& r, const std::string& json_text,
                                bool sizes);

}  // namespace p2pscope::survey
