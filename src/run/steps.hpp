#pragma once
// The steps of `p2pscope run`, each a child p2pscope process with its stdout in a
// file, its stderr both shown (on the stream the command passes in) and kept in
// <step>.log, and a time limit.
#include <atomic>
#include <cstddef>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace p2pscope::run {

struct Step {
  std::string name;
  std::vector<std::string> args;  // p2pscope arguments; empty: not run
  std::string stdout_name;        // file in the output directory; "" = discard
  std::string note;               // shown beside the step, e.g. why the host backend
  std::string skipped_because;    // set when args is empty
  std::vector<std::string> needs; // steps whose output this one reads: skipped with them
};

struct StepResult {
  std::string name, status;  // ok, failed, timed out, skipped, interrupted
  int exit_code = -1;
  double seconds = 0;
  std::string command, stdout_path, log_path, note;
};
nlohmann::json to_json(const StepResult& r);

class StepRunner {
 public:
  // `stop` is raised by a signal: the result is "interrupted". `pass_on` is raised with it
  // when the signal was sent to run alone: the step is then sent SIGTERM. Ctrl-C at a
  // terminal reaches the step already (the same process group); it stops itself and a
  // campaign saves what it has.
  // `say`: where each step's line (command, status) and its stderr are shown (the command
  // passes std::cerr); it must outlive the runner.
  StepRunner(std::filesystem::path out_dir, double timeout_s, const std::atomic<bool>* stop,
             const std::atomic<bool>* pass_on, std::ostream& say);
  StepResult run(const Step& step, std::size_t index, std::size_t total) const;

 private:
  std::filesystem::path out_, self_;
  double timeout_s_;
  const std::atomic<bool>* stop_;
  const std::atomic<bool>* pass_on_;
  std::ostream& say_;
};

}  // namespace p2pscope::run
