// Per-config statistics (with outlier removal) and the per-link models: latency
// floor, asymptotic bandwidth, n-half, and robust alpha-beta fits.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "analyze/campaign.hpp"
#include "p2pscope/profile.hpp"

namespace p2pscope::analyze {

std::vector<bool> outlier_mask(const std::vector<double>& samples, OutlierRule rule) {
  std::vector<bool> out(samples.size(), false);
  if (rule == OutlierRule::none || samples.size() < 4) return out;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  double lo = 0, hi = 0;
  if (rule == OutlierRule::tukey) {
    const double q1 = percentile_sorted(sorted, 0.25), q3 = percentile_sorted(sorted, 0.75);
    lo = q1 - 1.5 * (q3 - q1);
    hi = q3 + 1.5 * (q3 - q1);
  } else {
    const double med = percentile_sorted(sorted, 0.5);
    std::vector<double> dev;
    dev.reserve(sorted.size());
    for (double x : sorted) dev.push_back(std::fabs(x - med));
    std::sort(dev.begin(), dev.end());
    double mad = 1.4826 * percentile_sorted(dev, 0.5);
    if (mad <= 0) {  // over half the samples equal (timer granularity): scale from the mean deviation instead
      double sum = 0;
      for (double x : dev) sum += x;
      mad = 1.2533 * sum / static_cast<double>(dev.size());
    }
    lo = med - 3.5 * mad;
    hi = med + 3.5 * mad;
  }
  std::size_t removed = 0;
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (samples[i] < lo || samples[i] > hi) {
      out[i] = true;
      ++removed;
    }
  // Fences collapse when most samples are equal (timer granularity): keep everything.
  if (removed * 2 > samples.size()) std::fill(out.begin(), out.end(), false);
  return out;
}

MedianInterval median_interval(std::vector<double> v) {
  MedianInterval r;
  const std::size_t n = v.size();
  if (n == 0) return r;
  std::sort(v.begin(), v.end());
  // Largest j (1-based) whose interval [x(j), x(n+1-j)] still covers the median with >= 95 %:
  // coverage(j) = 1 - 2 P(B <= j-1), B ~ Binomial(n, 1/2), from the pmf in logs (n of any size).
  const double nd = static_cast<double>(n);
  auto pmf = [&](double k) {
    return std::exp(std::lgamma(nd + 1) - std::lgamma(k + 1) - std::lgamma(nd - k + 1) - nd * std::log(2.0));
  };
  double cdf = pmf(0), coverage = 1 - 2 * cdf;  // j = 1: [min, max]
  std::size_t j = 1;
  for (std::size_t m = 1; 2 * m + 1 <= n; ++m) {  // j = m + 1 needs P(B <= m)
    cdf += pmf(static_cast<double>(m));
    if (1 - 2 * cdf < 0.95) break;
    j = m + 1;
    coverage = 1 - 2 * cdf;
  }
  r.lo_ns = v[j - 1];
  r.hi_ns = v[n - j];
  r.level = n == 1 ? 0 : coverage;
  return r;
}

double t975(int df) {
  static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                             2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return NAN;
  if (df <= 30) return t[df - 1];
  return 1.960 + 2.4 / df;  // within 0.002 of the quantile beyond 30
}

MedianInterval widen_by_processes(MedianInterval w, double median_ns, const std::vector<double>& m) {
  w.within_lo_ns = w.lo_ns;
  w.within_hi_ns = w.hi_ns;
  w.process_medians_ns = m;
  w.processes = static_cast<int>(m.size());
  if (m.size() < 2) return w;
  const double k = static_cast<double>(m.size());
  double mean = 0, ss = 0;
  for (double x : m) mean += x / k;
  for (double x : m) ss += (x - mean) * (x - mean);
  w.between_ns = t975(w.processes - 1) * std::sqrt(ss / (k - 1)) / std::sqrt(k);
  const double below = median_ns - w.lo_ns, above = w.hi_ns - median_ns;
  w.lo_ns = median_ns - std::hypot(below, w.between_ns);
  w.hi_ns = median_ns + std::hypot(above, w.between_ns);
  return w;
}

int campaign_processes(const Campaign& c, int* reps) {
  *reps = 0;
  int k = 1;
  if (!c.metadata.is_object()) return k;
  const auto settings = c.metadata.value("settings", nlohmann::json::object());
  if (settings.is_object() && settings.contains("processes") && settings["processes"].is_number_integer())
    k = std::max(1, settings["processes"].get<int>());
  const auto plan = c.metadata.value("plan", nlohmann::json::object());
  if (plan.is_object() && plan.contains("reps") && plan["reps"].is_number_integer()) *reps = plan["reps"].get<int>();
  return *reps >= k ? k : 1;  // a split the plan cannot hold: read as one process
}

std::vector<ConfigSummary> summarize_configs(const Campaign& c, OutlierRule rule) {
  using Key = std::tuple<std::string, int, int, std::uint64_t>;
  std::map<Key, ConfigSummary> groups;
  std::map<Key, std::vector<double>> samples;
  std::map<Key, std::vector<int>> process;  // of each sample: which share of the repetitions measured it
  int reps = 0;
  const int kp = campaign_processes(c, &reps);
  for (const auto& op : c.ops) {
    const Key k{op.backend, op.src, op.dst, op.size_bytes};
    auto& g = groups[k];
    if (g.n_raw == 0) {
      g.config_id = op.config_id;
      g.backend = op.backend;
      g.src = op.src;
      g.dst = op.dst;
      g.size_bytes = op.size_bytes;
      g.device_timed = true;
    }
    g.device_timed = g.device_timed && op.device_timed;
    ++g.n_raw;
    samples[k].push_back(op.duration_ns);
    process[k].push_back(kp > 1 ? profile::process_of_repetition(op.repetition, reps, kp) : 0);
  }
  std::vector<ConfigSummary> out;
  out.reserve(groups.size());
  int next_id = 0;
  for (auto& [k, g] : groups) next_id = std::max(next_id, g.config_id + 1);
  for (auto& [k, g] : groups) {
    if (g.config_id < 0) g.config_id = next_id++;  // a log without config_id
    const auto& xs = samples[k];
    const auto mask = outlier_mask(xs, rule);
    std::vector<std::vector<double>> per(static_cast<std::size_t>(kp));
    for (std::size_t i = 0; i < xs.size(); ++i)
      if (!mask[i]) {
        g.kept.push_back(xs[i]);
        per[static_cast<std::size_t>(process[k][i])].push_back(xs[i]);
      }
    g.outliers = xs.size() - g.kept.size();
    g.stats = compute_stats(g.kept);
    g.median_ci = median_interval(g.kept);
    if (kp > 1) {
      std::vector<double> medians;  // of the processes that measured this config (all, unless incomplete)
      for (auto& v : per)
        if (!v.empty()) medians.push_back(compute_stats(v).median);
      g.median_ci = widen_by_processes(g.median_ci, g.stats.median, medians);
    }
    g.bytes_per_s = g.stats.median > 0 ? static_cast<double>(g.size_bytes) / g.stats.median * 1e9 : 0;
    out.push_back(std::move(g));
  }
  return out;
}

namespace {

// Weighted least squares of a*u + b*v = 1 with u = 1/t, v = n/t: the residual is the
// relative error of t = a + b*n. a >= 0 and b > 0 are enforced by refitting one alone.
bool solve_relative(const std::vector<double>& n, const std::vector<double>& t, const std::vector<double>& w,
                    double* a, double* b) {
  double suu = 0, suv = 0, svv = 0, su = 0, sv = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const double u = 1 / t[i], v = n[i] / t[i];
    suu += w[i] * u * u;
    suv += w[i] * u * v;
    svv += w[i] * v * v;
    su += w[i] * u;
    sv += w[i] * v;
  }
  const double det = suu * svv - suv * suv;
  if (det > 1e-12 * suu * svv) {
    *a = (su * svv - sv * suv) / det;
    *b = (sv * suu - su * suv) / det;
  } else {
    *a = -1;
    *b = -1;
  }
  if (*a < 0 && svv > 0) {
    *a = 0;
    *b = sv / svv;
  }
  if (*b <= 0 && suu > 0) {
    *b = 1e-12;  // effectively infinite bandwidth: only a latency is visible
    *a = su / suu;
  }
  return *b > 0 && *a >= 0 && std::isfinite(*a) && std::isfinite(*b);
}

void score(AlphaBeta* f, const std::vector<double>& n, const std::vector<double>& t) {
  double mean_log = 0;
  for (double x : t) mean_log += std::log(x);
  mean_log /= static_cast<double>(t.size());
  double ss_res = 0, ss_tot = 0;
  f->worst_rel_error = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const double p = f->predict_ns(n[i]);
    f->worst_rel_error = std::max(f->worst_rel_error, std::fabs(p - t[i]) / t[i]);
    const double r = std::log(t[i]) - std::log(std::max(p, 1e-12));
    ss_res += r * r;
    ss_tot += (std::log(t[i]) - mean_log) * (std::log(t[i]) - mean_log);
  }
  f->r2_log = ss_tot > 0 ? 1 - ss_res / ss_tot : (ss_res < 1e-18 ? 1 : 0);
}

}  // namespace

