// predict's output, shared by its two paths (predict_output.hpp).
#include "predict_output.hpp"

#include <iostream>

#include "p2pscope/error.hpp"
#include "p2pscope/files.hpp"
#include "p2pscope/metadata.hpp"

namespace p2pscope::app {

out::Output predict_output(const std::string& format) {
  const std::initializer_list<out::Format> offered{out::Format::text, out::Format::json, out::Format::csv};
  const auto f = out::find_format(format, offered);
  if (!f) throw UsageError("--format '" + format + "': use " + out::format_choices(offered));
  return out::Output(*f);
}

nlohmann::ordered_json predict_json_head(const Context& ctx) {
  return out::measured_json(run_metadata(ctx.argv), nlohmann::json::object());
}

void write_predict(const out::Report& rep, const out::Output& output, const PredictFiles& files) {
  const Replace replace = files.force ? Replace::allow : Replace::refuse;
  const std::string text = output.print(rep);
  if (files.out.empty() || files.out == "-") {
    std::cout << text;
    std::cout.flush();
  } else {
    write_file_atomic(files.out, text, replace);
    std::cerr << "wrote " << files.out << "\n";
  }
  if (!files.html.empty()) {
    write_file_atomic(files.html, out::Output(out::Format::html).print(rep), replace);
    std::cerr << "wrote " << files.html << "\n";
  }
}

}  // namespace p2pscope::app
