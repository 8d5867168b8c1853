// predict's ring and tree over the link models (simulate/predict_run.hpp): each op priced
// at each size by the textbook schedule over the slowest link of each step, with
// --measure the same ops and sizes run through bench nccl's sweep, predicted against
// measured per size; the report every format prints, and the page of charts.
#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/nccl_collective.hpp"
#include "bench/nccl_sweep.hpp"
#include "p2pscope/backend_table.hpp"
#include "p2pscope/charts.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/gpu_runtime.hpp"
#include "p2pscope/metadata.hpp"
#include "p2pscope/output.hpp"
#include "p2pscope/stats.hpp"
#include "p2pscope/table.hpp"
#include "p2pscope/units.hpp"
#include "simulate/nccl_model.hpp"
#include "simulate/predict_run.hpp"

namespace p2pscope::simulate {

nlohmann::ordered_json predict_json_head(const std::vector<std::string>& argv) {
  return out::measured_json(run_metadata(argv), nlohmann::json::object());
}

std::vector<std::uint64_t> checked_predict_sizes(const std::string& text) {
  const auto sizes = parse_size_list(text);
  if (sizes.empty()) throw UsageError("--sizes gave no sizes");
  for (const auto n : sizes)
    if (n == 0) throw UsageError("--sizes: a size of 0 bytes moves nothing and has no time to predict; give 1 or more");
  return sizes;
}

std::vector<int> campaign_gpus(const std::string& dir, const std::string& backend) {
  try {
    return Predictor(dir, backend).devices();
  } catch (const UsageError&) {
  }
  std::vector<int> d;
  const auto cal = read_nccl_calibration(dir);
  int most = 0;
  for (const auto& c : cal.curves) most = std::max(most, c.ranks);
  for (int i = 0; i < most; ++i) d.push_back(i);
  if (d.empty()) throw UsageError(dir + ": neither links.json (run `p2pscope analyze DIR`) nor an NCCL calibration");
  return d;
}

std::string why_no_measure(const std::vector<int>& devices, const std::string& backend) {
  if (!bench::capabilities_of(backend).gpu_links)
    return fmt::format("the campaign's links are backend {} (host memory at one end), not GPU to GPU, so there is no "
                       "NCCL run to compare with; nothing was measured", backend);
  if (!bench::nccl_collectives_built())
    return "this p2pscope was built without NCCL (no CUDA/NCCL found at build time), so nothing was measured";
  const auto rt = gpu::runtime_info();
  if (rt.device_count < 1) return "no GPU here (" + rt.why_no_gpu + "), so nothing was measured";
  for (int d : devices)
    if (d >= rt.device_count)
      return fmt::format("the campaign's device {} is not a GPU here ({} visible), so nothing was measured", d,
                         rt.device_count);
  return "";
}

// Named, not anonymous: the unity build puts this file in one batch with the NCCL model's.
namespace links_predict {
namespace {

// One op's curve: sizes, predicted and (NaN where not run) measured times.
struct Curve {
  std::vector<double> bytes, predicted_ns, measured_ns;
};

// The page's first line: the first op's largest size as predicted (and measured), then
// how far off the model is where NCCL ran, or why it did not run.
std::string predict_headline(const std::vector<std::pair<std::string, Curve>>& curves, bool measured,
                             const std::string& why_not) {
  if (curves.empty() || curves.front().second.bytes.empty()) return "Nothing was predicted.";
  const auto& [op, c] = curves.front();
  const std::size_t big = static_cast<std::size_t>(std::max_element(c.bytes.begin(), c.bytes.end()) - c.bytes.begin());
  std::string h = fmt::format("{} at {}: predicted {}", op, format_size(static_cast<std::uint64_t>(c.bytes[big])),
                              format_duration_ns(c.predicted_ns[big]));
  if (measured && std::isfinite(c.measured_ns[big]))
    h += fmt::format(", measured {} ({:+.1f} %)", format_duration_ns(c.measured_ns[big]),
                     (c.predicted_ns[big] - c.measured_ns[big]) / c.measured_ns[big] * 100);
  std::vector<double> err;
  for (const auto& [name, k] : curves)
    for (std::size_t i = 0; i < k.bytes.size(); ++i)
      if (std::isfinite(k.measured_ns[i]))
        err.push_back(std::fabs((k.predicted_ns[i] - k.measured_ns[i]) / k.measured_ns[i] * 100));
  if (err.empty())
    return h + ". Predicted only: " + (why_not.empty() ? "run with --measure to compare with NCCL" : why_not) + ".";
  const auto [lo, hi] = std::minmax_element(err.begin(), err.end());
  return h + fmt::format(". Against NCCL over {} measured cell(s): |error| {:.1f}-{:.1f} % (median {:.1f} %).",
                         err.size(), *lo, *hi, p2pscope::median(err));
}

// The page people look at: its headline, then per op (measured ops first) predicted and
// measured time against size (log-log) with the error per size where measured, the
// table, and last the assumptions (a list that opened the page and hid the answer).
std::string predict_page(const std::string& what, const std::vector<std::string>& assumptions,
                         std::vector<std::pair<std::string, Curve>> curves, const Table& t, bool measured,
                         const std::string& why_not) {
  using charts::Format;
  std::stable_partition(curves.begin(), curves.end(), [](const auto& oc) {
    return std::any_of(oc.second.measured_ns.begin(), oc.second.measured_ns.end(),
                       [](double v) { return std::isfinite(v); });
  });
  std::string body = "<h1>p2pscope predict</h1>\n<div class=\"headline\" id=\"headline\"><p><b>" +
                     charts::xml_escape(predict_headline(curves, measured, why_not)) + "</b></p></div>\n";
  body += "<div class=\"charts\">";
  for (const auto& [op, c] : curves) {
    charts::LineChart ch{op + ": time per size", {"size S (nccl-tests' count)", true, Format::size_bytes},
                         {"time", true, Format::duration_ns}, {}, 520, 320, true};
    ch.series.push_back({"predicted (link models)", charts::palette(2), c.bytes, c.predicted_ns, true, false, true});
    if (measured) ch.series.push_back({"measured (NCCL)", charts::palette(0), c.bytes, c.measured_ns, false, true, false});
    body += charts::render_line_chart(ch);
    if (!measured) continue;
    charts::LineChart err{op + ": (predicted - measured) / measured", {"size S", true, Format::size_bytes},
                          {"error", false, Format::percent}, {}, 520, 320, false};
    std::vector<double> e;
    // Percent, as the table's error_pct (the percent axis prints values as they are).
    for (std::size_t i = 0; i < c.bytes.size(); ++i)
      e.push_back((c.predicted_ns[i] - c.measured_ns[i]) / c.measured_ns[i] * 100);
    err.series.push_back({"error", charts::palette(3), c.bytes, e, true, true, false});
    body += charts::render_line_chart(err);
  }
  body += "</div>\n" + charts::html::table(t.headers(), t.rows());
  body += "<h2>How it was predicted</h2>\n<p>" + charts::xml_escape(what) + "</p>\n<ul>";
  for (const auto& a : assumptions) body += "<li>" + charts::xml_escape(a) + "</li>";
  body += "</ul>\n";
  return charts::html::page("p2pscope predict", body);
}

// The table and curves of a run, filled op by op.
struct PredictTable {
  out::ResultTable t;
  std::vector<std::pair<std::string, Curve>> curves;
  std::vector<std::string> unmeasured;
  std::size_t extrapolated = 0;
};

// --measure: the op over the campaign's GPUs at every size, through bench nccl's sweep.
std::vector<bench::NcclSweepRow> measure_op(const LinkPredictArgs& o, const Predictor& pr,
                                            Collective op, const std::vector<std::uint64_t>& sizes) {
  bench::NcclSweepSpec spec;
  spec.collective.op = bench::parse_nccl_op(to_string(op));
  spec.collective.type = bench::parse_nccl_type(o.dtype);
  spec.collective.gpus = pr.devices();
  spec.collective.warmup = o.warmup;
  spec.collective.iters = o.iters;
  spec.sizes = sizes;
  auto r = bench::run_nccl_sweep(spec);
  if (!r.stopped.empty()) throw Error("predict --measure: " + to_string(op) + ": " + r.stopped);
  return std::move(r.rows);
}

// One op: predicted at each size (at the size NCCL ran, when measured: it rounds S to
// whole elements per rank) and, where it ran, measured with the error.
void add_op(const LinkPredictArgs& o, const Predictor& pr, Collective op, Algorithm algo,
            const std::vector<std::uint64_t>& sizes, bool measuring, PredictTable& pt) {
  const auto measured = measuring ? measure_op(o, pr, op, sizes) : std::vector<bench::NcclSweepRow>{};
  Curve& curve = pt.curves.emplace_back(to_string(op), Curve{}).second;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const bench::NcclSweepRow* m = i < measured.size() ? &measured[i] : nullptr;
    const std::uint64_t at = m ? m->bytes : sizes[i];
    const auto r = pr.predict(op, algo, at);
    curve.bytes.push_back(static_cast<double>(at));
    curve.predicted_ns.push_back(r.time_ns);
    curve.measured_ns.push_back(m ? m->span_ns : NAN);
    std::vector<out::Cell> row = {to_string(op), to_string(algo), at, at, r.steps, r.time_ns,
                                  r.algbw_bytes_per_s, r.busbw_bytes_per_s, r.bottleneck,
                                  r.extrapolated ? "yes" : "no"};
    pt.extrapolated += r.extrapolated;
    if (m) {
      const double t = m->span_ns;  // nccl-tests' time
      row.insert(row.end(), {t, (r.time_ns - t) / t, m->first_bad < 0 ? "ok" : fmt::format("BAD rank {}", m->bad_rank)});
    } else if (measuring) {
      row.insert(row.end(), {"", "", "not measured"});
    }
    pt.t.add_row(std::move(row));
  }
}

// The columns: times in ns shown in us, rates in bytes/s shown in GB/s (1e9 B/s), the
// error a fraction shown in %.
out::ResultTable predict_table(bool measuring) {
  using out::Hint, out::Unit;
  std::vector<out::Column> cols = {{"op"},
                                   {"algo"},
                                   {"size", Hint::size},
                                   {"size_bytes", Hint::bytes},
                                   {"steps", Hint::count},
                                   {"predicted_us", Hint::duration, Unit::us, 3},
                                   {"algbw_GBps", Hint::byte_rate, Unit::GBps, 3},
                                   {"busbw_GBps", Hint::byte_rate, Unit::GBps, 3},
                                   {"bottleneck"},
                                   {"extrapolated"}};
  if (measuring)
    cols.insert(cols.end(),
                {{"measured_us", Hint::duration, Unit::us, 3}, {"error_pct", Hint::ratio, Unit::percent, 2}, {"check"}});
  return out::ResultTable(std::move(cols));
}

// What a ring or tree run holds besides its rows, for the JSON document and the text.
struct RunFacts {
  std::string what, no_measure;
  std::vector<std::string> assumptions;
  Algorithm algo;
  bool measuring;
};

nlohmann::ordered_json predict_json(const LinkPredictArgs& o, const Predictor& pr, const RunFacts& f,
                                    const PredictTable& pt, const std::vector<std::string>& argv) {
  nlohmann::ordered_json j = predict_json_head(argv);
  j["kind"] = "p2pscope_predict";
  j["campaign"] = o.dir;
  j["backend"] = pr.backend();
  j["devices"] = pr.devices();
  j["time_source"] = pr.time_source();
  j["algorithm"] = to_string(f.algo);
  j["astra_backend"] = o.astra_backend;  // whose schedule --algo ring follows
  j["endpoint_delay_ns"] = o.endpoint_delay_ns;
  j["description"] = f.what;
  j["assumptions"] = f.assumptions;
  j["notes"] = pr.notes();
  j["measure"] = {{"asked", o.measure}, {"ran", f.measuring}, {"why_not", f.no_measure}, {"dtype", o.dtype},
                  {"unmeasured", pt.unmeasured}};
  // The rows as text shows them (figures parsed back to numbers), as predict always wrote them.
  j["rows"] = nlohmann::ordered_json::parse(out::dump_json(pt.t.rendered().to_json()));
  return j;
}

// The run for every printer: the description, assumptions and table for people, the
// table for csv, the JSON document, and the page of charts.
out::Report predict_report(const LinkPredictArgs& o, const Predictor& pr, const RunFacts& f,
                           const PredictTable& pt, const std::vector<std::string>& argv) {
  out::Report rep;
  std::string head = "# p2pscope predict: " + f.what + "\n";
  for (const auto& a : f.assumptions) head += "# assumes: " + a + "\n";
  rep.text.emplace_back(std::move(head));
  rep.tables.push_back(pt.t);
  rep.text.emplace_back(pt.t);
  rep.json = [&o, &pr, &f, &pt, &argv] { return out::JsonDoc(predict_json(o, pr, f, pt, argv)); };
  rep.html = [&f, &pt] {
    return predict_page(f.what, f.assumptions, pt.curves, pt.t.rendered(), f.measuring, f.no_measure);
  };
  return rep;
}

}  // namespace
}  // namespace links_predict

