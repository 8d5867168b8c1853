// predict's NCCL model (nccl_model.hpp): the calibration read back, and calls priced.
#include "simulate/nccl_model.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "p2pscope/collective.hpp"
#include "p2pscope/enum_names.hpp"
#include "p2pscope/error.hpp"
#include "p2pscope/units.hpp"
#include "simulate/link_set.hpp"

namespace p2pscope::simulate {
namespace fs = std::filesystem;
namespace {

// NCCL's own default model where nothing was measured (NCCL 2.28's tuning table on NVLink,
// ring: base latency + per-step latency by protocol; the bus bandwidth it assumes).
constexpr double kDefaultLaunchNs = 8000, kDefaultStepNs = 600, kDefaultBusBytesPerS = 360e9;
// Per-step latency used to price the steps an op differs from its class mate by: NCCL's
// NVLink ring hwLat for LL, LL128, Simple (us), its defaults, not measured.
double default_step_ns(const std::string& proto) {
  if (proto == "LL") return 600;
  if (proto == "LL128") return 1100;
  return 2500;
}

// A timed span above this many times (launches + GPU time) was disturbed (see predict).
// The launch cost is a lower line through every rank count's small sizes, so a span
// within 1.5x of the sum is jitter, not a disturbance.
constexpr double kDisturbedSpanFactor = 1.5;

// The op's row of the collective table (its wire bytes, steps and calls live there), by
// bench nccl's name; a calibration file naming another op is refused where it is read.
CollectiveOp op_of(const std::string& op) {
  if (const auto c = find_enum(kCollectiveOps, op)) return *c;
  throw UsageError(fmt::format("NCCL model: no collective '{}'; the ops are {}", op, enum_choices(kCollectiveOps)));
}
bool ring_op(const std::string& op) { return collective_row(op_of(op)).schedule != NcclSchedule::p2p; }
double wire_of(const std::string& op, int n, double S) { return wire_bytes(op_of(op), n, S); }
int steps_of(const std::string& op, int n) { return ring_steps(op_of(op), n); }
int calls_of(const std::string& op, int n) { return nccl_calls(op_of(op), n); }

NcclCurve curve_from_json(const nlohmann::json& j, const std::string& where) {
  NcclCurve c;
  c.op = j.at("op").get<std::string>();
  c.ranks = j.at("ranks").get<int>();
  if (!find_enum(kCollectiveOps, c.op))
    throw UsageError(fmt::format("{}: op '{}' is no collective the model knows ({})", where, c.op,
                                 enum_choices(kCollectiveOps)));
  if (c.ranks < 1) throw UsageError(fmt::format("{}: {} at {} ranks: a rank count is 1 or more", where, c.op, c.ranks));
  for (const auto& r : j.at("rows")) {
    const double S = r.at("size_bytes").get<double>();
    const double span = r.at("time_us").get<double>() * 1e3;
    double gpu = span;
    if (r.contains("per_iteration_ns") && r["per_iteration_ns"].is_object())
      gpu = r["per_iteration_ns"].value("median", span);
    if (!(S > 0) || !(span > 0) || !(gpu > 0))
      throw UsageError(fmt::format("{}: a row of {} has a size or time that is not positive", where, c.op));
    if (!c.bytes.empty() && S == c.bytes.back()) {  // sizes below n x element size round to one: keep the first
      continue;
    }
    if (!c.bytes.empty() && S < c.bytes.back())
      throw UsageError(fmt::format("{}: the rows of {} are not in ascending size", where, c.op));
    c.bytes.push_back(S);
    c.span_ns.push_back(span);
    c.gpu_ns.push_back(gpu);
  }
  if (c.bytes.size() < 2) throw UsageError(fmt::format("{}: {} has fewer than two sizes", where, c.op));
  return c;
}

// Log-log interpolation of y against x; beyond the ends the nearest segment's line (in
// linear terms above, where time grows with bytes; held flat below).
double interp(const std::vector<double>& x, const std::vector<double>& y, double at, bool* outside) {
  const std::size_t n = x.size();
  if (at <= x.front()) {
    *outside = at < x.front() * (1 - 1e-9);
    return y.front();
  }
  if (at >= x.back()) {
    *outside = at > x.back() * (1 + 1e-9);
    const double slope = (y[n - 1] - y[n - 2]) / (x[n - 1] - x[n - 2]);
    return y[n - 1] + std::max(0.0, slope) * (at - x[n - 1]);
  }
  *outside = false;
  const auto it = std::upper_bound(x.begin(), x.end(), at);
  const std::size_t i = static_cast<std::size_t>(it - x.begin());
  const double t = (std::log(at) - std::log(x[i - 1])) / (std::log(x[i]) - std::log(x[i - 1]));
  return std::exp(std::log(y[i - 1]) + t * (std::log(y[i]) - std::log(y[i - 1])));
}

// The host cost against the calls per iteration: the line h0 + h1 x calls (h1 >= 0) that
// lies on or below every op's point and closest to them. Not a least-squares line:
// interference only adds time, so an op whose whole run was slowed (a process's first
// op, 42 us where the quiet host took 23) lifted the fitted cost of every op by a third.
std::pair<double, double> lower_line(const std::vector<std::pair<double, double>>& v) {
  std::pair<double, double> best{0.0, 0.0};
  double best_gap = INFINITY;
  const auto consider = [&](double h0, double h1) {
    double gap = 0;
    for (const auto& [x, y] : v) {
      const double below = y - (h0 + h1 * x);
      if (below < -1e-6 * std::max(1.0, y)) return;  // above a point: not an envelope
      gap += below;
    }
    if (gap < best_gap) best_gap = gap, best = {std::max(0.0, h0), h1};
  };
  for (std::size_t i = 0; i < v.size(); ++i) {
    consider(v[i].second, 0.0);  // flat through one point
    for (std::size_t j = 0; j < v.size(); ++j) {
      if (v[j].first <= v[i].first) continue;
      const double h1 = (v[j].second - v[i].second) / (v[j].first - v[i].first);
      if (h1 >= 0) consider(v[i].second - h1 * v[i].first, h1);
    }
  }
  return best;
}

}  // namespace

const NcclCurve* NcclCalibration::find(const std::string& op, int ranks) const {
  for (const auto& c : curves)
    if (c.op == op && c.ranks == ranks) return &c;
  return nullptr;
}

NcclCalibration read_nccl_calibration(const std::string& campaign_dir) {
  NcclCalibration cal;
  const fs::path dir = fs::path(campaign_dir) / "nccl-calibration";
  cal.dir = dir.string();
  const fs::path manifest = dir / "manifest.json";
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec)) return cal;
  cal.present = true;
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(read_text_file(manifest.string()));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("{}: not the calibration's manifest ({}); run `p2pscope profile --resume` or delete the "
                                 "folder and profile again", manifest.string(), e.what()));
  }
  if (!m.contains("runs") || !m["runs"].is_array())
    throw UsageError(manifest.string() + ": no \"runs\" list; it is not p2pscope's NCCL calibration manifest");
  for (const auto& r : m["runs"]) {
    const std::string role = r.value("role", std::string());
    const std::string json_name = r.value("json", std::string());
    if (r.value("exit_code", 1) != 0) {
      cal.notes.push_back(fmt::format("calibration run {} failed (exit {}): its figures are missing", json_name,
                                      r.value("exit_code", 1)));
      continue;
    }
    const fs::path jf = dir / json_name;
    if (role == "timed" || role == "host") {
      auto& into = role == "timed" ? cal.curves : cal.host_curves;
      if (!fs::is_regular_file(jf, ec)) {
        cal.notes.push_back(jf.string() + " is missing");
        continue;
      }
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(read_text_file(jf.string()));
        if (j.contains("ops"))
          for (const auto& one : j["ops"]) into.push_back(curve_from_json(one, jf.string()));
        else
          into.push_back(curve_from_json(j, jf.string()));
      } catch (const nlohmann::json::exception& e) {
        throw UsageError(fmt::format("{}: not bench nccl's JSON ({}); a cut or damaged calibration file: run the "
                                     "campaign's profile again", jf.string(), e.what()));
      }
    } else if (role == "choices") {
      const fs::path lf = dir / r.value("nccl_log", std::string());
      if (!fs::is_regular_file(lf, ec)) {
        cal.notes.push_back(lf.string() + " is missing: NCCL's choices at this rank count are unknown");
        continue;
      }
      NcclTuning t = parse_nccl_tuning(read_text_file(lf.string()));
      if (cal.nccl_version.empty()) cal.nccl_version = t.version;
      const int n = r.value("ranks", 0);
      merge(cal.choices[n], t);
    }
  }
  return cal;
}

