// Child processes for `p2pscope run` (run/steps.hpp, over p2pscope/child_process.hpp): this same binary,
// stdout to a file, stderr to both the terminal and <step>.log, SIGTERM then SIGKILL
// when a step outlives its time limit.
#include "run/steps.hpp"

#include <cstdio>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/child_process.hpp"
#include "p2pscope/clock.hpp"
#include "p2pscope/error.hpp"

namespace p2pscope::run {
namespace fs = std::filesystem;
namespace {

std::string shell_quote(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t'\"$\\;&|<>*?") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

nlohmann::json to_json(const StepResult& r) {
  nlohmann::json j{{"name", r.name},     {"status", r.status}, {"exit_code", r.exit_code},
                   {"seconds", r.seconds}, {"command", r.command}};
  if (!r.stdout_path.empty()) j["stdout"] = r.stdout_path;
  if (!r.log_path.empty()) j["log"] = r.log_path;
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

StepRunner::StepRunner(fs::path out_dir, double timeout_s, const std::atomic<bool>* stop,
                       const std::atomic<bool>* pass_on, std::ostream& say)
    : out_(std::move(out_dir)), timeout_s_(timeout_s), stop_(stop), pass_on_(pass_on), say_(say) {
  std::error_code ec;
  self_ = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this program's path in /proc/self/exe: " + ec.message());
}

StepResult StepRunner::run(const Step& step, std::size_t index, std::size_t total) const {
  StepResult r;
  r.name = step.name;
  r.note = step.note;
  const std::string tag = fmt::format("[{}/{}] {}", index, total, step.name);
  if (step.args.empty()) {
    r.status = "skipped";
    r.note = step.skipped_because;
    say_ << tag << ": skipped (" << step.skipped_because << ")\n";
    return r;
  }
  r.command = "p2pscope";
  for (const auto& a : step.args) r.command += " " + shell_quote(a);
  say_ << tag << ": " << r.command << (step.note.empty() ? "" : "  [" + step.note + "]") << "\n";

  r.log_path = (out_ / (step.name + ".log")).string();
  r.stdout_path = step.stdout_name.empty() ? "" : (out_ / step.stdout_name).string();
  std::ofstream log(r.log_path);
  ChildSpec spec;
  spec.argv = {self_.string()};
  spec.argv.insert(spec.argv.end(), step.args.begin(), step.args.end());
  spec.out = r.stdout_path.empty() ? ChildSpec::Output::discard : ChildSpec::Output::file;
  spec.out_path = r.stdout_path;
  spec.err = ChildSpec::Output::capture;
  ChildWait how;
  how.timeout_s = timeout_s_;
  how.kill_after_s = 10;
  // A signal sent to `run` alone (kill, timeout(1)) reaches the step too, once: it then
  // stops within a second and writes what it measured. Ctrl-C reached the whole group,
  // the step included: passed on as well, the step took it for a second signal.
  how.stop = pass_on_;
  how.on_err = [&log, this](std::string_view piece) {
    log.write(piece.data(), static_cast<std::streamsize>(piece.size()));
    log.flush();
    say_.write(piece.data(), static_cast<std::streamsize>(piece.size()));
  };
  how.on_timeout = [&] { say_ << tag << ": over the " << timeout_s_ << " s limit (--step-timeout): stopping it\n"; };
  const ChildResult c = run_child(spec, how);
  const bool timed_out = c.timed_out;
  r.seconds = c.elapsed_s;
  r.exit_code = c.exit_code;
  const bool interrupted = stop_ != nullptr && stop_->load();
  r.status = interrupted ? "interrupted" : timed_out ? "timed out" : r.exit_code == 0 ? "ok" : "failed";
  say_ << tag << ": " << r.status << fmt::format(" in {:.1f} s", r.seconds)
            << (r.status == "ok" ? "" : fmt::format(" (exit {}; log {})", r.exit_code, r.log_path)) << "\n";
  return r;
}

}  // namespace p2pscope::run