LinkPrediction predict_links(const LinkPredictArgs& a, const std::vector<std::string>& argv, const PredictHooks& hooks) {
  using namespace links_predict;
  const auto ops = parse_collective_list(a.ops.empty() ? "allreduce,allgather,reducescatter,alltoall,broadcast" : a.ops);
  const Algorithm algo = parse_algorithm(a.algo);
  // Held where the report's functions find them when it is printed, after this returns.
  struct State {
    State(const LinkPredictArgs& a, const std::vector<std::string>& v)
        : args(a), pr(a.dir, a.backend, parse_astra_backend(a.astra_backend), a.endpoint_delay_ns), argv(v) {}
    LinkPredictArgs args;
    Predictor pr;
    std::vector<std::string> argv;
    RunFacts facts{};
    PredictTable pt{predict_table(false), {}, {}, 0};
  };
  const auto st = std::make_shared<State>(a, argv);
  const Predictor& pr = st->pr;
  if (hooks.say)
    for (const auto& n : pr.notes()) hooks.say("note: " + n);

  LinkPrediction out;
  if (a.measure && hooks.before_measure) hooks.before_measure();  // it drives the campaign's GPUs itself
  // Where it could not run even if asked (host links, no NCCL) the page says why, rather
  // than "run with --measure"; the GPU check is left to --measure, as it starts CUDA.
  const bool cannot = !bench::capabilities_of(pr.backend()).gpu_links || !bench::nccl_collectives_built();
  if (a.measure || cannot) out.no_measure = why_no_measure(pr.devices(), pr.backend());
  out.measuring = a.measure && out.no_measure.empty();
  st->pt.t = predict_table(out.measuring);
  for (const auto op : ops) add_op(a, pr, op, algo, a.sizes, out.measuring, st->pt);

  std::string devs;
  for (int d : pr.devices()) devs += (devs.empty() ? "" : ",") + std::to_string(d);
  st->facts = RunFacts{fmt::format("collectives predicted from {}/links.json: backend {}, {} ranks (devices {}), {} "
                                   "timing, {} algorithm; GB/s = 1e9 B/s; error_pct = (predicted - measured) / measured",
                                   a.dir, pr.backend(), pr.devices().size(), devs, pr.time_source(), to_string(algo)),
                       out.no_measure, pr.assumptions(algo), algo, out.measuring};
  out.report = predict_report(st->args, st->pr, st->facts, st->pt, st->argv);
  // The report's functions read the state by reference: keep it alive as long as they are.
  const auto json = out.report.json;
  const auto html = out.report.html;
  out.report.json = [st, json] { return json(); };
  out.report.html = [st, html] { return html(); };
  out.unmeasured = st->pt.unmeasured;
  out.extrapolated = st->pt.extrapolated;
  out.rows = st->pt.t.rows().size();
  return out;
}

}  // namespace p2pscope::simulate