NcclModel::NcclModel(NcclCalibration cal) : cal_(std::move(cal)) {
  // Host cost per iteration: at each rank count, the lower-quartile span at the smallest sizes
  // (where the GPU finishes long before the next launch) against the calls per op.
  std::map<int, std::vector<std::pair<double, double>>> pts;  // ranks -> (calls, ns)
  std::vector<const NcclCurve*> all;
  for (const auto& c : cal_.curves) all.push_back(&c);
  for (const auto& c : cal_.host_curves) all.push_back(&c);
  for (const NcclCurve* cp : all) {
    const NcclCurve& c = *cp;
    std::vector<double> small;
    // The host's share of a span: launch and GPU overlap as span^3 = host^3 + gpu^3 (fitted on
    // the 4 x H200/H100 campaigns: geomean 4.8 % against 6.6 % for max(host, gpu)).
    for (std::size_t i = 0; i < c.bytes.size() && c.bytes[i] <= 4096; ++i)
      small.push_back(std::cbrt(std::max(0.0, std::pow(c.span_ns[i], 3) - std::pow(c.gpu_ns[i], 3))));
    if (small.empty()) continue;
    // The lower quartile, not the median: interference only adds time, and a process's
    // first op can run slow for tens of ms (bench nccl --settle): on 4 x H100 the first
    // op's small sizes read 36-221 us where the quiet host took 24.
    std::sort(small.begin(), small.end());
    pts[c.ranks].push_back({static_cast<double>(calls_of(c.op, c.ranks)), small[small.size() / 4]});
  }
  for (const auto& [n, v] : pts) host_fit_[n] = v.size() == 1 ? std::make_pair(0.0, v[0].second / v[0].first) : lower_line(v);
}

