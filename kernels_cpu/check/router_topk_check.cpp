#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/params.h"
#include "core/rng.h"
#include "ops/router_topk.h"

namespace moe {

namespace router {

bool selection_consistent(std::span<const int32_t> chosen, std::span<const int32_t> candidates,
                          std::span<const double> v, std::span<const double> bound) {
  std::vector<char> is_candidate(v.size(), 0), is_chosen(v.size(), 0);
  for (int32_t e : candidates) is_candidate[e] = 1;
  double lowest_chosen = INFINITY;
  for (int32_t e : chosen) {
    if (e < 0 || size_t(e) >= v.size() || !is_candidate[e] || is_chosen[e]) return false;  // invalid or repeated
    is_chosen[e] = 1;
    lowest_chosen = std::min(lowest_chosen, v[e] + bound[e]);
  }
  double highest_other = -INFINITY;
  for (int32_t e : candidates) {
    if (!is_chosen[e]) highest_other = std::max(highest_other, v[e] - bound[e]);
  }
  return lowest_chosen >= highest_other;
}

}  // namespace router

namespace {

enum class Data { Gaussian, Ties, NearTies, NonFinite };

const char* data_name(Data d) {
  switch (d) {
    case Data::Gaussian: return "gaussian";
    case Data::Ties: return "exact ties";
    case Data::NearTies: return "near ties";
    case Data::NonFinite: return "NaN/inf tokens";
  }
  return "";
}

// Router logits ~ N(0, 2). Ties: the same on a grid of 1/4, so equal logits (hence equal
// probabilities) are common at the K-th place. NearTies: the grid plus N(0, 1e-6) noise, a few
// ulp: probabilities that differ by about the tiers' error bound. NonFinite: Gaussian, token 1
// has a NaN logit, token 2 a +inf logit, token 3 all -inf, token 0 a few -inf (still valid).
std::vector<float> make_logits(const RouterTopkParams& p, Data d, Rng rng) {
  std::vector<float> x = rng.fork(1).normal_vec(p.tokens * p.experts, 2.0);
  Rng noise = rng.fork(2);
  const float inf = std::numeric_limits<float>::infinity();
  for (auto& v : x) {
    if (d == Data::Ties || d == Data::NearTies) v = std::round(v * 4.0f) / 4.0f;
    if (d == Data::NearTies) v += float(1e-6 * noise.normal());
  }
  if (d == Data::NonFinite) {
    float* row = x.data();
    for (int64_t e = 0; e + 1 < p.experts; e += 3) row[e] = -inf;
    if (p.tokens > 1) x[1 * p.experts + p.experts / 2] = std::numeric_limits<float>::quiet_NaN();
    if (p.tokens > 2) x[2 * p.experts] = inf;
    if (p.tokens > 3) std::fill(x.begin() + 3 * p.experts, x.begin() + 4 * p.experts, -inf);
  }
  return x;
}

// The truth's probabilities of every expert: the op itself in f64 with K = E, no
// renormalisation (rounded to f32: within u p of the exact p, accounted for below).
std::vector<double> truth_probabilities(const RouterTopkParams& p, const std::vector<float>& logits) {
  const RouterTopkParams all{p.tokens, p.experts, p.experts, false};
  std::vector<int32_t> idx(p.tokens * p.experts);
  std::vector<float> w(p.tokens * p.experts);
  router_topk_ref<double>(all, logits, idx, w);
  std::vector<double> prob(p.tokens * p.experts, std::numeric_limits<double>::quiet_NaN());
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t j = 0; j < p.experts; ++j) {
      const int32_t e = idx[t * p.experts + j];
      if (e >= 0) prob[t * p.experts + e] = w[t * p.experts + j];
    }
  }
  return prob;
}