AlphaBeta fit_alpha_beta(const std::vector<double>& sizes, const std::vector<double>& times_ns) {
  AlphaBeta f;
  if (sizes.size() < 2 || sizes.size() != times_ns.size()) return f;
  std::vector<double> w(sizes.size(), 1.0);
  double a = 0, b = 0;
  if (!solve_relative(sizes, times_ns, w, &a, &b)) return f;
  // Tukey bisquare on relative residuals: a size hit by a protocol switch or noise
  // loses its pull instead of bending the whole line.
  for (int iter = 0; iter < 20 && sizes.size() >= 4; ++iter) {
    std::vector<double> r(sizes.size()), absr(sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      r[i] = (a + b * sizes[i] - times_ns[i]) / times_ns[i];
      absr[i] = std::fabs(r[i]);
    }
    std::sort(absr.begin(), absr.end());
    const double s = 1.4826 * percentile_sorted(absr, 0.5);
    if (s < 1e-6) break;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const double u = r[i] / (4.685 * s);
      w[i] = std::fabs(u) < 1 ? (1 - u * u) * (1 - u * u) : 0;
    }
    double na = 0, nb = 0;
    if (!solve_relative(sizes, times_ns, w, &na, &nb)) break;
    const bool done = std::fabs(na - a) <= 1e-9 * std::max(1.0, a) && std::fabs(nb - b) <= 1e-9 * b;
    a = na;
    b = nb;
    if (done) break;
  }
  f.ok = true;
  f.alpha_ns = a;
  f.beta_bytes_per_s = 1e9 / b;
  score(&f, sizes, times_ns);
  return f;
}