double NcclModel::host_ns(int ranks, int calls, bool* measured) const {
  const auto it = host_fit_.find(ranks);
  if (measured) *measured = it != host_fit_.end();
  if (it != host_fit_.end()) return it->second.first + it->second.second * calls;
  if (host_fit_.empty()) return 0;
  // Another rank count: the nearest one's cost per call.
  auto best = host_fit_.begin();
  for (auto i = host_fit_.begin(); i != host_fit_.end(); ++i)
    if (std::abs(i->first - ranks) < std::abs(best->first - ranks)) best = i;
  return best->second.first + best->second.second * calls;
}

void NcclModel::scale_host(int ranks, double factor) {
  if (const auto it = host_fit_.find(ranks); it != host_fit_.end() && factor > 0)
    it->second = {it->second.first * factor, it->second.second * factor};
}

double NcclModel::gpu_from_curve(const NcclCurve& c, double wire, bool* extrapolated) const {
  std::vector<double> w;
  for (double S : c.bytes) w.push_back(wire_of(c.op, c.ranks, S));
  return interp(w, c.gpu_ns, wire, extrapolated);
}

// A ring of n ranks runs k(n) steps of b = S/n bytes each (allgather and reducescatter
// n-1, allreduce 2(n-1)). At 2 ranks every step is an edge step (it reads the user's
// input or writes the output, beside the link); at more ranks the steps between are
// middle steps that only receive and forward. So the op at n is the same op timed at n0
// with the same bytes per step, plus (or less) the middle steps the rank counts differ
// by, each priced as allreduce shows one: its time at n less its time at n0, at the same
// bytes per step, over the steps that differ. On 4 x H100 (tests/fixtures) this put
// allgather and reducescatter at 4 ranks within 2.4-2.6 % geomean at 64 KiB - 1 GiB
// from the 2-rank runs, against 7.1-7.8 % for allreduce's plain time ratio: the middle
// steps run at the link's speed (~365 GB/s, as broadcast and sendrecv do), the edge
// steps slower (an allgather of 2 ranks moves 270 GB/s).
//
// Where NCCL runs the op at n ranks in another protocol than the n0-rank run at the same
// bytes per step, the step times differ in kind: on 4 x H100 and 4 x H200 NCCL's allgather
// and reducescatter switch from LL to Simple at S = 4 MiB at both 2 and 4 ranks, so the
// 4-rank call of 4 MiB (1 MiB a step) was priced from the 2-rank LL call of 2 MiB and its
// GPU time came out 35 % short on both machines. Then every term is taken from the sizes
// each curve ran in the n-rank protocol (gpu_in_proto), and the basis says so.
void NcclModel::ring_steps_from(const NcclCurve& same, int n, double S, NcclPrediction* p) const {
  const NcclCurve* ar_n = cal_.find("allreduce", n);
  const NcclCurve* ar_0 = cal_.find("allreduce", same.ranks);
  if (!ar_n || !ar_0 || same.ranks == n) return;
  const int n0 = same.ranks;
  const double b = S / n;  // bytes per step
  bool e0 = false, e1 = false, e2 = false;
  double at_n0 = interp(same.bytes, same.gpu_ns, b * n0, &e0);
  double ar_at_n = interp(ar_n->bytes, ar_n->gpu_ns, b * n, &e1);
  double ar_at_n0 = interp(ar_0->bytes, ar_0->gpu_ns, b * n0, &e2);
  const std::string want = proto_at(same.op, n, S), had = proto_at(same.op, n0, b * n0);
  std::string switched;
  if (!want.empty() && !had.empty() && want != had) {
    bool f0 = false, f1 = false, f2 = false;
    const double a = gpu_in_proto(same, want, b * n0, &f0), c = gpu_in_proto(*ar_n, want, b * n, &f1),
                 d = gpu_in_proto(*ar_0, want, b * n0, &f2);
    if (std::isfinite(a) && std::isfinite(c) && std::isfinite(d)) {
      at_n0 = a, ar_at_n = c, ar_at_n0 = d;
      e0 = f0, e1 = f1, e2 = f2;
      switched = fmt::format("; NCCL runs {} at {} ranks here but {} at {} ranks at these bytes per step, so each term "
                             "is taken from the sizes its run made in {}", want, n, had, n0, want);
    } else {
      switched = fmt::format("; NCCL runs {} at {} ranks here but {} at {} ranks at these bytes per step, and the "
                             "calibration has too few {} sizes to price it so: expect this cell off", want, n, had, n0, want);
    }
  }
  const int middle_ar = steps_of("allreduce", n) - steps_of("allreduce", n0);
  const double per_step = std::max(0.0, (ar_at_n - ar_at_n0) / middle_ar);
  const int middle = steps_of(same.op, n) - steps_of(same.op, n0);
  p->gpu_ns = std::max(0.5 * at_n0, at_n0 + middle * per_step);
  p->extrapolated = e0 || e1 || e2;
  p->basis = fmt::format("{} timed at {} ranks at the same {} per ring step, {} {} middle step(s) priced by allreduce "
                         "({:.2f} us each there: its {}-rank time less its {}-rank time, per step){}",
                         same.op, n0, format_size(static_cast<std::uint64_t>(b)), middle >= 0 ? "plus" : "less",
                         std::abs(middle), per_step / 1e3, n, n0, switched);
}

