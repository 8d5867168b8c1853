// p2pscope: measure, diagnose and tune communication between GPUs.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "habits.hpp"
#include "p2pscope/phase_trace.hpp"
#include "p2pscope/error.hpp"

namespace {
// Thrown by the root's parse-complete callback under P2PSCOPE_PARSE_ONLY: CLI11 runs it
// after every option is parsed and checked, before any subcommand's callback. (Replacing
// the callbacks instead freed the options they own while CLI11 still wrote them: ASan.)
struct ParseOnlyDone {};

// The CLI11 type name ("INT", "FLOAT") of option `name` on the command line's path of
// subcommands, for a refusal said in p2pscope's words; "" when none has it.
std::string option_type(const CLI::App& root, const std::string& name) {
  for (const CLI::App* at = &root; at != nullptr;) {
    if (const CLI::Option* o = at->get_option_no_throw(name)) return o->get_type_name();
    const auto subs = at->get_subcommands();
    at = subs.empty() ? nullptr : subs.back();
  }
  return "";
}
// Every command on the root, in the order --help lists them.
void add_commands(CLI::App& root, p2pscope::app::Context& ctx) {
  using namespace p2pscope;
  root.require_subcommand(1);
  root.set_version_flag("--version", [] { return app::version_text(); });
  app::add_topo_command(root, ctx);
  app::add_run_command(root, ctx);
  auto* bench = root.add_subcommand("bench", "Point-to-point and collective benchmarks");
  bench->require_subcommand(1);
  app::add_bench_commands(*bench, ctx);
  app::add_bench_tcp_command(*bench, ctx);
  app::add_sweep_commands(root, ctx);
  app::add_profile_command(root, ctx);
  app::add_analyze_command(root, ctx);
  app::add_irq_commands(root, ctx);
  app::add_doctor_command(root, ctx);
  app::add_monitor_command(root, ctx);
  app::add_export_command(root, ctx);
  app::add_predict_command(root, ctx);
  app::add_compare_command(root, ctx);
  app::add_survey_command(root, ctx);
}

// Words CLI11 did not take: CLI11 lists them reversed and knows no other tool's habits,
// so they are said in order, with hints. Exit 2.
int unexpected_arguments(const CLI::App& root) {
  const CLI::App* at = &root;
  std::string command;
  for (auto subs = root.get_subcommands(); !subs.empty(); subs = at->get_subcommands()) {
    at = subs.back();
    command += (command.empty() ? "" : " ") + at->get_name();
  }
  std::vector<std::string> known;
  for (const auto* o : at->get_options())
    for (const auto& l : o->get_lnames()) known.push_back("--" + l);
  std::vector<std::string> extra = at->remaining(false);
  if (extra.empty()) extra = root.remaining(true);
  std::fprintf(stderr, "%s\nRun 'p2pscope %s--help' for its options.\n",
               p2pscope::app::unexpected_arguments_message(command, extra, known).c_str(),
               command.empty() ? "" : (command + " ").c_str());
  return 2;
}

// Any other refusal of CLI11's, in p2pscope's words. Exit 2.
int parse_error(const CLI::App& root, const CLI::ParseError& e, int argc, char** argv) {
  // CLI11 says only "A subcommand is required" for a misspelt one: name it.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const auto* sub : root.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "p2pscope: unknown subcommand '%s'; the subcommands are: %s\n", argv[1], names.c_str());
      return 2;
    }
  }
  const std::string words =
      p2pscope::app::parse_error_words(e.what(), [&root](const std::string& name) { return option_type(root, name); });
  std::fprintf(stderr, "p2pscope: %s\nRun 'p2pscope --help' (or '<subcommand> --help') for usage.\n", words.c_str());
  return 2;
}

// What a command threw, as a message and an exit status: 2 for the user's input, 1 for
// the world. Called inside a catch block; rethrows to tell the kinds apart.
int error_exit() {
  using namespace p2pscope;
  try {
    throw;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "p2pscope: %s\n", e.what());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "p2pscope: error: %s\n", e.what());
    return 1;
  } catch (const nlohmann::json::exception&) {
    // A reader that took a file's shape on trust: its text ("[json.exception.type_error.302]
    // type must be number") names the library, not the file. Each reader names its own
    // fields (predict --measured, doctor --results); this is the net under the rest.
    std::fprintf(stderr,
                 "p2pscope: a JSON input is not in the form this command reads (a field of another type, or "
                 "missing); check the files given against the command's --help\n");
    return 2;
  } catch (const std::invalid_argument&) {
    // std::stoi and kin say only their own name ("stoull").
    std::fprintf(stderr,
                 "p2pscope: internal error: a number in the input could not be read; please report the "
                 "command line that led here\n");
    return 1;
  } catch (const std::out_of_range&) {
    std::fprintf(stderr,
                 "p2pscope: internal error: a number or index in the input is out of range; please report "
                 "the command line that led here\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "p2pscope: internal error: %s\n", e.what());
    return 1;
  }
}
}  // namespace

int main(int argc, char** argv) {
  using namespace p2pscope;
  trace_phase("main");
  app::Context ctx;
  ctx.argv.assign(argv, argv + argc);

  CLI::App root{"p2pscope: measure, diagnose and tune GPU-to-GPU communication", "p2pscope"};
  add_commands(root, ctx);
  // P2PSCOPE_PARSE_ONLY=1: parse the command line and stop, exit 0, before any command
  // runs (the test that every command the doctor suggests parses uses it).
  const bool parse_only = std::getenv("P2PSCOPE_PARSE_ONLY") != nullptr;
  if (parse_only) root.parse_complete_callback([] { throw ParseOnlyDone{}; });
  try {
    root.parse(argc, argv);
  } catch (const ParseOnlyDone&) {
    return 0;
  } catch (const CLI::CallForHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return root.exit(e);
  } catch (const CLI::ExtrasError&) {
    return unexpected_arguments(root);
  } catch (const CLI::ParseError& e) {
    return parse_error(root, e, argc, argv);
  } catch (...) {
    return error_exit();
  }
  trace_phase("exit");
  return ctx.exit_code;
}