TwoRegime fit_two_regime(const std::vector<double>& sizes, const std::vector<double>& times_ns) {
  TwoRegime best;
  const std::size_t m = sizes.size();
  if (m < 6) return best;
  double best_sse = INFINITY;
  for (std::size_t k = 3; k + 3 <= m; ++k) {
    const std::vector<double> n1(sizes.begin(), sizes.begin() + static_cast<long>(k));
    const std::vector<double> t1(times_ns.begin(), times_ns.begin() + static_cast<long>(k));
    const std::vector<double> n2(sizes.begin() + static_cast<long>(k), sizes.end());
    const std::vector<double> t2(times_ns.begin() + static_cast<long>(k), times_ns.end());
    const AlphaBeta lo = fit_alpha_beta(n1, t1), hi = fit_alpha_beta(n2, t2);
    if (!lo.ok || !hi.ok) continue;
    double sse = 0, worst = 0;
    for (std::size_t i = 0; i < m; ++i) {
      const double p = (i < k ? lo : hi).predict_ns(sizes[i]);
      const double r = (p - times_ns[i]) / times_ns[i];
      sse += r * r;
      worst = std::max(worst, std::fabs(r));
    }
    if (sse < best_sse) {
      best_sse = sse;
      best = {true, sizes[k], lo, hi, worst};
    }
  }
  return best;
}