// allgather and reducescatter of n ranks run n-1 ring steps of b = S/n bytes; allreduce
// of n ranks at the same S runs 2(n-1) such steps. So the op is allreduce at n less n-1
// steps, each priced as allreduce prices a step: its time at another rank count m (the
// farthest from n) less its time at n, at the same bytes per step, over the steps between. Used where the op
// itself was not timed at 2 ranks (predict --hold-out 2, --nccl-calibration quick): on six
// 4-GPU leases (H100, H200) it put the GPU time of allgather and reducescatter within
// 1.7-3.8 % geomean at 64 KiB - 1 GiB at 2 ranks and 1.1-4.7 % at 4 ranks, from allreduce
// alone, where the 3-rank runs put 2 ranks 19-47 % off. The protocol rule of
// ring_steps_from applies: terms come from the sizes each allreduce ran in the op's
// protocol (at 2 ranks and 2 MiB allreduce runs Simple, allgather still LL: 41-58 % off
// without it).
bool NcclModel::allreduce_less_steps(const std::string& op, int n, double S, NcclPrediction* p) const {
  const NcclCurve* ar_n = cal_.find("allreduce", n);
  // The other rank count farthest from n: the most steps between them to price one by.
  const NcclCurve* ar_m = nullptr;
  for (const auto& c : cal_.curves)
    if (c.op == "allreduce" && c.ranks != n && (!ar_m || std::abs(c.ranks - n) > std::abs(ar_m->ranks - n))) ar_m = &c;
  if (!ar_n || !ar_m) return false;
  const int m = ar_m->ranks;
  const double b = S / n;  // bytes per step
  bool e0 = false, e1 = false;
  double at_n = interp(ar_n->bytes, ar_n->gpu_ns, b * n, &e0);
  double at_m = interp(ar_m->bytes, ar_m->gpu_ns, b * m, &e1);
  const std::string want = proto_at(op, n, S);
  std::string switched;
  if (!want.empty() && (want != proto_at("allreduce", n, b * n) || want != proto_at("allreduce", m, b * m))) {
    bool f0 = false, f1 = false;
    const double a = gpu_in_proto(*ar_n, want, b * n, &f0), c = gpu_in_proto(*ar_m, want, b * m, &f1);
    if (std::isfinite(a) && std::isfinite(c)) {
      at_n = a, at_m = c, e0 = f0, e1 = f1;
      switched = fmt::format("; NCCL runs {} here, so allreduce's terms come from its sizes in {}", want, want);
    } else {
      switched = fmt::format("; NCCL runs {} here and allreduce another protocol, with too few {} sizes (or no "
                             "choices logged at {} ranks) to price it so: expect this cell off", want, want, m);
    }
  }
  const double per_step = std::max(0.0, (at_m - at_n) / (steps_of("allreduce", m) - steps_of("allreduce", n)));
  const int fewer = steps_of("allreduce", n) - steps_of(op, n);
  p->gpu_ns = std::max(0.5 * at_n, at_n - fewer * per_step);
  p->extrapolated = e0 || e1;
  p->basis = fmt::format("allreduce timed at {} ranks at the same {} per ring step, less the {} step(s) it has more, "
                         "each priced by allreduce ({:.2f} us: its {}-rank time less its {}-rank time, per step){}",
                         n, format_size(static_cast<std::uint64_t>(b)), fewer, per_step / 1e3, m, n, switched);
  return true;
}