// Compares one tier with the truth, token by token.
//
// Error bound of a tier's probability p_e (both f32 tiers, first order in u): the argument
// d_e = x_e - m rounds once (|error| <= u |d_e|, a factor exp(u |d_e|) ~ 1 + u |d_e| on e_e);
// glibc expf is within 1 ulp (<= 2u relative); so e_e carries delta_e = u |d_e| + 2u. The sum of
// the E exponentials (any order) carries gamma_E plus the weighted mean sum_j p_j delta_j of its
// terms' errors; the reciprocal u: eta = sum_j p_j delta_j + gamma_E + u, common to every p.
// p_e = e_e * inv adds u: a_e = delta_e + u. So |p^ - p| <= p (a_e + eta), plus u p because
// the truth's probabilities reach the check rounded to f32, plus the smallest normal for
// probabilities that underflow. -inf logits give exactly 0 in every tier (delta 0).
// Renormalised weights: the common factor (1 + eta) cancels, w_e = p_e / sum_S p_j has relative
// error a_e + max_S a_j, plus gamma_K for the chosen sum, 2u for the reciprocal and product,
// and u for the truth's own rounding to f32. Where the tier chose a different set (a
// legitimate near-tie swap) the expected weight is recomputed from the f32-rounded truth
// probabilities of the tier's set: 3u more (two roundings in the ratio, one to f32).
void compare_tier(TierReport& rep, const RouterTopkParams& p, const std::vector<float>& logits,
                  const std::vector<double>& prob, const std::vector<int32_t>& t_idx, const std::vector<float>& t_w,
                  const std::vector<int32_t>& idx, const std::vector<float>& w) {
  const int64_t E = p.experts, K = p.k;
  const double u = kU32;
  std::vector<int32_t> exp_idx(p.tokens * K);
  std::vector<float> exp_w(p.tokens * K);
  std::vector<double> bound(p.tokens * K, 0.0);
  std::vector<double> a(E), beta(E);
  std::vector<int32_t> all(E);
  std::iota(all.begin(), all.end(), 0);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int32_t* ti = t_idx.data() + t * K;
    const float* tw = t_w.data() + t * K;
    const int32_t* fi = idx.data() + t * K;
    int32_t* ei = exp_idx.data() + t * K;
    float* ew = exp_w.data() + t * K;
    double* eb = bound.data() + t * K;
    std::copy(ti, ti + K, ei), std::copy(tw, tw + K, ew);  // default: the truth's row, exactly
    if (ti[0] < 0) continue;  // the truth's NaN row: the tier must reproduce it
    const float* x = logits.data() + t * E;
    const double* P = prob.data() + t * E;
    const double m = *std::max_element(x, x + E);
    double eta = gamma_n(double(E)) + u;
    for (int64_t e = 0; e < E; ++e) {
      const double d = double(x[e]) - m;
      const double delta = std::isinf(d) ? 0.0 : u * std::fabs(d) + 2 * u;
      a[e] = delta + u;
      eta += P[e] * delta;
    }
    for (int64_t e = 0; e < E; ++e) beta[e] = P[e] * (a[e] + eta + u) + kMinNormal32;
    const std::span<const int32_t> chosen(fi, K);
    if (!router::selection_consistent(chosen, all, std::span<const double>(P, E), beta)) continue;  // idx differ
    std::vector<int32_t> s_truth(ti, ti + K), s_tier(fi, fi + K);
    std::sort(s_truth.begin(), s_truth.end()), std::sort(s_tier.begin(), s_tier.end());
    const bool same_set = s_truth == s_tier;
    double a_max = 0, chosen_sum = 0;
    for (int32_t e : chosen) a_max = std::max(a_max, a[e]), chosen_sum += P[e];
    for (int64_t j = 0; j < K; ++j) {
      const int32_t e = fi[j];
      double rel = p.renormalize ? a[e] + a_max + gamma_n(double(K)) + 3 * u : a[e] + eta + u;
      ei[j] = e;
      if (same_set) {
        ew[j] = tw[std::find(ti, ti + K, e) - ti];
      } else {
        ew[j] = float(p.renormalize ? P[e] / chosen_sum : P[e]);
        if (p.renormalize) rel += 3 * u;
      }
      eb[j] = std::fabs(double(ew[j])) * rel + kMinNormal32;
    }
  }
  rep.add_exact("idx", exp_idx, idx);
  rep.add("w", exp_w, w, bound);
}