ThreeRegime fit_three_regime(const std::vector<double>& sizes, const std::vector<double>& times_ns) {
  ThreeRegime best;
  const std::size_t m = sizes.size();
  if (m < 9 || times_ns.size() != m) return best;
  const auto part = [&](std::size_t a, std::size_t b) {
    return fit_alpha_beta(std::vector<double>(sizes.begin() + static_cast<long>(a), sizes.begin() + static_cast<long>(b)),
                          std::vector<double>(times_ns.begin() + static_cast<long>(a), times_ns.begin() + static_cast<long>(b)));
  };
  double best_worst = INFINITY;
  for (std::size_t j = 3; j + 6 <= m; ++j) {
    const AlphaBeta low = part(0, j);
    if (!low.ok) continue;
    for (std::size_t k = j + 3; k + 3 <= m; ++k) {
      const AlphaBeta mid = part(j, k), high = part(k, m);
      if (!mid.ok || !high.ok) continue;
      ThreeRegime t{true, sizes[j], sizes[k], low, mid, high, 0};
      for (std::size_t i = 0; i < m; ++i)
        t.worst_rel_error = std::max(t.worst_rel_error, std::fabs(t.predict_ns(sizes[i]) - times_ns[i]) / times_ns[i]);
      if (t.worst_rel_error < best_worst) {
        best_worst = t.worst_rel_error;
        best = t;
      }
    }
  }
  return best;
}

double LinkModel::predict_ns(double n) const {
  if (model == "three_regime" && three.ok) return three.predict_ns(n);
  if (use_two_regime) return (n < two.breakpoint_bytes ? two.below : two.above).predict_ns(n);
  return fit.ok ? fit.predict_ns(n) : NAN;
}

void finish_link_model(LinkModel& m) {
  if (m.sizes.empty()) return;
  m.smallest_size = m.sizes.front();
  m.latency_floor_ns = m.median_ns.front();
  const std::size_t n = m.sizes.size();
  // Median over the three largest sizes: one noisy size neither lifts nor sinks it
  // (the maximum would be biased upwards by the noise).
  std::vector<double> top(m.bytes_per_s.end() - static_cast<long>(std::min<std::size_t>(n, 3)), m.bytes_per_s.end());
  std::sort(top.begin(), top.end());
  m.asymptotic_bytes_per_s = percentile_sorted(top, 0.5);
  const double half = m.asymptotic_bytes_per_s / 2;
  for (std::size_t i = 0; i < n; ++i) {
    if (m.bytes_per_s[i] < half) continue;
    if (i == 0) {
      m.n_half_bytes = m.sizes[0];
    } else {  // log-log interpolation between the sizes around the crossing
      const double x0 = std::log(m.sizes[i - 1]), x1 = std::log(m.sizes[i]);
      const double y0 = std::log(m.bytes_per_s[i - 1]), y1 = std::log(m.bytes_per_s[i]);
      const double fr = y1 > y0 ? (std::log(half) - y0) / (y1 - y0) : 1;
      m.n_half_bytes = std::exp(x0 + fr * (x1 - x0));
    }
    break;
  }
  m.fit = fit_alpha_beta(m.sizes, m.median_ns);
  m.two = fit_two_regime(m.sizes, m.median_ns);
  m.three = fit_three_regime(m.sizes, m.median_ns);
  // The simplest model that reproduces every size within the tolerance; where none
  // does, the one that comes closest (a regime more must buy a point of error).
  const std::pair<const char*, double> candidates[] = {
      {"alpha_beta", m.fit.ok ? m.fit.worst_rel_error : INFINITY},
      {"two_regime", m.fit.ok && m.two.ok ? m.two.worst_rel_error : INFINITY},
      {"three_regime", m.fit.ok && m.three.ok ? m.three.worst_rel_error : INFINITY}};
  m.model = "alpha_beta";
  double closest = candidates[0].second;
  for (const auto& [name, worst] : candidates) {
    if (closest <= kModelTolerance) break;
    if (worst < closest - 0.01) {
      m.model = name;
      closest = worst;
    }
  }
  m.use_two_regime = m.model == "two_regime";
}