std::string NcclModel::proto_at(const std::string& op, int ranks, double S) const {
  const auto it = cal_.choices.find(ranks);
  if (it == cal_.choices.end()) return "";
  const NcclChoice* c = find_choice(it->second, op, static_cast<std::uint64_t>(std::llround(S)), ranks);
  return c ? c->proto : "";
}

// Between two of its sizes in that protocol: log-log, as everywhere. Beyond them, the
// line time = a + S / B through the two nearest (a protocol's time grows linearly with
// bytes past its latency), held at or above half the nearest point's time.
double NcclModel::gpu_in_proto(const NcclCurve& c, const std::string& proto, double S, bool* extrapolated) const {
  std::vector<double> x, y;
  for (std::size_t i = 0; i < c.bytes.size(); ++i)
    if (proto_at(c.op, c.ranks, c.bytes[i]) == proto) x.push_back(c.bytes[i]), y.push_back(c.gpu_ns[i]);
  if (x.size() < 2) return NAN;
  if (S >= x.front() && S <= x.back()) return interp(x, y, S, extrapolated);
  *extrapolated = true;
  const std::size_t i = S < x.front() ? 0 : x.size() - 2;
  const double slope = std::max(0.0, (y[i + 1] - y[i]) / (x[i + 1] - x[i]));
  const std::size_t near = S < x.front() ? 0 : x.size() - 1;
  return std::max(0.5 * y[near], y[near] + slope * (S - x[near]));
}