CheckResult run_case(const std::string& label, const RouterTopkParams& p, Data d, uint64_t seed) {
  const std::vector<float> logits = make_logits(p, d, Rng(seed));
  const size_t n = p.tokens * p.k;
  std::vector<int32_t> truth_i(n), r32_i(n), fast_i(n);
  std::vector<float> truth_w(n), r32_w(n), fast_w(n);
  CheckResult res{"router_topk", label + ", " + data_name(d), params_to_string(p), seed};
  res.truth_seconds = time_call([&] { router_topk_ref<double>(p, logits, truth_i, truth_w); });
  res.ref32.seconds = time_call([&] { router_topk_ref<float>(p, logits, r32_i, r32_w); });
  res.fast.seconds = time_call([&] { router_topk_fast(p, logits, fast_i, fast_w); });
  const std::vector<double> prob = truth_probabilities(p, logits);
  compare_tier(res.ref32, p, logits, prob, truth_i, truth_w, r32_i, r32_w);
  compare_tier(res.fast, p, logits, prob, truth_i, truth_w, fast_i, fast_w);
  return res;
}

}  // namespace

std::vector<CheckResult> router_topk_check(uint64_t seed, CheckScope scope) {
  std::vector<CheckResult> out;
  if (scope_has_remainders(scope)) {
    for (int64_t E : {1, 2, 3, 7, 31, 33, 64, 67}) {
      std::vector<int64_t> ks{1, 2, E / 2, E - 1, E};
      std::sort(ks.begin(), ks.end());
      ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
      for (int64_t K : ks) {
        if (K < 1 || K > E) continue;
        const std::string label = "remainder E " + std::to_string(E) + " K " + std::to_string(K);
        const uint64_t s = seed + 100 * E + K;
        out.push_back(run_case(label, {5, E, K, true}, Data::Gaussian, s));
        out.push_back(run_case(label, {5, E, K, K % 2 == 0}, Data::Ties, s + 1));
        out.push_back(run_case(label, {5, E, K, true}, Data::NearTies, s + 2));
      }
    }
    out.push_back(run_case("remainder E 33 K 5", {6, 33, 5, true}, Data::NonFinite, seed + 7));
  }
  if (scope_has_real(scope)) {
    // Qwen3.5-397B-A17B: 512 experts, top-10; Qwen3.6-35B-A3B: 256 experts, top-8
    // (docs/ops/models.md "Shape constants"); the engines' K = 4 (docs/ops/moe.md "Which K"). Decode
    // (1 token) and a 64-token prefill.
    struct Shape {
      const char* label;
      int64_t E, K;
    };
    for (const Shape& s : {Shape{"A17B", 512, 10}, Shape{"A17B engine K=4", 512, 4}, Shape{"A3B", 256, 8},
                           Shape{"A3B engine K=4", 256, 4}}) {
      const uint64_t s0 = seed + 10 * s.E + s.K;
      out.push_back(run_case(std::string(s.label) + " decode", {1, s.E, s.K, true}, Data::Gaussian, s0));
      out.push_back(run_case(std::string(s.label) + " 64 tokens", {64, s.E, s.K, true}, Data::Gaussian, s0 + 1));
      out.push_back(run_case(std::string(s.label) + " 64 tokens", {64, s.E, s.K, true}, Data::Ties, s0 + 2));
      out.push_back(run_case(std::string(s.label) + " 64 tokens", {64, s.E, s.K, true}, Data::NearTies, s0 + 3));
    }
    out.push_back(run_case("A17B 8 tokens", {8, 512, 10, true}, Data::NonFinite, seed + 9));
    out.push_back(run_case("A3B 64 tokens", {64, 256, 8, false}, Data::Gaussian, seed + 11));
  }
  return out;
}

}  // namespace moe