std::vector<LinkModel> build_link_models(const Campaign& c, const std::vector<ConfigSummary>& s) {
  std::map<std::tuple<std::string, int, int>, LinkModel> links;
  for (const auto& cs : s) {  // summaries are sorted by backend, src, dst, size
    auto& m = links[{cs.backend, cs.src, cs.dst}];
    if (m.sizes.empty()) {
      m.backend = cs.backend;
      m.src = cs.src;
      m.dst = cs.dst;
      m.link_class = link_class(c, cs.backend, cs.src, cs.dst);
    }
    if (cs.stats.n == 0) continue;
    m.sizes.push_back(static_cast<double>(cs.size_bytes));
    m.median_ns.push_back(cs.stats.median);
    m.bytes_per_s.push_back(cs.bytes_per_s);
  }
  std::vector<LinkModel> out;
  for (auto& [k, m] : links) {
    if (m.sizes.empty()) continue;
    finish_link_model(m);
    out.push_back(std::move(m));
  }
  return out;
}

namespace {
nlohmann::json ab_json(const AlphaBeta& f) {
  if (!f.ok) return nullptr;
  return {{"alpha_ns", f.alpha_ns}, {"beta_bytes_per_s", f.beta_bytes_per_s}, {"r2_log", f.r2_log},
          {"worst_rel_error", f.worst_rel_error}};
}
}  // namespace

nlohmann::json link_model_json(const LinkModel& m) {
  nlohmann::json j = {{"backend", m.backend},
                      {"src", m.src},
                      {"dst", m.dst},
                      {"link_class", m.link_class},
                      {"latency_floor_ns", m.latency_floor_ns},
                      {"latency_floor_size_bytes", m.smallest_size},
                      {"asymptotic_bytes_per_s", m.asymptotic_bytes_per_s},
                      {"n_half_bytes", std::isnan(m.n_half_bytes) ? nlohmann::json(nullptr) : nlohmann::json(m.n_half_bytes)},
                      {"alpha_beta", ab_json(m.fit)},
                      {"model", m.model},
                      {"model_rule", fmt::format("the simplest of alpha_beta, two_regime, three_regime whose worst error over "
                                                 "the sizes is <= {:.0f} %; where none is, the closest", kModelTolerance * 100)}};
  if (m.three.ok)
    j["three_regime"] = {{"mid_from_bytes", m.three.mid_from_bytes}, {"high_from_bytes", m.three.high_from_bytes},
                         {"low", ab_json(m.three.low)}, {"mid", ab_json(m.three.mid)}, {"high", ab_json(m.three.high)},
                         {"worst_rel_error", m.three.worst_rel_error}, {"recommended", m.model == "three_regime"}};
  else
    j["three_regime"] = nullptr;
  if (m.two.ok)
    j["two_regime"] = {{"breakpoint_bytes", m.two.breakpoint_bytes}, {"below", ab_json(m.two.below)},
                       {"above", ab_json(m.two.above)}, {"worst_rel_error", m.two.worst_rel_error},
                       {"recommended", m.use_two_regime}};
  else
    j["two_regime"] = nullptr;
  j["points"] = nlohmann::json::array();
  for (std::size_t i = 0; i < m.sizes.size(); ++i)
    j["points"].push_back({{"size_bytes", m.sizes[i]}, {"median_ns", m.median_ns[i]}, {"bytes_per_s", m.bytes_per_s[i]},
                           {"model_ns", m.fit.ok ? nlohmann::json(m.predict_ns(m.sizes[i])) : nlohmann::json(nullptr)},
                           {"rel_error", m.fit.ok ? nlohmann::json(m.residual(i)) : nlohmann::json(nullptr)}});
  return j;
}

}  // namespace p2pscope::analyze