NcclPrediction NcclModel::predict(const std::string& op, int n, std::uint64_t S_bytes) const {
  NcclPrediction p;
  const double S = static_cast<double>(S_bytes), wire = wire_of(op, n, S);
  if (const auto it = cal_.choices.find(n); it != cal_.choices.end())
    if (const NcclChoice* c = find_choice(it->second, op, S_bytes, n)) {
      p.algo = c->algo;
      p.proto = c->proto;
      p.channels = c->channels;
    }
  if (!ring_op(op)) p.algo = "p2p";

  if (const NcclCurve* own = cal_.find(op, n)) {
    p.role = "calibration";
    bool ext = false;
    std::vector<double> w;
    for (double x : own->bytes) w.push_back(wire_of(op, n, x));
    p.gpu_ns = interp(w, own->gpu_ns, wire, &ext);
    const double as_timed = interp(w, own->span_ns, wire, &ext);  // nccl-tests' time as timed
    p.extrapolated = ext;
    p.basis = fmt::format("{} timed at {} ranks", op, n);
    p.host_ns = host_ns(n, calls_of(op, n));
    p.time_ns = as_timed;
    // An iteration takes at most its launches plus its GPU work (no overlap at all). A
    // span far above that was disturbed while it was timed (the process descheduled,
    // another job on the host or GPU): on 4 x H100 a 2-rank allreduce calibration read
    // 51 us at 64 KiB and 83 us at 1 MiB, falling and rising with size, where its own
    // GPU time was 10-17 us and NCCL took 13-14 us right after. Such a cell is priced as
    // the untimed ones are, from its GPU time and the launch cost, and says so.
    if (as_timed > kDisturbedSpanFactor * (p.host_ns + p.gpu_ns)) {
      p.time_ns = std::cbrt(std::pow(p.gpu_ns, 3) + std::pow(p.host_ns, 3));
      p.basis += fmt::format("; its timed span ({:.1f} us) is over {}x its launches plus its GPU time ({:.1f} us): "
                             "disturbed while timed, so priced from its GPU time and the launch cost",
                             as_timed / 1e3, kDisturbedSpanFactor, (p.host_ns + p.gpu_ns) / 1e3);
    }
    return p;
  }
  p.role = "predicted";
  // The same op at another rank count: 2 where it was timed there (every ring step of 2
  // ranks is an edge step, the premise of ring_steps_from), else the nearest. Not simply
  // the nearest: on 4 x H100, NCCL's allgather and alltoall of 3 ranks ran at 191 and 163
  // GB/s busbw against 271 / 313 at 2 and 326 / 338 at 4 ranks, so 3 ranks put the
  // 4-rank allgather 28 % and alltoall 22-144 % off, where 2 ranks put them within 3-9 %.
  const NcclCurve* same = cal_.find(op, 2);
  if (n == 2 || !same)
    for (const auto& c : cal_.curves)
      if (c.op == op && c.ranks != n && (!same || same->ranks == n || std::abs(c.ranks - n) < std::abs(same->ranks - n)))
        same = &c;
  const std::string mate = ring_op(op) ? "allreduce" : "sendrecv";
  const NcclCurve* pair_sendrecv = n == 2 && op == "alltoall" ? cal_.find("sendrecv", 2) : nullptr;
  if (pair_sendrecv) {
    // Alltoall of 2 ranks is one sendrecv of S/2 each way, the same peer, the same p2p
    // channels (plus the copy of a rank's own half, which runs beside it). Priced so
    // where alltoall itself was not timed at 2 ranks (predict --hold-out 2): on six 4-GPU
    // leases (H100, H200) its GPU time came within 0.8-3.2 % geomean (worst 6.7-12.8 %)
    // at 64 KiB - 1 GiB, where alltoall of 3 ranks (3 peers sharing each GPU's links)
    // put it up to 148 % off.
    bool ext = false;
    p.gpu_ns = gpu_from_curve(*pair_sendrecv, S / 2, &ext);
    p.extrapolated = ext;
    p.basis = "sendrecv timed at 2 ranks at S/2 (alltoall of 2 ranks is one sendrecv of S/2 each way)";
  } else if ((op == "allgather" || op == "reducescatter") && (!same || same->ranks != 2) &&
             allreduce_less_steps(op, n, S, &p)) {
    // priced (the op not timed at 2 ranks, where every ring step is an edge step)
  } else if (same) {
    bool ext = false;
    p.gpu_ns = gpu_from_curve(*same, wire, &ext);
    p.extrapolated = ext;
    p.basis = fmt::format("{} timed at {} ranks, at the same bytes per rank on the wire", op, same->ranks);
    // Ring ops whose steps carry S/n each; allreduce is the yardstick (and not timed at n here).
    if (collective_row(op_of(op)).schedule == NcclSchedule::ring_chunks && op != "allreduce")
      ring_steps_from(*same, n, S, &p);
  } else if (const NcclCurve* m = cal_.find(mate, n)) {
    bool ext = false;
    p.gpu_ns = gpu_from_curve(*m, wire, &ext);
    const double step = default_step_ns(p.proto.empty() ? "SIMPLE" : p.proto);
    p.gpu_ns = std::max(p.gpu_ns * 0.5, p.gpu_ns + (steps_of(op, n) - steps_of(mate, n)) * step);
    p.extrapolated = ext;
    p.defaults = true;  // the per-step latency is NCCL's default
    p.basis = fmt::format("{} at {} ranks at the same bytes per rank, {} steps apart at NCCL's default per-step latency",
                          mate, n, steps_of(op, n) - steps_of(mate, n));
  } else {
    p.defaults = true;
    p.gpu_ns = kDefaultLaunchNs + steps_of(op, n) * kDefaultStepNs + wire / kDefaultBusBytesPerS * 1e9;
    p.basis = "NCCL's default model (no calibration at this rank count): 8 us + 0.6 us per step + bytes at 360 GB/s";
  }
  bool measured = false;
  p.host_ns = host_ns(n, calls_of(op, n), &measured);
  p.time_ns = std::cbrt(std::pow(p.gpu_ns, 3) + std::pow(p.host_ns, 3));  // overlapped, see the host fit
  return p;
}

std::vector<std::string> NcclModel::calibrated_by() const {
  std::vector<std::string> out;
  for (const auto& c : cal_.curves)
    out.push_back(fmt::format("{} at {} ranks: {} sizes, {} - {}", c.op, c.ranks, c.bytes.size(),
                              format_size(static_cast<std::uint64_t>(c.bytes.front())),
                              format_size(static_cast<std::uint64_t>(c.bytes.back()))));
  for (const auto& c : cal_.host_curves)
    out.push_back(fmt::format("{} at {} ranks, {} - {}: the host's launch cost only (not priced as GPU time)", c.op,
                              c.ranks, format_size(static_cast<std::uint64_t>(c.bytes.front())),
                              format_size(static_cast<std::uint64_t>(c.bytes.back()))));
  for (const auto& [n, t] : cal_.choices)
    out.push_back(fmt::format("NCCL's choices at {} ranks: {} sizes x ops from its TUNING log", n, t.choices.size()));
  return out;
}

std::vector<std::string> NcclModel::defaults_used() const {
  std::vector<std::string> out;
  if (!cal_.present)
    out.push_back("no NCCL calibration in the campaign (made before it existed, or --nccl-calibration off): every "
                  "figure is NCCL's default model (8 us launch, 0.6 us per step, 360 GB/s per rank), not a measurement; "
                  "profile again to calibrate");
  out.push_back("per-step latency for the steps an op differs from its class mate: NCCL's NVLink ring defaults "
                "(LL 0.6 us, LL128 1.1 us, Simple 2.5 us), used only where the op itself was not timed");
  return out;
}

}  // namespace p2pscope::simulate
